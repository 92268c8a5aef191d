"""The unit pass computes each distinct figure set and each distinct summary upgrade once (tests/conftest.py): sound
only because both are deterministic, which this checks with the real functions, twice, on the complete summary."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.upgrade import read_summary


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
