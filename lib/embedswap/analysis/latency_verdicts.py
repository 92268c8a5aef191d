"""Each candidate/legacy latency ratio decided against ``decisions.margins``: the error gate first, then the ratio's
equivalence verdict, then the host drift.

Per operating point (the article's two and the sweep's) and figure (p50: ``latency_p50_ratio``, p99:
``latency_p99_ratio``, docs/s: ``throughput_ratio``): a side whose error rate exceeds ``error_rate`` makes the point
``failed``, named by status (429 with its Retry-After, 5xx, timeout, other), and no ratio is read from the
requests that survived (:func:`~embedswap.stats.latency_equivalence.error_gate`); otherwise the stored 95 %
bootstrap interval of the ratio is decided by :func:`~embedswap.stats.latency_equivalence.ratio_verdict`
(faster is harmless: ``non_inferior``), then decided again on its interval widened by the host drift bound
(:mod:`embedswap.analysis.host_drift`): a verdict only the unwidened interval supports is ``inconclusive`` with
reason ``host_drift``. "No difference detected" (the interval covering 1) decides nothing.

Throughput counts answered documents only (a failed request's documents are not in docs/s).

The headline verdict of a candidate combines the figures of the article's two points (sequential, concurrent);
a p99 whose interval cannot be estimated at this n (fewer than 368 answered requests) is stored as
``inconclusive`` but left out of the combination, which would otherwise never decide at the demo's n.
"""

from __future__ import annotations

import math
from functools import partial

from embedswap.stats import equivalence as eq
from embedswap.analysis.host_drift import host_drift, with_drift
from embedswap.stats.latency_equivalence import error_gate, ratio_verdict
from embedswap.analysis.latency_points import latency_points_of
from embedswap.analysis.stored_verdicts import stored, stored_gate
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.types_decisions import (LatencyRatio, PointRatio, RatioInterval, WidenedInterval,
                                               WidenedPoint)
from embedswap.summary.types_equivalence import HostDrift, PointVerdicts
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget

# figure -> (its margin in decisions.margins, lower is better)
FIGURES = {"p50": ("latency_p50_ratio", True), "p99": ("latency_p99_ratio", True),
           "docs_per_s": ("throughput_ratio", False)}
HEADLINE_RUNS = ("sequential", "concurrent")
CONFIDENCE = 0.95  # the stored ratio intervals' (embedswap.analysis.intervals)


def point_of(info: LatencyTarget | None, run: str) -> LatencyPoint | None:
    """One operating point of a target by its run name, or None."""
    return next((p for r, _, p in latency_points_of(info) if r == run), None)


def gate(point: LatencyPoint | None, config: DecisionsConfig) -> eq.Verdict | None:
    """A point's requests by outcome class against ``error_rate`` (None without the point)."""
    if point is None:
        return None
    total = ((point.requests_per_repeat or 0) * (point.repeats or 0) if point.requests is None
             else sum(len(r) for r in point.requests.latency_ms))
    classes = dict(point.error_classes) or ({"other": point.errors} if point.errors else {})
    outcomes = {"ok": max(0, total - sum(classes.values())), **classes}
    waits = {"429": list(point.retry_after)} if point.retry_after else None
    return error_gate(outcomes, config.margins.error_rate, retry_after=waits, alpha=config.alpha,
                      power=config.power)


def widened(low: float | None, high: float | None, factor: float, alpha: float) -> tuple[float | None, float | None]:
    """A stored 95 % ratio interval widened by the drift bound ``factor`` on the log scale, pre-scaled so that the
    whole factor survives :func:`ratio_verdict`'s rescaling to its own (1 - 2 alpha) confidence."""
    from scipy import stats

    if low is None or high is None or factor <= 1:
        return low, high
    scale = float(stats.norm.ppf((1 + CONFIDENCE) / 2) / stats.norm.ppf(1 - alpha))
    stretch = math.exp(math.log(factor) * scale)
    return low / stretch, high * stretch


def widened_intervals(intervals: dict[str, PointRatio], factor: float | None,
                      alpha: float) -> dict[str, WidenedPoint]:
    """Each stored interval widened by the drift bound ``factor`` (empty where it does not exceed 1): the 95 %
    interval :func:`decided` hands the verdict. The verdict stores the same interval at its own (1 - 2 alpha)
    confidence, which at a small n can be narrower than the unwidened 95 % one; printed beside the ratio's own
    interval, a widened interval has to be this one."""
    if factor is None or factor <= 1:
        return {}
    return {run: WidenedPoint(**{key: WidenedInterval(**dict(zip(("low", "high"), widened(
        getattr(entry, key).low, getattr(entry, key).high, factor, alpha)))) for key in FIGURES})
        for run, entry in intervals.items()}


def decided(ratio: RatioInterval, margin: float, config: DecisionsConfig, widen: float, *, n: int | None,
            lower_is_better: bool, errors: eq.Verdict | None) -> eq.Verdict:
    """One ratio's verdict on its stored interval widened by the factor ``widen`` (1: as stored)."""
    low, high = widened(ratio.low, ratio.high, widen, config.alpha)
    return ratio_verdict(ratio.value, low, high, margin, n=n, confidence=CONFIDENCE, lower_is_better=lower_is_better,
                         errors=errors, alpha=config.alpha, power=config.power)


def point_verdicts(legacy: LatencyPoint | None, candidate: LatencyPoint | None, entry: PointRatio,
                   drift: HostDrift | None, config: DecisionsConfig
                   ) -> tuple[PointVerdicts, dict[str, eq.Verdict]]:
    """(the stored ``{errors: {candidate, legacy}, p50, p99, docs_per_s, verdict}``, the figures' verdicts) of one
    point."""
    gates = {"candidate": gate(candidate, config), "legacy": gate(legacy, config)}
    failed = next((side for side in ("candidate", "legacy") if gates[side] is not None
                   and gates[side].code == "failed"), None)
    deciding = gates[failed] if failed else gates["candidate"]
    figures: dict[str, eq.Verdict] = {}
    for key, (margin_name, lower_is_better) in FIGURES.items():
        ratio = getattr(entry, key)
        margin = getattr(config.margins, margin_name)
        n = min((x for x in ratio.n if x is not None), default=None)
        decide = partial(decided, ratio, margin, config, n=n, lower_is_better=lower_is_better, errors=deciding)
        v = decide(1.0)
        if failed == "legacy":
            v = v.but(reason="legacy_error_rate_above_margin")
        figures[key] = with_drift(v, drift, margin, decide if failed is None else None)
    deciding_figures = {k: v for k, v in figures.items() if v.reason != "missing_interval"} or figures
    point = PointVerdicts(errors={k: stored_gate(v) for k, v in gates.items() if v is not None},
                          p50=stored(figures["p50"]), p99=stored(figures["p99"]),
                          docs_per_s=stored(figures["docs_per_s"]), verdict=stored(eq.combine(deciding_figures)))
    return point, figures


def candidate_verdicts(legacy_name: str, legacy: LatencyTarget | None, name: str, candidate: LatencyTarget | None,
                       intervals: dict[str, PointRatio], config: DecisionsConfig,
                       aba: dict[str, float] | None = None,
                       aba_intervals: dict[str, tuple[float, float]] | None = None,
                       interleaved: bool = False) -> LatencyRatio:
    """One candidate's ``intervals`` with their ``verdicts: {run: ...}``, the headline ``verdict`` and the
    ``drift``; ``legacy``: the reference its ratios divide by (``interleaved``: the legacy runs alternating with
    its own)."""
    drift = host_drift(legacy_name, legacy, name, candidate, aba, aba_intervals, interleaved=interleaved)
    verdicts: dict[str, PointVerdicts] = {}
    headline: dict[str, eq.Verdict] = {}
    for run, entry in intervals.items():
        stored_point, figures = point_verdicts(point_of(legacy, run), point_of(candidate, run), entry, drift, config)
        verdicts[run] = stored_point
        if run in HEADLINE_RUNS:
            headline.update({f"{run}:{k}": v for k, v in figures.items() if v.reason != "missing_interval"})
    out = LatencyRatio(intervals=intervals)
    if verdicts:  # nothing to decide (no interval paired): the keys stay unset, as before the verdicts
        out.verdicts = verdicts
        out.verdict = stored(eq.combine(headline)) if headline else None
    if drift is not None:
        out.drift = HostDrift.model_validate(drift.model_dump())  # every field set, as summary.json stores it
        if widening := widened_intervals(intervals, drift.bound, config.alpha):
            out.widened = widening
    return out
