"""Step 03's diagnosis beside its index part: run in a background thread at a lower priority, waited for and written
by the notebook's thread with the seconds it waited; its error is raised where it is waited for; a capture already
written is read back, never written again."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from embedswap.captures import new_attempt
from embedswap.diagnosis import step as diagnosis_step
from embedswap.diagnosis.background import Background


def test_the_work_runs_in_another_thread_and_its_value_and_wait_come_back() -> None:
    seen: dict[str, Any] = {}

    def work() -> str:
        seen["thread"] = threading.current_thread().name
        if sys.platform == "linux":
            seen["policy"] = os.sched_getscheduler(threading.get_native_id())
        time.sleep(0.2)
        return "done"

    value, waited = Background(work, name="test-background").result()
    assert value == "done" and seen["thread"] == "test-background"
    assert 0.1 < waited < 5  # it waited for the sleeping work
    if sys.platform == "linux":
        assert seen["policy"] == os.SCHED_IDLE  # the work runs on CPU time nothing else wants
        assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the step's own thread keeps its priority


def test_an_error_in_the_background_is_raised_where_it_is_waited_for() -> None:
    def work() -> None:
        raise ValueError("the diagnosis failed")

    with pytest.raises(ValueError, match="the diagnosis failed"):
        Background(work, name="test-background").result()


def test_the_step_writes_the_diagnosis_once_with_the_seconds_it_waited(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    attempt = new_attempt(tmp_path)
    ctx = SimpleNamespace(attempt=attempt)

    def diagnosed(ctx: Any) -> tuple[dict[str, Any], bool]:
        if ctx.attempt.has(diagnosis_step.CAPTURE):
            return ctx.attempt.read_json(diagnosis_step.CAPTURE), False
        time.sleep(0.3)  # still running when the index part is done
        return {"measured": True, "seconds": 0.3}, True

    monkeypatch.setattr(diagnosis_step, "_diagnosed", diagnosed)
    result = diagnosis_step.finish_diagnosis(ctx, diagnosis_step.start_diagnosis(ctx))
    written = attempt.read_json(diagnosis_step.CAPTURE)
    assert written == result and 0.1 < written["waited_s"] < 5
    # the next run of the step reads the capture back and leaves it as it is
    again = diagnosis_step.finish_diagnosis(ctx, diagnosis_step.start_diagnosis(ctx))
    assert again == written and attempt.read_json(diagnosis_step.CAPTURE) == written
    # the step run without a background thread records no wait
    other = new_attempt(tmp_path / "other")
    assert "waited_s" not in diagnosis_step.diagnose_vectors(SimpleNamespace(attempt=other))
