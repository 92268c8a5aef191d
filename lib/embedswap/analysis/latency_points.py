"""The operating points of one target's latency entry: the article's two (sequential, concurrent) and the sweep's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from embedswap.analysis.common import is_measured

FIXED_POINTS = ("sequential", "concurrent")
SWEEP_KEY = "sweep"


def point_label(run: str, point: dict[str, Any]) -> str:
    """'seq' for the sequential point, 'c4' for a closed loop at concurrency 4 (sweep points alike)."""
    if run == "sequential":
        return "seq"
    return f"c{point.get('concurrency')}"


def fixed_points_of(info: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(run, label, point) for the article's two operating points (sequential, concurrent) of one target."""
    if not is_measured(info):
        return
    for run in FIXED_POINTS:
        point = info.get(run)
        if isinstance(point, dict):
            yield run, point_label(run, point), point


def sweep_points_of(info: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(run, label, point) for every point of the concurrency sweep (``measure.capture_latency``: a list under
    ``sweep``, run names ``sweep_c<C>``), in capture order."""
    if not is_measured(info):
        return
    sweep = info.get(SWEEP_KEY)
    for point in sweep if isinstance(sweep, list) else []:
        if isinstance(point, dict):
            run = point.get("run") or SWEEP_KEY
            yield run, point_label(run, point), point


def latency_points_of(info: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(run, label, point) for every operating point of one target's latency entry, sweep points included."""
    yield from fixed_points_of(info)
    yield from sweep_points_of(info)
