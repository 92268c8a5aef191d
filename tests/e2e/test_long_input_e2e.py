"""End to end: an input longer than the model takes, on three real servers, through `embedswap run --steps 01,02,03`:
the kit's legacy server (sentence-transformers: cuts at the model's 256 tokens), vLLM as it starts by default
(refuses an input over its max_model_len) and vLLM with the pooler option that splits a long input into pieces of
max_model_len and averages them (``enable_chunked_processing``, ``max_embed_len``). All three answer the same varied
document of about 1,600 tokens; the kit names each one's handling, with the limit and the cosine of the hypothesis
that reproduces its answer from its own answers to the pieces, and the report and the post say the difference."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embedswap.paths import engine_python
from embedswap.analysis.upgrade import load_summary
from ports import free_ports
from realkit import EMBEDSWAP, make_experiment, pooled_target, wait_no_processes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500), pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start
CHUNKED = {"enable_chunked_processing": True, "max_embed_len": 8192}


def _vllm(port: int, *args: str) -> dict[str, Any]:
    return {"kind": "vllm", "port": port, "dtype": "float32", "startup_timeout_s": 420, "capture": ["probes"],
            "extra_args": ["--enforce-eager", *args]}


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("long-input")
    ports = free_ports(2)
    candidates = {"vllm": _vllm(ports[0]),
                  "vllm-chunked": _vllm(ports[1], "--pooler-config", json.dumps(CHUNKED))}
    # the legacy side is the worker's shared legacy server (kind external), asked for after the engine check above;
    # its answer to the long document (cut at 256 tokens) is the server's, whoever started it
    legacy = pooled_target(request.getfixturevalue("legacy_minilm"), ["probes"])
    folder = make_experiment(root, "long-input", legacy, candidates,
                             probes=["plain", "over_long_input", "same_text_twice"])
    started = time.monotonic()
    run = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02,03"], capture_output=True, text=True,
                         timeout=1400, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert wait_no_processes(ports) == []  # the shared legacy server runs on: its fixture stops it
    attempt = next((folder / "attempts").iterdir())
    assert (attempt / "summary.json").exists(), run.stdout[-3000:] + run.stderr[-3000:]
    print(f"embedswap run 01-03 (legacy, vllm, vllm-chunked; probes only) took {time.monotonic() - started:.1f} s")
    reports = root / "reports" / folder.name
    yield {"summary": load_summary(attempt / "summary.json"), "attempt": attempt,
           "report": (reports / "report.en.md").read_text(encoding="utf-8")}


def test_each_server_is_named_by_what_it_did_with_the_long_document(long_run: dict[str, Any]) -> None:
    section = long_run["summary"].long_input
    assert section is not None and section.measured, section
    assert section.document_tokens is not None and section.document_tokens > 3 * 256
    legacy, refusing, chunked = (section.of(n) for n in ("legacy", "vllm", "vllm-chunked"))
    for found in (legacy, refusing, chunked):
        print(found.model_dump_json(exclude_none=True))
    assert legacy is not None and (legacy.code, legacy.limit) == ("truncated", 256), legacy
    assert legacy.cosine is not None and legacy.cosine >= 0.999
    assert refusing is not None and refusing.code == "refused" and refusing.status == 400, refusing
    assert chunked is not None and chunked.code == "chunk_average", chunked
    assert chunked.limit in section.limits and chunked.cosine is not None and chunked.cosine >= 0.999
    # vLLM counts every token of every piece; the legacy server's usage counts what it kept
    assert chunked.prompt_tokens is not None and chunked.prompt_tokens >= section.document_tokens
    # the other reading of its answer does not pass: truncation at the same limit gives another vector
    cut = next(h for h in chunked.hypotheses if h.name == "truncated" and h.limit == chunked.limit)
    assert cut.cosine is not None and cut.cosine < 0.999, chunked.hypotheses
    assert chunked.same_as_legacy is False and refusing.same_as_legacy is False


def test_notebook_03_shows_the_table(long_run: dict[str, Any]) -> None:
    notebook = (long_run["attempt"] / "notebooks" / "03_vector_contract_diff.ipynb").read_text(encoding="utf-8")
    assert "long_input_table" in notebook and "chunk_average @256" in notebook and "refused" in notebook


def test_an_encoder_model_is_never_served_from_a_prefix_cache(long_run: dict[str, Any]) -> None:
    """MiniLM attends both ways, so vLLM keeps no prefix cache for it: the same text twice is computed twice (the
    counters say 0 hit tokens) and answered alike; tests/e2e/test_end_to_end_qwen3.py has the cache on."""
    twice = next(row for row in long_run["summary"].contract if row.probe == "same_text_twice")
    for name in ("vllm", "vllm-chunked"):
        side = twice.side(name)
        assert side is not None and side.repeats is not None and side.repeats.differing == 0, side
        assert side.prefix_cache is not None and side.prefix_cache.hit_tokens == 0, side
    assert twice.side("legacy").prefix_cache is None  # the kit's legacy server has no such counters
    row = next(line for line in long_run["report"].splitlines() if line.startswith("| ") and "twice" in line)
    assert row.count("no prefix cache asked") == 2, row  # both vLLM cells say it; the legacy one has nothing


def test_the_report_says_what_each_server_did(long_run: dict[str, Any]) -> None:
    report = long_run["report"]
    assert "averages pieces of" in report and "keeps its first 256 tokens" in report, report[-4000:]
    assert "answers it with an error (HTTP 400)" in report
