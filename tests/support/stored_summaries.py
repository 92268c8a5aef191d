"""The stored summary fixtures (tests/fixtures/summary_*.json and versions/summary_*.json) by name, each read and
upgraded once per test process; a test gets its own deep copy, so it may break it on purpose. Used by the post
document's tests (tests/report/test_post_checks.py, test_post_conclusion.py)."""

from __future__ import annotations

import json
from pathlib import Path

from embedswap.analysis.upgrade import read_summary
from embedswap.summary.model import Summary

FIXTURES = Path(__file__).parents[1] / "fixtures"
STORED = sorted([*(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.glob("summary_*.json")),
                 *(p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "versions").glob("summary_*.json"))])
_LOADED: dict[str, Summary] = {}


def stored_summary(name: str) -> Summary:
    """The fixture ``name`` (a path under tests/fixtures) as read at load, a copy of its own."""
    if name not in _LOADED:
        _LOADED[name] = read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))
    return _LOADED[name].model_copy(deep=True)
