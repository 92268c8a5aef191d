"""Servers start without a preexec_fn: their own session and process group (``start_new_session``), and SIGTERM
when the process that started them dies (``setpriv --pdeathsig``), from a threaded program such as a Jupyter
kernel. Real processes; nothing mocked."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from embedswap.targets.base import ManagedProcess, die_with_parent

LIB = Path(__file__).resolve().parents[2] / "lib"


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
def test_a_server_dies_with_the_threaded_process_that_started_it(tmp_path: Path) -> None:
    # the parent has other threads running when it starts the server (as a Jupyter kernel does)
    parent_code = textwrap.dedent(f"""
        import sys, threading, time
        sys.path.insert(0, {str(LIB)!r})
        from pathlib import Path
        from embedswap.targets.base import ManagedProcess
        for _ in range(4):
            threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(int, 1)], daemon=True).start()
        proc = ManagedProcess("srv", ["sleep", "600"], {{"PATH": "/usr/bin:/bin"}}, Path({str(tmp_path)!r}) / "srv.log")
        proc.start()
        print(proc.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    server_pid = None
    try:
        server_pid = int(parent.stdout.readline())
        server = psutil.Process(server_pid)
        deadline = time.monotonic() + 10
        while server.cmdline()[:1] != ["sleep"] and time.monotonic() < deadline:  # setpriv has exec'd the server
            time.sleep(0.05)
        assert server.cmdline() == ["sleep", "600"]
        assert os.getpgid(server_pid) == server_pid and os.getsid(server_pid) == server_pid
        assert os.getsid(server_pid) != os.getsid(parent.pid)
        assert (tmp_path / "srv.pid").read_text().strip() == str(server_pid)
        parent.kill()  # SIGKILL: the parent runs no clean-up of its own
        parent.wait(timeout=10)
        assert _gone(server_pid, timeout_s=10), "the server outlived the process that started it"
    finally:
        parent.kill()
        if server_pid is not None:
            try:
                os.killpg(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_stop_takes_the_whole_group_and_the_log_keeps_the_plain_command(tmp_path: Path) -> None:
    log = tmp_path / "srv.log"
    proc = ManagedProcess("srv", ["sh", "-c", "sleep 600 & sleep 600 & wait"], {"PATH": "/usr/bin:/bin"}, log)
    proc.start()
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(proc.pid).children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        children = [c.pid for c in psutil.Process(proc.pid).children()]
        assert len(children) == 2
    finally:
        code = proc.stop(grace_s=5)
    assert code is not None and all(_gone(pid, 5) for pid in [proc.pid, *children])
    assert log.read_text().splitlines()[0] == "$ sh -c sleep 600 & sleep 600 & wait"  # no setpriv prefix
    assert not (tmp_path / "srv.pid").exists()


def test_die_with_parent_wraps_only_when_setpriv_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert die_with_parent(["python", "-m", "x"]) == ["python", "-m", "x"]
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/setpriv")
    assert die_with_parent(["python"]) == ["/usr/bin/setpriv", "--pdeathsig", "TERM", "--", "python"]
