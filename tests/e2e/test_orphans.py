"""No orphans: `embedswap run` interrupted by SIGINT (Ctrl-C) leaves no process behind and exits with 130.

The run executes step 02 (papermill -> Jupyter kernel -> server process group). It is interrupted once while the
candidate server is still starting (a launcher that sleeps before exec'ing Python makes it slow) and once in the
middle of a latency run. Every process below `embedswap run` just before the signal must be gone afterwards, and
nothing may run with the experiment's ports on its command line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from realkit import EMBEDSWAP, kill_tree, legacy_target, make_experiment, wait_no_processes
from ports import free_ports

pytestmark = pytest.mark.e2e


def _attempt_dir(folder: Path) -> Path | None:
    attempts = sorted((folder / "attempts").glob("*")) if (folder / "attempts").exists() else []
    return attempts[-1] if attempts else None


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _alive(processes: list[psutil.Process]) -> list[str]:
    alive = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{proc.pid}: {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            continue
    return alive


def interrupt_run(tmp_path: Path, folder: Path, ports: list[int], when: Callable[[Path], bool],
                  what: str, to_group: bool = False, timeout_s: float = 600) -> None:
    out, err = tmp_path / "run.out", tmp_path / "run.err"
    # A child inherits an ignored SIGINT (a job started with `&` by a non-interactive shell, as CI scripts may,
    # ignores it, and so would the run); a handled one is reset to the default on exec, as a terminal gives it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with out.open("w") as stdout, err.open("w") as stderr:
            run = subprocess.Popen([EMBEDSWAP, "run", str(folder), "--steps", "02", "--no-report"], stdout=stdout,
                                   stderr=stderr, start_new_session=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    finally:
        signal.signal(signal.SIGINT, previous)
    seen: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            attempt = _attempt_dir(folder)
            if attempt is not None and when(attempt):
                break
            assert run.poll() is None, f"the run ended before {what}: {out.read_text()[-3000:]}{err.read_text()}"
            assert time.monotonic() < deadline, f"never reached {what}"
            time.sleep(0.2)
        seen = _descendants(run.pid)
        commands = [" ".join(p.cmdline()) for p in seen if p.is_running()]
        assert any("ipykernel" in c for c in commands), commands  # the notebook's kernel
        assert any(f"--port {ports[1]}" in c for c in commands), commands  # the candidate server
        if to_group:  # Ctrl-C in a terminal: the whole foreground process group
            os.killpg(run.pid, signal.SIGINT)
        else:  # `kill -INT <pid>`: the run only; the kernel is not told
            run.send_signal(signal.SIGINT)
        code = run.wait(timeout=180)
        output = out.read_text() + err.read_text()
        assert code == 130, output[-4000:]
        assert "interrupted; servers stopped, captures so far kept" in err.read_text()
        deadline = time.monotonic() + 30  # SIGTERM grace of what was stopped
        while _alive(seen) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _alive(seen) == [], f"left behind after SIGINT {what}"
        assert wait_no_processes(ports, timeout_s=5) == []
        assert not list((attempt / "logs").glob("*.pid"))
        assert '"error": "interrupted"' in (attempt / "steps.json").read_text()
    finally:
        kill_tree(run.pid)
        for proc in seen:
            try:
                proc.kill()
            except psutil.Error:
                pass


def test_sigint_while_the_candidate_server_starts(tmp_path: Path) -> None:
    launcher = tmp_path / "slow-python"
    launcher.write_text(f"#!/bin/sh\n# a server slow to start\nsleep 600\nexec {sys.executable} \"$@\"\n")
    launcher.chmod(0o755)
    ports = free_ports(2)
    folder = make_experiment(tmp_path, "orphans-start", legacy_target(ports[0]),
                             {"candidate": legacy_target(ports[1], python=str(launcher))})

    def starting(attempt: Path) -> bool:
        return (attempt / "logs" / "candidate.pid").exists() and any(
            "sleep" in " ".join(p.cmdline()) for p in _descendants_of_pidfile(attempt / "logs" / "candidate.pid"))

    interrupt_run(tmp_path, folder, ports, starting, "during the candidate's start")


def _descendants_of_pidfile(path: Path) -> list[psutil.Process]:
    try:
        pid = int(path.read_text().strip())
        return [psutil.Process(pid), *_descendants(pid)]
    except (ValueError, OSError, psutil.Error):
        return []


@pytest.mark.parametrize("to_group", [False, True], ids=["kill-pid", "ctrl-c-group"])
def test_sigint_during_a_latency_run(tmp_path: Path, to_group: bool) -> None:
    ports = free_ports(2)
    folder = make_experiment(tmp_path, "orphans-latency", legacy_target(ports[0]),
                             {"candidate": legacy_target(ports[1], capture=["latency"])},
                             latency={"sequential_requests": 400, "concurrent_requests": 400})

    def in_latency_run(attempt: Path) -> bool:
        log = attempt / "logs" / "candidate.log"
        return log.exists() and log.read_text(errors="replace").count("POST /v1/embeddings") >= 3

    interrupt_run(tmp_path, folder, ports, in_latency_run, "in the middle of a latency run", to_group)
