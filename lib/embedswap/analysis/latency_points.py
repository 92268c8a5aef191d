"""The operating points of one target's latency entry: the article's two (sequential, concurrent) and the sweep's."""

from __future__ import annotations

from collections.abc import Iterator

from embedswap.analysis.common import is_measured
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget

FIXED_POINTS = ("sequential", "concurrent")
SWEEP_KEY = "sweep"


def point_label(run: str, point: LatencyPoint) -> str:
    """'seq' for the sequential point, 'c4' for a closed loop at concurrency 4 (sweep points alike)."""
    if run == "sequential":
        return "seq"
    return f"c{point.concurrency}"


def fixed_points_of(info: LatencyTarget | None) -> Iterator[tuple[str, str, LatencyPoint]]:
    """(run, label, point) for the article's two operating points (sequential, concurrent) of one target."""
    if info is None or not is_measured(info):
        return
    for run in FIXED_POINTS:
        point = getattr(info, run)
        if point is not None:
            yield run, point_label(run, point), point


def sweep_points_of(info: LatencyTarget | None) -> Iterator[tuple[str, str, LatencyPoint]]:
    """(run, label, point) for every point of the concurrency sweep (``measure.capture_latency``: a list under
    ``sweep``, run names ``sweep_c<C>``), in capture order."""
    if info is None or not is_measured(info):
        return
    for point in info.sweep:
        run = point.run or SWEEP_KEY
        yield run, point_label(run, point), point


def latency_points_of(info: LatencyTarget | None) -> Iterator[tuple[str, str, LatencyPoint]]:
    """(run, label, point) for every operating point of one target's latency entry, sweep points included."""
    yield from fixed_points_of(info)
    yield from sweep_points_of(info)
