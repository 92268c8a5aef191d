"""Issue 54, A/A of vLLM: one vLLM server (fp32 MiniLM, the engine environment `.venvs/engine`; the worker's shared
one, ``vllm_fp32_minilm`` of tests/e2e/conftest.py, which test_guard_e2e.py's fp32 server is too) named as both
targets, ``old`` and ``same`` (``kind: external`` at one URL), every step of ``embedswap run``; the
run must say "nothing differs" everywhere (tests/support/aa_check.py), as the kit's own legacy server's A/A does
(tests/e2e/test_aa_e2e.py, which also breaks one on purpose).
"""

from __future__ import annotations

from typing import Any

import pytest

from aa_check import ENGINE_AA_LANGUAGES, ENGINE_AA_LATENCY, aa_experiment, run_aa, run_failures
from embedswap.measure.contract import CATALOGUE

# beside other tests (make test's second pass), not alone: its latency runs in interleaved blocks, whose interval
# covers the blocks' spread, so a loaded host widens it to `inconclusive` rather than deciding `different`
# (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500), pytest.mark.xdist_group(name="vllm-fp32-minilm")]
# the group of the files sharing the vLLM fp32 server (tests/e2e/conftest.py): one worker, one start

LEGACY, CANDIDATE = "old", "same"
# the whole catalogue but `large_batch` (512 inputs to each side and through the shim: minutes of vLLM on 2 shared
# cores, and about batch limits, which the legacy server's A/A compares)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


@pytest.fixture(scope="module")
def aa_vllm(tmp_path_factory: pytest.TempPathFactory, vllm_fp32_minilm: Any) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("aa-vllm")
    folder = aa_experiment(root, vllm_fp32_minilm.url, PROBES, LEGACY, CANDIDATE, ENGINE_AA_LANGUAGES,
                           latency=ENGINE_AA_LATENCY, legacy_phase=False)
    # the pooled server runs on after this test (its fixture stops it at the session's end): no port to find free
    return run_aa(folder, vllm_fp32_minilm, [], timeout_s=1200)


def test_vllm_against_itself_says_nothing_differs(aa_vllm: dict[str, Any]) -> None:
    failures = run_failures(aa_vllm, LEGACY, CANDIDATE)
    assert failures == [], "\n".join(failures)
