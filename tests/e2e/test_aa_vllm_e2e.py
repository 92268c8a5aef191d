"""Issue 54, A/A of vLLM: one vLLM server (fp32 MiniLM, the engine environment `.venvs/engine`) started once and
named as both targets, ``old`` and ``same`` (``kind: external`` at one URL), every step of ``embedswap run``; the
run must say "nothing differs" everywhere (tests/support/aa_check.py), as the kit's own legacy server's A/A does
(tests/e2e/test_aa_e2e.py, which also breaks one on purpose).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aa_check import ENGINE_AA_LANGUAGES, ENGINE_AA_LATENCY, aa_experiment, run_aa, run_failures
from embedswap.config import load_experiment
from embedswap.config.targets import VllmTarget
from embedswap.measure.contract import CATALOGUE
from embedswap.models import resolve_model_path
from embedswap.paths import engine_python
from embedswap.targets.vllm import VllmServerTarget
from ports import free_ports

# beside other tests (make test's second pass), not alone: its latency runs in interleaved blocks, whose interval
# covers the blocks' spread, so a loaded host widens it to `inconclusive` rather than deciding `different`
# (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

LEGACY, CANDIDATE = "old", "same"
# the whole catalogue but `large_batch` (512 inputs to each side and through the shim: minutes of vLLM on 2 shared
# cores, and about batch limits, which the legacy server's A/A compares)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


@pytest.fixture(scope="module")
def aa_vllm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("aa-vllm")
    (port,) = free_ports(1)
    folder = aa_experiment(root, f"http://127.0.0.1:{port}", PROBES, LEGACY, CANDIDATE, ENGINE_AA_LANGUAGES,
                           latency=ENGINE_AA_LATENCY)
    experiment = load_experiment(folder)
    config = VllmTarget(kind="vllm", port=port, startup_timeout_s=420, dtype="float32", extra_args=["--enforce-eager"])
    server = VllmServerTarget("aa-vllm", config, experiment.model, resolve_model_path(experiment.model.path),
                              root / "logs")
    return run_aa(folder, server, [port], timeout_s=1200)


def test_vllm_against_itself_says_nothing_differs(aa_vllm: dict[str, Any]) -> None:
    failures = run_failures(aa_vllm, LEGACY, CANDIDATE)
    assert failures == [], "\n".join(failures)
