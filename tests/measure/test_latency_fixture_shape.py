"""The report fixture's latency part has the shape the real `measure.capture_latency` writes (issue 23).

`tests/fixtures/summary_complete.json` carries synthetic latency figures (make_summary_complete.py); the report
tests read them "as capture_latency writes them". Here the real `capture_latency` measures a small fake HTTP server
(real aiohttp requests, real files), its files go through the real `summary.latency_section`, and every key path of
the result must be the fixture's: a renamed or added field in the capture format fails this test until the fixture
is regenerated (`tests/fixtures/make_summary_complete.py`, which checks the same thing before writing).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from realkit import quick_host_calibration

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))

from make_summary_complete import FIXTURE, key_paths, measured_latency_shape  # noqa: E402


def test_fixture_latency_has_capture_latencys_shape(tmp_path: Path) -> None:
    # the host readings keep their number and keys (what is compared here) with the quick calibration: the real one
    # was 7.0 of this test's 7.2 s (issue 61); the gauge's values are tests/measure/test_host_state.py's subject
    with quick_host_calibration():
        real = measured_latency_shape(tmp_path)
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))["latency"]["by_target"]
    for name in ("legacy", "vllm", "dynamo"):
        assert key_paths(fixture[name]) == real["target"], name
    assert real["request_keys"] == real["fixture_request_keys"]


def test_key_paths_see_a_renamed_field() -> None:
    """What the check above relies on: a field renamed deep inside a point changes the key paths."""
    point: dict[str, Any] = {"sequential": {"p50_ms": 1.0, "spread": {"p50_ms": [1.0]}}, "sweep": [{"run": "c1"}]}
    renamed = {"sequential": {"p50": 1.0, "spread": {"p50_ms": [1.0]}}, "sweep": [{"run": "c1"}]}
    assert key_paths(point) != key_paths(renamed)
    assert "sweep[].run" in key_paths(point)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)

