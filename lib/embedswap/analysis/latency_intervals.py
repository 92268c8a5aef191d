"""Intervals of every latency operating point and the ratios that compare them, from the per-request data
the summary holds for each point (``requests``: latency and docs per request, grouped by repeat, wall per repeat;
:mod:`embedswap.analysis.intervals` has the method).

Stored under ``decisions.latency``: ``points.<target>.<run>`` (p50/p90/p99/docs/s with interval and n; run: ``sequential``, ``concurrent``,
``sweep_c<C>``), ``ratios.<candidate>.intervals.<run>`` (candidate / legacy) and, for the lock ablation,
``lock.variants[i].intervals.<run>`` (lock-free / locked). A point without per-request data (no ``requests``)
gets no interval: ``points`` omits it and a ratio's verdict is ``missing``.
"""

from __future__ import annotations

import numpy as np

from embedswap.analysis.intervals import Requests, estimate, ratio, seed_for
from embedswap.analysis.latency_points import latency_points_of
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import PointIntervals, PointRatio
from embedswap.summary.types_latency import LatencyTarget

Estimate = tuple[PointIntervals, dict[str, np.ndarray]]


def target_estimates(name: str, info: LatencyTarget | None) -> dict[str, Estimate]:
    """run -> (intervals, replicates) for every point of one target that holds per-request data."""
    out: dict[str, Estimate] = {}
    for run, _, point in latency_points_of(info):
        requests = Requests.of(point.requests)
        if requests is not None and run not in out:
            out[run] = estimate(requests, seed_for(name, run))
    return out


def all_estimates(summary: SummaryBody) -> dict[str, dict[str, Estimate]]:
    """Every target of the latency section and every lock-ablation variant (keyed by target name)."""
    entries = dict(summary.latency.by_target)
    for name, row in summary.ablation.by_target.items():
        entries.setdefault(name, row)
    return {name: target_estimates(name, info) for name, info in entries.items()}


def compare(candidate: dict[str, Estimate], reference: dict[str, Estimate],
            paired: bool = False) -> dict[str, PointRatio]:
    """label -> ratio (candidate / reference) for the points both sides measured (``paired``: in alternating
    blocks, :func:`embedswap.analysis.intervals.ratio`)."""
    return {label: ratio(candidate[label], reference[label], paired=paired) for label in candidate
            if label in reference}


def points(estimates: dict[str, dict[str, Estimate]]) -> dict[str, dict[str, PointIntervals]]:
    """The stored part: intervals without replicates."""
    return {name: {label: est[0] for label, est in by_label.items()} for name, by_label in estimates.items()
            if by_label}
