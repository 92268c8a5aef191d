"""The unit pass computes each distinct figure set, each distinct summary upgrade and each distinct summary's
decisions (typed_summary.decisions_of) once (tests/conftest.py, tests/support/memo.py): sound only because all are
deterministic, which this checks with the real functions, twice, on the complete summary."""

from __future__ import annotations

from typing import Any

import memo
from embedswap.analysis.upgrade import read_summary
from typed_summary import decisions_of


def test_the_same_summary_draws_the_same_bytes(figures_drawn_once: Any, complete: dict[str, Any]) -> None:
    summary = read_summary(complete)
    first, second = figures_drawn_once(summary, "ko"), figures_drawn_once(summary, "ko")
    assert first and first == second  # every figure, byte for byte
    assert figures_drawn_once(summary, "en").keys() != first.keys()  # the language is part of what is drawn


def test_the_same_summary_upgrades_to_the_same_decisions(summaries_upgraded_once: Any,
                                                          complete: dict[str, Any]) -> None:
    first, second = summaries_upgraded_once(complete), summaries_upgraded_once(complete)
    assert first["decisions"] and first == second
    assert first is not second and "decisions" not in complete  # a copy each time; the input is left as it was


def test_the_same_summary_decides_the_same_decisions(complete: dict[str, Any]) -> None:
    remembered = decisions_of(complete)
    assert remembered and decisions_of(complete) == remembered and decisions_of(complete) is not remembered
    memo.FRESH["now"] = True  # as under monkeypatch: computed again, not read from the memo
    try:
        assert decisions_of(complete) == remembered
    finally:
        memo.FRESH["now"] = False
