"""Issue 54, A/A of Infinity (0.0.78, `.venvs/infinity`, a server this project did not write): one Infinity server
serving the embedded MiniLM, the worker's shared one (``infinity_minilm`` of tests/e2e/conftest.py, which
test_upgrade_pair_e2e.py's candidate is too), named as both targets, ``old`` and ``same`` (``kind: external`` at
its own routes, `/embeddings` and `/models`), every step of ``embedswap run``; the run must say "nothing differs"
everywhere (tests/support/aa_check.py). Its upgrade pair (0.0.77 -> 0.0.78) is tests/e2e/test_upgrade_pair_e2e.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from aa_check import ENGINE_AA_LANGUAGES, ENGINE_AA_LATENCY, aa_experiment, run_aa, run_failures
from embedswap.measure.contract import CATALOGUE

# beside other tests (make test's second pass), not alone: its latency runs in interleaved blocks, whose interval
# covers the blocks' spread, so a loaded host widens it to `inconclusive` rather than deciding `different`
# (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500), pytest.mark.xdist_group(name="infinity-0.0.78-minilm")]
# the group of the files sharing the Infinity 0.0.78 server (tests/e2e/conftest.py): one worker, one start

LEGACY, CANDIDATE = "old", "same"
# the whole catalogue but `large_batch` (about batch limits, which the legacy server's A/A compares)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


@pytest.fixture(scope="module")
def aa_infinity(tmp_path_factory: pytest.TempPathFactory, infinity_minilm: Any) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("aa-infinity")
    folder = aa_experiment(root, infinity_minilm.url, PROBES, LEGACY, CANDIDATE, ENGINE_AA_LANGUAGES,
                           latency=ENGINE_AA_LATENCY, legacy_phase=False,
                           embeddings_path="/embeddings", health_path="/models")
    # the pooled server runs on after this test (its fixture stops it at the session's end): no port to find free
    return run_aa(folder, infinity_minilm, [], timeout_s=1200)


def test_infinity_against_itself_says_nothing_differs(aa_infinity: dict[str, Any]) -> None:
    failures = run_failures(aa_infinity, LEGACY, CANDIDATE)
    assert failures == [], "\n".join(failures)
