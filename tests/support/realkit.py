"""Helpers for the tests that run real processes (fault injection, resume, preflight, orphans, security).

Small experiments in tmp folders whose targets are all the reference legacy server (kind: legacy), with the
latency runs shrunk so a whole capture takes seconds after the ~10 s model load. Ports come from ports.free_ports.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import psutil
import yaml

from embedswap.captures import Attempt
from embedswap.scaffold import new_experiment
from ports import port_processes

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"
EMBEDSWAP = str(Path(sys.executable).parent / "embedswap")

SMALL_LATENCY = {
    "sequential_requests": 6,
    "sweep": [],  # the concurrency sweep is not what these tests are about
    "concurrent_requests": 8,
    "concurrency": 4,
    "repeats": 1,
    "warmup_requests": 0,
    "timeout_s": 60,  # generous: a batch of 8 takes ~2 s when the 2 cores are shared, 4 queue behind the lock
}
# a few probes of the catalogue: enough to exercise the contract capture without 20 extra requests per server
FEW_PROBES = ["plain", "empty_string", "batch8_member"]


def wait_no_processes(ports: list[int], timeout_s: float = 20.0) -> list[str]:
    """What still runs on the ports after ``timeout_s`` (empty: all gone)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = port_processes(ports)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.3)


def legacy_target(port: int, capture: list[str] | None = None, extra_args: list[str] | None = None,
                  **more: Any) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "legacy", "port": port, "startup_timeout_s": 180}
    if capture:
        target["capture"] = capture
    if extra_args:
        target["extra_args"] = extra_args
    target.update(more)
    return target


def pooled_target(server: Any, capture: list[str] | None = None, **more: Any) -> dict[str, Any]:
    """A shared server of tests/e2e/conftest.py (its ``PooledServer``: ``legacy_minilm``...) as an experiment's
    target: ``kind: external`` at its URL, so the kit neither starts nor stops it (its fixture does, once a run)."""
    target: dict[str, Any] = {"kind": "external", "url": server.url}
    if capture:
        target["capture"] = capture
    target.update(more)
    return target


def make_experiment(root: Path, slug: str, legacy: dict[str, Any], candidates: dict[str, dict[str, Any]],
                    latency: dict[str, Any] | None = None, probes: list[str] | str = FEW_PROBES,
                    repeats: int = 1, restore: bool = False) -> Path:
    """An experiment folder under ``root/experiments`` whose targets are given (legacy + candidates).

    ``restore`` (the A-B-A design, on by default in the kit) is off unless a test asks for it: each restore restarts
    the legacy server and measures it again, half a minute a test that is not about latency."""
    folder = new_experiment(slug, root / "experiments", data_dir=DATA, legacy_port=legacy.get("port", 18899),
                            vllm_port=18898)
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["targets"] = {"legacy": legacy, **candidates}
    config["candidates"] = list(candidates)
    if "ablations" in config:  # the template's variants name targets these experiments do not have
        config["ablations"] = []
    config.pop("matryoshka", None)
    config.get("parity", {}).pop("backends", None)  # the dtype sweep needs the engine environment
    config.get("parity", {}).pop("checks", None)  # so does the parity matrix (its own tests: test_parity_checks)
    config.get("parity", {}).pop("multimodal", None)  # and the CLIP server (tests/e2e/test_end_to_end_qwen3.py runs it)
    config.setdefault("sequencing", {})["restore_legacy"] = restore
    config["latency"] = {**SMALL_LATENCY, **(latency or {})}
    config["workload"]["repeats"] = repeats
    config["contract"]["probes"] = probes
    config["report"]["languages"] = ["en"]
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return folder


def measured_attempt(folder: Path) -> tuple[Attempt, dict[str, Any]]:
    """Steps 01-02's captures of every target of ``folder``'s experiment in a new attempt, then its summary (not yet
    written): what the in-process flow tests run between starting their fake servers and reading the report."""
    from embedswap.captures import new_attempt
    from embedswap.config import load_experiment
    from embedswap.measure.capture import measure_target
    from embedswap.measure.workload import load_workload
    from embedswap.pipeline.build import build_summary

    experiment = load_experiment(folder)
    attempt = new_attempt(folder)
    for name in experiment.target_order():
        measure_target(experiment, folder, attempt, name, f"capture:{name}")
    return attempt, build_summary(experiment, folder, attempt, load_workload(experiment, folder))


def copy_attempt(attempt: Attempt, experiment_dir: Path) -> Attempt:
    """The same attempt (captures, manifest, steps) under another experiment folder."""
    target = experiment_dir / "attempts" / attempt.name
    shutil.copytree(attempt.path, target)
    for pid_file in (target / "logs").glob("*.pid"):
        pid_file.unlink()
    return Attempt(experiment_dir.resolve(), target.resolve())


def listening_addresses(pid: int, port: int) -> set[str]:
    """The local addresses that `pid` or any of its descendants listens on at `port` (a server bound to 0.0.0.0 or
    :: shows up as such, whatever address a client used to reach it)."""
    root = psutil.Process(pid)
    found = set()
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found |= {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    return found


def kill_tree(pid: int) -> None:
    """Last-resort cleanup in a test's finally: the process, its group and its children."""
    try:
        parent = psutil.Process(pid)
        children = parent.children(recursive=True)
    except psutil.Error:
        children = []
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass


@contextmanager
def quick_host_calibration() -> Iterator[None]:
    """The host gauge's calibration (measure.host_state: a reading is 3 samples of 4 sorts of 1M values) cut to one
    sort of 20k values while the ``with`` lasts, in this process. A latency phase takes a reading before, after and
    between its runs: ~1.5-3 s a target on this host, most of an in-process flow test against fake servers. For
    tests that capture latency but assert nothing on the readings' values (routes, redaction, block pairing): the
    readings keep their number and shape. The gauge's own tests (tests/measure/test_host_state.py,
    tests/analysis/test_host_drift.py, tests/e2e/test_host_drift_e2e.py) and every subprocess keep the real one."""
    import pytest

    from embedswap.measure import host_state

    real = host_state.calibration_ms
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(host_state, "calibration_ms", lambda rounds=1, size=20_000: real(rounds, size))
        yield


def files_containing(folder: Path, needle: str) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path.relative_to(folder)))
    return hits


def run_whole_experiment(folder: Path, timeout_s: float, steps: str | None = None) -> subprocess.CompletedProcess:
    """`embedswap run FOLDER` as a user runs it, in its own session so that a timeout can interrupt the whole run
    (servers, kernel) the way Ctrl-C would; the run's output tail is printed for the test log. ``steps`` (e.g.
    "01,02,03") is `--steps`: only the notebooks whose outputs the test reads (the report is rendered all the same)."""
    import pytest

    command = [EMBEDSWAP, "run", str(folder), *(["--steps", steps] if steps else [])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
        pytest.fail(f"embedswap run took over {timeout_s} s\n{stdout[-3000:]}\n{stderr[-3000:]}")
    print(stdout[-5000:], stderr[-5000:])
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class JsonHandler(BaseHTTPRequestHandler):
    """Base of the tests' small HTTP servers: answers JSON (``answer``) and logs nothing."""

    def answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass
