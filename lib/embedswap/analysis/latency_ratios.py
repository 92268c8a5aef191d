"""Latency ratios of each candidate to legacy, and how much of the concurrent gap the legacy server's lock explains.

The article reads the concurrent gap as the legacy server's one global lock. That reading is *measured* only when
the lock ablation ran (the legacy server with the lock against a variant without it): the share of a candidate's
concurrent throughput advantage that the lock-free variant recovers is then
``(free - locked) / (candidate - locked)``. Without the ablation it stays the article's estimate (the locked
server's concurrent/sequential p50 factor), unconfirmed.
"""

from __future__ import annotations

from embedswap.analysis import latency_intervals
from embedswap.analysis.latency_intervals import Estimate
from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.concurrency_gain import concurrency_gains
from embedswap.captures import PAIRED_LEGACY
from embedswap.analysis.latency_points import latency_points_of
from embedswap.analysis.latency_verdicts import candidate_verdicts
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody, TargetSettings
from embedswap.summary.types_decisions import (LatencyDecisions, LatencyRatio, LockReading, LockShare, LockVariant,
                                               PairRatio, PointRatio)
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget


def point_state(point: LatencyPoint | None) -> bool | None:
    """True: the point has numbers; None: it ran but every request failed (unconfirmed); False: absent."""
    if point is None:
        return False
    values = [point.p50_ms, point.p99_ms, point.docs_per_s]
    return True if any(v is not None for v in values) else None


def latency_state(info: LatencyTarget | None) -> bool | None:
    """True when a target's latency entry has a number, None when it ran without one, False when absent."""
    if info is None or not is_measured(info):
        return False
    states = [point_state(p) for _, _, p in latency_points_of(info)]
    return True if any(s is True for s in states) else None


def _value(entry: LatencyTarget | None, run: str, key: str) -> float | None:
    point = getattr(entry, run) if entry is not None and is_measured(entry) else None
    return getattr(point, key) if point is not None else None


def _intervals(estimates: dict[str, dict[str, Estimate]], name: str, reference: str) -> dict[str, PointRatio]:
    """Per point, ``name`` / ``reference`` with its interval (estimates are keyed by target name)."""
    return latency_intervals.compare(estimates.get(name) or {}, estimates.get(reference) or {})


def _divide(a: float | None, b: float | None) -> float | None:
    return a / b if b and a is not None else None


def _share(rate: float | None, lock_rate: float | None, free_rate: float | None) -> tuple[str, float | None]:
    if rate is None or lock_rate is None or free_rate is None:
        return "missing", None
    if rate <= lock_rate:
        return "no_advantage", None
    share = (free_rate - lock_rate) / (rate - lock_rate)
    return ("all" if share >= 1 else "part" if share >= 0 else "none"), share


def lock_measured(summary: SummaryBody, base: LatencyTarget, variants: list[tuple[str, LatencyTarget]],
                  estimates: dict[str, dict[str, Estimate]] | None = None) -> LockReading:
    """The lock ablation's reading: per lock-free variant, its ratios (with intervals: lock-free / locked, per
    point) and each candidate's recovered share."""
    estimates = estimates if estimates is not None else latency_intervals.all_estimates(summary)
    legacy_name = roles(summary)[0]
    by_target = summary.latency.by_target

    def shown(name: str, entry: LatencyTarget | None, field: str, key: str) -> float | None:
        # the figure the report shows (decisions.shown): pooled over the repeats when per-request data exists
        pooled = (estimates.get(name) or {}).get("concurrent")
        return getattr(pooled[0], key).value if pooled is not None else _value(entry, "concurrent", field)

    lock_rate, lock_p50 = (shown(legacy_name, base, "docs_per_s", "docs_per_s"),
                           shown(legacy_name, base, "p50_ms", "p50"))
    out = []
    for name, row in variants:
        free_rate = shown(name, row, "docs_per_s", "docs_per_s")
        shares = []
        for candidate in roles(summary)[1]:
            rate = shown(candidate, by_target.get(candidate), "docs_per_s", "docs_per_s")
            case, share = _share(rate, lock_rate, free_rate)
            shares.append(LockShare(candidate=candidate, case=case, share=share))
        out.append(LockVariant(variant=name, rate_ratio=_divide(free_rate, lock_rate),
                               p50_ratio=_divide(shown(name, row, "p50_ms", "p50"), lock_p50), shares=shares,
                               intervals=_intervals(estimates, name, legacy_name)))
    return LockReading(measured=True, variants=out)  # factor unset: the estimate's, not stored with a measurement


def lock_estimate(summary: SummaryBody, estimates: dict[str, dict[str, Estimate]] | None = None
                  ) -> LockReading | None:
    """The article's estimate (unconfirmed): the locked legacy server's concurrent / sequential p50, pooled over
    the repeats when both points have per-request data (the figures the latency table shows), else their medians."""
    legacy_name = roles(summary)[0]
    legacy = summary.latency.by_target.get(legacy_name)
    target = summary.target(legacy_name)
    config = target.config if target is not None else TargetSettings()
    if config.kind != "legacy" or not config.lock or latency_state(legacy) is not True:
        return None
    seq, conc = _value(legacy, "sequential", "p50_ms"), _value(legacy, "concurrent", "p50_ms")
    pooled = (estimates or {}).get(legacy_name) or {}
    if "sequential" in pooled and "concurrent" in pooled:
        seq, conc = (pooled[run][0].p50.value for run in ("sequential", "concurrent"))
    if not seq or conc is None:
        return None
    return LockReading(measured=False, factor=conc / seq)  # variants unset: none measured


def lock_reading(summary: SummaryBody, estimates: dict[str, dict[str, Estimate]] | None = None
                 ) -> LockReading | None:
    """Measured when the ablation has the locked legacy server and a lock-free variant with numbers, else the
    estimate, else None (no lock to speak of)."""
    legacy_name = roles(summary)[0]
    section = summary.ablation
    base = section.by_target.get(legacy_name)
    variants = [(n, r) for n, r in section.by_target.items()
                if n != legacy_name and r.lock is False and latency_state(r) is True]
    if is_measured(section) and base is not None and base.lock is True and latency_state(base) is True and variants:
        return lock_measured(summary, base, variants, estimates)
    return lock_estimate(summary, estimates)


def aba_drift(legacy: LatencyTarget | None, summary: SummaryBody) -> dict[str, float]:
    """The legacy server measured again after the candidates over its first measurement (A-B-A), per point and
    figure (``sequential:p50``, ``concurrent:docs_per_s``, ...); empty without a second measurement."""
    restore = summary.restore
    again = restore.latency if restore is not None and is_measured(restore) else None
    out: dict[str, float] = {}
    for run in ("sequential", "concurrent"):
        for figure, key in (("p50", "p50_ms"), ("docs_per_s", "docs_per_s")):
            value = _divide(_value(again, run, key), _value(legacy, run, key))
            if value is not None:
                out[f"{run}:{figure}"] = value
    return out


def aba_intervals(legacy: LatencyTarget | None, summary: SummaryBody, legacy_name: str,
                  estimates: dict[str, dict[str, Estimate]]) -> dict[str, tuple[float, float]]:
    """The 95 % bootstrap interval of each A-B-A ratio (second legacy measurement over its first) that both
    measurements' per-request data allow, keyed as :func:`aba_drift`."""
    restore = summary.restore
    again = restore.latency if restore is not None and is_measured(restore) else None
    if again is None or legacy is None:
        return {}
    second = latency_intervals.target_estimates(f"{legacy_name}/restore", again)
    out: dict[str, tuple[float, float]] = {}
    for run, entry in latency_intervals.compare(second, estimates.get(legacy_name) or {}).items():
        for figure in ("p50", "docs_per_s"):
            low, high = getattr(entry, figure).low, getattr(entry, figure).high
            if run in ("sequential", "concurrent") and low is not None and high is not None:
                out[f"{run}:{figure}"] = (low, high)
    return out


def latency_decisions(summary: SummaryBody, config: DecisionsConfig) -> LatencyDecisions:
    """``{ratios: {candidate: {..., intervals: {label: ...}, verdicts: {run: ...}, verdict, drift}}, points:
    {target: {label: ...}}, lock: {...} | None}`` (intervals: :mod:`embedswap.analysis.latency_intervals`; verdicts
    against the margins, the error gate and the host drift: :mod:`embedswap.analysis.latency_verdicts`)."""
    legacy_name, candidates = roles(summary)
    by_target = summary.latency.by_target
    legacy = by_target.get(legacy_name)
    estimates = latency_intervals.all_estimates(summary)
    ratios: dict[str, LatencyRatio] = {}
    aba, aba_ci = aba_drift(legacy, summary), aba_intervals(legacy, summary, legacy_name, estimates)
    for name in candidates:
        paired = summary.latency.paired_legacy.get(name)  # sequencing.interleave: legacy alternating with it
        if paired is not None:
            reference = latency_intervals.target_estimates(f"{name}/{PAIRED_LEGACY}", paired)
            intervals = latency_intervals.compare(estimates.get(name) or {}, reference, paired=True)
        else:
            intervals = _intervals(estimates, name, legacy_name)
        ratios[name] = candidate_verdicts(legacy_name, paired or legacy, name, by_target.get(name), intervals, config,
                                          aba, aba_ci, interleaved=paired is not None)
    out = LatencyDecisions(ratios=ratios, points=latency_intervals.points(estimates),
                           lock=lock_reading(summary, estimates),
                           concurrency=concurrency_gains(summary, config, estimates))
    if pairs := candidate_pairs(summary, candidates, estimates, config, aba, aba_ci):
        out.pairs = pairs  # set only with two candidates or more: summary.json has no ``pairs`` key otherwise
    return out


def candidate_pairs(summary: SummaryBody, candidates: list[str], estimates: dict[str, dict[str, Estimate]],
                    config: DecisionsConfig, aba: dict[str, float], aba_ci: dict[str, tuple[float, float]]
                    ) -> list[PairRatio]:
    """Every two candidates with per-request latency, the later over the earlier, decided exactly as a candidate
    over the legacy server (:func:`candidate_verdicts`): the same margins, the same error gate, and the host drift
    between their two phases. A candidate measured interleaved with the legacy server is left out: its own phase
    has no drift gauge against another candidate's."""
    by_target = summary.latency.by_target
    usable = [n for n in candidates if estimates.get(n) and n not in summary.latency.paired_legacy]
    out = []
    for i, first in enumerate(usable):
        for second in usable[i + 1:]:
            intervals = _intervals(estimates, second, first)
            if not intervals:
                continue
            ratio = candidate_verdicts(first, by_target.get(first), second, by_target.get(second), intervals, config,
                                       aba, aba_ci)
            out.append(PairRatio(first=first, second=second, ratio=ratio))
    return out
