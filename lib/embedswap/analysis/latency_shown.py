"""Which latency statistic the report shows, decided once (``decisions.shown``) so that the latency table, the
figures, the front matter and every sentence print the same number for the same quantity.

Pooled over the repeats when every measured operating point has per-request data: that is the statistic the
intervals and the candidate / legacy ratios are computed on, so a ratio and the two numbers beside it agree. A
summary without per-request data (schema 1) keeps the median of the per-repeat figures, for every point alike."""

from __future__ import annotations

from embedswap.analysis.latency_points import latency_points_of
from embedswap.analysis.latency_ratios import point_state
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import PointIntervals
from embedswap.summary.types_latency import LatencyTarget
from embedswap.summary.types_post import LatencyShown, ShownPoint

FIELDS = (("p50_ms", "p50"), ("p99_ms", "p99"), ("docs_per_s", "docs_per_s"))


def _targets(summary: SummaryBody) -> dict[str, LatencyTarget]:
    out = dict(summary.latency.by_target)
    for name, entry in summary.ablation.by_target.items():
        out.setdefault(name, entry)
    return out


def latency_shown(summary: SummaryBody, points: dict[str, dict[str, PointIntervals]]) -> LatencyShown:
    """``{statistic, by_target: {server: {run: {p50_ms, p99_ms, docs_per_s}}}}`` (no ratios: they are stored once,
    with their intervals, in ``decisions.latency.ratios``); ``points`` is ``decisions.latency.points``."""
    targets = _targets(summary)
    measured = [(name, run, point) for name, info in targets.items()
                for run, _, point in latency_points_of(info) if point_state(point) is True]
    pooled = bool(measured) and all(run in points.get(name, {}) for name, run, _ in measured)
    by_target: dict[str, dict[str, ShownPoint]] = {}
    for name, run, point in measured:
        if pooled:
            entry = points[name][run]
            figures = {field: _value(getattr(entry, key).value) for field, key in FIELDS}
        else:
            figures = {field: getattr(point, field) for field, _ in FIELDS}
        by_target.setdefault(name, {})[run] = ShownPoint(**figures)
    return LatencyShown(statistic="pooled" if pooled else "median_of_repeats", by_target=by_target)


def _value(value: float | None) -> float | None:
    return None if value is None else float(value)
