"""The local Ray head node's stop (``embedswap.measure.ray_pool.LocalRay.stop``), without Ray: a stand-in head
process in a session of its own, as ``LocalRay.start`` makes it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest


def test_a_head_that_exits_at_sigterm_is_reaped_and_never_sent_sigkill(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """SIGKILL is for what outlives the SIGTERM wait. The head is the kit's child: unreaped, it stayed a zombie that
    ``killpg(group, 0)`` still found, so a head that had exited at SIGTERM was waited for to the end and sent SIGKILL
    (every stop took 35 s)."""
    from embedswap.measure import ray_pool

    local = ray_pool.LocalRay(1, tmp_path / "ray.log")
    local.process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    sent: list[int] = []
    killpg = os.killpg

    def recording(group: int, sig: int) -> None:
        sent.append(sig)
        killpg(group, sig)

    monkeypatch.setattr(ray_pool.os, "killpg", recording)
    monkeypatch.setattr(ray_pool, "STOP_TIMEOUT_S", 3.0)  # the old code's wait, cut short: it then sent SIGKILL
    local.stop()
    assert signal.SIGTERM in sent and signal.SIGKILL not in sent, sent
    assert local.process.returncode == -signal.SIGTERM
