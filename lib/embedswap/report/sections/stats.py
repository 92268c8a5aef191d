"""Formatting of the stored intervals, ratios and paired tests (``decisions.latency``, ``decisions.ranking``):
a value with its 95 % interval, a percentile too small to estimate flagged, a ratio with its verdict."""

from __future__ import annotations

from typing import Any

from embedswap.report.format import MISSING, fmt


def interval(terms: dict[str, Any], iv: dict[str, Any] | None, kind: str) -> str | None:
    """'541.4 (530.2–560.1)'; '≈ max 672.7' or '672.7 (n < 368)' when n is too small; None without an interval."""
    if not isinstance(iv, dict) or iv.get("value") is None:
        return None
    t = terms["stats"]
    value = fmt(iv["value"], kind)
    if not iv.get("estimable"):
        if iv.get("near_max"):
            return t["near_max"].format(value=value)
        return t["too_few"].format(value=value, need=fmt(iv.get("n_min"), "int"))
    return t["interval"].format(value=value, low=fmt(iv.get("low"), kind), high=fmt(iv.get("high"), kind))


def point_cell(terms: dict[str, Any], intervals: dict[str, Any] | None, key: str, fallback: Any, kind: str) -> str:
    """A table cell: the interval form when the point has intervals, else the plain stored value."""
    shown = interval(terms, (intervals or {}).get(key), kind)
    return shown if shown is not None else fmt(fallback, kind)


def ratio(terms: dict[str, Any], entry: dict[str, Any] | None, fallback: float | None = None) -> str:
    """'0.72× (0.68–0.76): faster'; a too-small n or no per-request data says so; '—' without any number."""
    t = terms["stats"]
    if not isinstance(entry, dict) or entry.get("value") is None:
        return MISSING if fallback is None else fmt(fallback, "ratio")
    verdict = t["verdicts"][entry.get("verdict") or "missing"]
    if entry.get("verdict") in ("faster", "slower") and entry.get("repeats_overlap"):
        verdict = t["repeats_overlap"].format(verdict=verdict)
    if entry.get("low") is None:
        return t["ratio_plain"].format(ratio=fmt(entry["value"], "ratio"), verdict=verdict)
    return t["ratio_cell"].format(ratio=fmt(entry["value"], "ratio"), low=fmt(entry["low"], "ratio"),
                                  high=fmt(entry["high"], "ratio"), verdict=verdict)


def n_cell(intervals: dict[str, Any] | None) -> str:
    """'90' (answered requests the percentiles stand on), or '—'."""
    return fmt((intervals or {}).get("n"), "int") if intervals else MISSING


def paired(terms: dict[str, Any], metric: str, test: dict[str, Any] | None) -> str | None:
    """One metric's paired test as a clause: delta, interval, p-value, n, verdict, detectable difference."""
    if not isinstance(test, dict) or test.get("delta") is None:
        return None
    t = terms["stats"]
    text = t["rank_test"].format(metric=metric, delta=fmt(test["delta"], "delta"), low=fmt(test.get("low"), "delta"),
                                 high=fmt(test.get("high"), "delta"), p=fmt(test.get("p_value"), "p"),
                                 n=fmt(test.get("n"), "int"), verdict=t["rank_verdicts"][test.get("verdict")
                                                                                       or "missing"])
    if test.get("detectable") is not None:
        text += t["rank_mde"].format(n=fmt(test.get("n"), "int"), mde=fmt(test["detectable"], "score"))
    return text


def delta_cell(delta: Any, test: dict[str, Any] | None) -> str:
    """A ranking table's delta with its interval and p-value when tested: '+0.201 [+0.10, +0.30], p 0.002'."""
    if not isinstance(test, dict) or test.get("delta") is None:
        return fmt(delta, "delta")
    return (f"{fmt(delta, 'delta')} [{fmt(test.get('low'), 'delta')}, {fmt(test.get('high'), 'delta')}], "
            f"p {fmt(test.get('p_value'), 'p')}")
