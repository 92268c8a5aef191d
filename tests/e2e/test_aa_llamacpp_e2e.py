"""Issue 54, A/A of llama.cpp's server: one llama.cpp server (llama-cpp-python[server], `.venvs/llamacpp`, the
embedded MiniLM converted to f32 GGUF) started once and named as both targets, ``old`` and ``same``
(``kind: external`` at one URL), every step of ``embedswap run``; the run must say "nothing differs" everywhere
(tests/support/aa_check.py), as the kit's legacy server's, vLLM's and Infinity's A/A runs do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aa_check import ENGINE_AA_LANGUAGES, ENGINE_AA_LATENCY, aa_experiment, run_aa, run_failures
from embedswap.config import load_experiment
from embedswap.config.targets import LlamaCppTarget
from embedswap.measure.contract import CATALOGUE
from embedswap.models import resolve_model_path
from embedswap.targets.llamacpp import LlamaCppServerTarget
from ports import free_ports
from realkit import REPO

# beside other tests (make test's second pass), not alone: its latency runs in interleaved blocks, whose interval
# covers the blocks' spread, so a loaded host widens it to `inconclusive` rather than deciding `different`
# (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

LLAMACPP_PYTHON = Path(os.environ.get("EMBEDSWAP_LLAMACPP_PYTHON") or REPO / ".venvs/llamacpp/bin/python")
LEGACY, CANDIDATE = "old", "same"
# the whole catalogue but `large_batch` (about batch limits, which the legacy server's A/A compares)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


@pytest.fixture(scope="module")
def aa_llamacpp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert LLAMACPP_PYTHON.exists(), (f"{LLAMACPP_PYTHON} is missing: `make llamacpp` builds it (make test does), "
                                      "or set EMBEDSWAP_LLAMACPP_PYTHON")
    root = tmp_path_factory.mktemp("aa-llamacpp")
    (port,) = free_ports(1)
    folder = aa_experiment(root, f"http://127.0.0.1:{port}", PROBES, LEGACY, CANDIDATE, ENGINE_AA_LANGUAGES,
                           latency=ENGINE_AA_LATENCY, legacy_phase=False)
    experiment = load_experiment(folder)
    config = LlamaCppTarget(kind="llamacpp", port=port, python=str(LLAMACPP_PYTHON), gguf_type="f32",
                            startup_timeout_s=300)
    server = LlamaCppServerTarget("aa-llamacpp", config, experiment.model, resolve_model_path(experiment.model.path),
                                  root / "logs")
    return run_aa(folder, server, [port], timeout_s=1200)


def test_llamacpp_against_itself_says_nothing_differs(aa_llamacpp: dict[str, Any]) -> None:
    # the parity gate against the fp32 reference fails for llama.cpp's tokenizer on Korean (test_llamacpp_e2e.py):
    # the step says so; the same server on both sides: a note about both, not a difference
    failures = run_failures(aa_llamacpp, LEGACY, CANDIDATE, gate_may_fail=True)
    assert failures == [], "\n".join(failures)
