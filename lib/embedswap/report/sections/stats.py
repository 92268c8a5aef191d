"""Formatting of the stored intervals, ratios and paired tests (``decisions.latency``, ``decisions.ranking``):
a value with its 95 % interval, a percentile too small to estimate flagged, a ratio with its verdict."""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, fmt
from embedswap.summary.types_decisions import Interval, PairedTest, PointIntervals, RatioInterval


def interval(terms: dict[str, Any], iv: Interval | RatioInterval | None, kind: str) -> str | None:
    """'541.4 (530.2–560.1)'; '≈ max 672.7' or '672.7 (n < 368)' when n is too small; None without an interval.
    A ratio has no n_min of its own: without bounds it shows its value alone."""
    if iv is None or iv.value is None:
        return None
    t = terms["stats"]
    value = fmt(iv.value, kind)
    if isinstance(iv, RatioInterval):
        if iv.low is None or iv.high is None:
            return value
    elif not iv.estimable:
        if iv.near_max:
            return fill(t["near_max"], value=value)
        return fill(t["too_few"], value=value, need=fmt(iv.n_min, "int"))
    return fill(t["interval"], value=value, low=fmt(iv.low, kind), high=fmt(iv.high, kind))


def point_cell(terms: dict[str, Any], intervals: PointIntervals | None, key: str, fallback: Any, kind: str) -> str:
    """A table cell: the interval form when the point has intervals, else the plain stored value."""
    # key names one figure of the point (p50, p90, p99, docs_per_s)
    shown = interval(terms, getattr(intervals, key), kind) if intervals is not None else None
    return shown if shown is not None else fmt(fallback, kind)


def ratio(terms: dict[str, Any], entry: RatioInterval | None, fallback: float | None = None) -> str:
    """'0.72× (0.68–0.76): faster'; a too-small n or no per-request data says so; a ratio of the medians of the
    repeats (a summary without per-request data) its value alone; '—' without any number."""
    t = terms["stats"]
    if entry is None or entry.value is None:
        return MISSING if fallback is None else fmt(fallback, "ratio")
    if entry.statistic == "median_of_repeats":
        return fmt(entry.value, "ratio")
    verdict = t["verdicts"][entry.direction]
    if entry.direction in ("faster", "slower") and entry.repeats_overlap:
        verdict = fill(t["repeats_overlap"], verdict=verdict)
    if entry.low is None:
        return fill(t["ratio_plain"], ratio=fmt(entry.value, "ratio"), verdict=verdict)
    return fill(t["ratio_cell"], ratio=fmt(entry.value, "ratio"), low=fmt(entry.low, "ratio"),
                high=fmt(entry.high, "ratio"), verdict=verdict)


def n_cell(intervals: PointIntervals | None) -> str:
    """'90' (answered requests the percentiles stand on), or '—'."""
    return fmt(intervals.n, "int") if intervals is not None else MISSING


def paired(terms: dict[str, Any], metric: str, test: PairedTest | None) -> str | None:
    """One metric's paired test as a clause: delta, interval, p-value, n, verdict, detectable difference."""
    if test is None or test.delta is None:
        return None
    t = terms["stats"]
    text = fill(t["rank_test"], metric=metric, delta=fmt(test.delta, "delta"), low=fmt(test.low, "delta"),
                high=fmt(test.high, "delta"), p=fmt(test.p_value, "p"), n=fmt(test.n, "int"),
                verdict=t["rank_verdicts"][test.verdict])
    if test.detectable is not None:
        text += fill(t["rank_mde"], n=fmt(test.n, "int"), mde=fmt(test.detectable, "score"))
    return text


def delta_cell(delta: Any, test: PairedTest | None) -> str:
    """A ranking table's delta with its interval and p-value when tested: '+0.201 [+0.10, +0.30], p 0.002'."""
    if test is None or test.delta is None:
        return fmt(delta, "delta")
    return f"{fmt(delta, 'delta')} [{fmt(test.low, 'delta')}, {fmt(test.high, 'delta')}], p {fmt(test.p_value, 'p')}"
