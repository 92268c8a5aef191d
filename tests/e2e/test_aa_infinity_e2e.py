"""Issue 54, A/A of Infinity (0.0.78, `.venvs/infinity`, a server this project did not write): one Infinity server
serving the embedded MiniLM, started once and named as both targets, ``old`` and ``same`` (``kind: external`` at
its own routes, `/embeddings` and `/models`), every step of ``embedswap run``; the run must say "nothing differs"
everywhere (tests/support/aa_check.py). Its upgrade pair (0.0.77 -> 0.0.78) is tests/e2e/test_upgrade_pair_e2e.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from answering import infinity_env, wait_answering
from aa_check import ENGINE_AA_LANGUAGES, ENGINE_AA_LATENCY, aa_experiment, run_aa, run_failures
from embedswap.config import load_experiment
from embedswap.measure.contract import CATALOGUE
from embedswap.models import resolve_model_path
from embedswap.targets.base import ManagedProcess
from ports import free_ports
from realkit import REPO

# beside other tests (make test's second pass), not alone: its latency runs in interleaved blocks, whose interval
# covers the blocks' spread, so a loaded host widens it to `inconclusive` rather than deciding `different`
# (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

INFINITY_PYTHON = Path(os.environ.get("EMBEDSWAP_INFINITY_PYTHON") or REPO / ".venvs/infinity/bin/python")
LEGACY, CANDIDATE = "old", "same"
# the whole catalogue but `large_batch` (about batch limits, which the legacy server's A/A compares)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


class InfinityServer:
    """Infinity as run_aa starts a server: ``start`` returns once ``/models`` answers, ``stop`` ends its group."""
    kind = "infinity"

    def __init__(self, model: str, served: str, port: int, log: Path) -> None:
        command = [str(INFINITY_PYTHON), "-m", "infinity_emb.cli", "v2", "--model-id", model,
                   "--served-model-name", served, "--host", "127.0.0.1", "--port", str(port), "--engine", "torch",
                   "--device", "cpu", "--no-model-warmup", "--no-bettertransformer"]
        env = infinity_env()
        self.process, self.port, self.log = ManagedProcess("infinity", command, env, log), port, log

    def start(self, timeout_s: float = 420) -> None:
        # 420 s: beside another engine start on 2 cores (make test's second pass), not the 9-13 s it takes alone
        self.process.start()
        try:
            wait_answering({"infinity": (self.process, f"http://127.0.0.1:{self.port}/models", self.log)}, timeout_s)
        except BaseException:
            self.process.stop()
            raise

    def stop(self) -> None:
        self.process.stop()


@pytest.fixture(scope="module")
def aa_infinity(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert INFINITY_PYTHON.exists(), (f"{INFINITY_PYTHON} is missing: `make infinity` builds it (make test does), "
                                      "or set EMBEDSWAP_INFINITY_PYTHON")
    root = tmp_path_factory.mktemp("aa-infinity")
    (port,) = free_ports(1)
    folder = aa_experiment(root, f"http://127.0.0.1:{port}", PROBES, LEGACY, CANDIDATE, ENGINE_AA_LANGUAGES,
                           latency=ENGINE_AA_LATENCY,
                           embeddings_path="/embeddings", health_path="/models")
    experiment = load_experiment(folder)
    server = InfinityServer(resolve_model_path(experiment.model.path), experiment.model.served_name, port,
                            root / "infinity.log")
    return run_aa(folder, server, [port], timeout_s=1200)


def test_infinity_against_itself_says_nothing_differs(aa_infinity: dict[str, Any]) -> None:
    failures = run_failures(aa_infinity, LEGACY, CANDIDATE)
    assert failures == [], "\n".join(failures)
