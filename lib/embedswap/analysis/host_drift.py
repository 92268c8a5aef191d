"""Host drift between the legacy and a candidate latency phase, as a bound with its own uncertainty, and what it
does to a ratio's verdict.

The servers are measured one after the other; a ratio's interval covers the request noise of the run, not the
host changing between the phases (another job loading the CPU while only one server is measured gave opposite
verdicts with narrow intervals on this kind of 2-core host). Two gauges read that change:

- the calibration workload (:mod:`embedswap.measure.host_state`), timed before, between the repeats and after each
  phase while the server idles: the candidate phase's readings over the legacy phase's, and each phase's second
  half over its first, each with a 95 % Welch interval on the log readings;
- where the legacy server was measured again after the candidates (A-B-A, ``sequencing.restore_latency``): its
  second measurement over its first, per figure, with the bootstrap interval of that ratio;
- the CPU other jobs used during each segment of a phase (``foreign_cores``, read from /proc: neither the server
  under test nor the kit): the legacy phase's share of the CPUs minus the candidate's, with a 95 % Welch interval.
  A server that wants every core, sharing the host fairly with other work of ``f`` of its ``n`` cores, gets
  ``n / (n + f)`` of them: the established difference ``d`` is read as a factor ``1 + d``. The wall-time gauge can
  miss such a load entirely (the scheduler may place it on the other core), this one cannot.

A gauge moves by itself: on a quiet host the calibration moved 16 -> 19 ms within one phase (docs/equivalence.md).
Read as a switch (drift factor above the margin: inconclusive), that noise refused a 26 % effect. Here each gauge
gives only the drift its readings establish beyond their own noise: the end of its interval nearest 1 (nothing
when the interval covers 1). The largest of them is the **bound**; a ratio's interval is widened by it on the log
scale and decided again. The widened verdict stands when it decides (``different``, ``equivalent``,
``non_inferior``); a verdict that only the unwidened interval supports is ``inconclusive`` with reason
``host_drift``, as is an undecided one whose bound alone exceeds the margin. Where the bound exceeds the margin, a
verdict in the direction the drift itself would produce is ``host_drift`` too, however far beyond the bound: how
much a server slows under a load is not how much the single-threaded gauge slows (threads that wait on each other
lose more). ``factor`` (the largest point reading, noise included) stays for the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from embedswap.stats.equivalence import Verdict
from embedswap.stats.latency_equivalence import log_ratio_interval
from embedswap.summary.types_equivalence import HostDrift
from embedswap.summary.types_latency import HostPhase, LatencyTarget

GAUGE_ALPHA = 0.025  # one-sided: the gauges' intervals are 95 %, as the ratios'


def _factor(ratio: float | None) -> float | None:
    return math.exp(abs(math.log(ratio))) if ratio is not None and ratio > 0 else None


def established(low: float | None, high: float | None) -> float:
    """The drift an interval establishes as a factor >= 1: its end nearest 1, or 1 when it covers 1."""
    if low is None or high is None or not (low > 0 and high > 0) or low <= 1 <= high:
        return 1.0
    return 1 / high if high < 1 else low


def readings(phase: HostPhase | None) -> list[float]:
    """A phase's calibration readings (before, between the repeats, after); older captures and interleaved phases:
    before and after."""
    if phase is None:
        return []
    if phase.readings_ms:
        return [float(r) for r in phase.readings_ms if r and r > 0]
    ends = [r.calibration_ms for r in (phase.before, phase.after) if r is not None and r.calibration_ms]
    return [float(r) for r in ends]


def gauge_interval(later: Sequence[float], earlier: Sequence[float]) -> tuple[float, float, float] | None:
    """(ratio, low, high) of ``later`` over ``earlier`` readings: geometric means with a 95 % Welch interval on the
    logs (None with fewer than two readings on a side)."""
    if len(later) < 2 or len(earlier) < 2:
        return None
    value, low, high, _ = log_ratio_interval(later, earlier, alpha=GAUGE_ALPHA)
    return value, low, high


def foreign_interval(legacy: HostPhase | None, candidate: HostPhase | None) -> tuple[float, float, float] | None:
    """(difference, low, high): the legacy phase's mean foreign share of the CPUs minus the candidate phase's, with
    a 95 % Welch interval over the phases' segments (None with fewer than two segments on a side)."""
    from scipy import stats

    if legacy is None or candidate is None or len(legacy.foreign_cores) < 2 or len(candidate.foreign_cores) < 2:
        return None
    cpus = next((p.before.cpus for p in (legacy, candidate) if p.before is not None and p.before.cpus), None) or 1
    a = np.asarray(legacy.foreign_cores, dtype=np.float64) / cpus
    b = np.asarray(candidate.foreign_cores, dtype=np.float64) / cpus
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    diff = float(a.mean() - b.mean())
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    tc = float(stats.t.ppf(1 - GAUGE_ALPHA, df))
    return diff, diff - tc * se, diff + tc * se


def foreign_factor(low: float, high: float) -> float:
    """The slowdown factor a difference in foreign load establishes: 1 + the end of its interval nearest 0."""
    return 1 + low if low > 0 else (1 - high if high < 0 else 1.0)


def _within(phase: HostPhase | None) -> float | None:
    if phase is None or phase.before is None or phase.after is None:
        return None
    before, after = phase.before.calibration_ms, phase.after.calibration_ms
    return after / before if before and after else None


def _halves(values: list[float]) -> tuple[float, float, float] | None:
    """A phase's second half of readings over its first (a trend inside the phase), with its interval."""
    half = len(values) // 2
    return gauge_interval(values[len(values) - half:], values[:half]) if half >= 2 else None


def host_drift(legacy_name: str, legacy: LatencyTarget | None, name: str, candidate: LatencyTarget | None,
               aba: dict[str, float] | None = None,
               aba_intervals: dict[str, tuple[float, float]] | None = None,
               interleaved: bool = False) -> HostDrift | None:
    """The drift between the legacy phase and one candidate's (None when neither phase recorded the host and
    there is no A-B-A measurement). ``interleaved``: the two sides were measured in alternating blocks of one
    phase, so a trend within it reached both alike and is no bound (the gauges between the sides read the same
    readings: no drift); A-B-A is not read for them. Since nothing here decides on an interleaved phase's readings,
    its capture takes only the two around the phase (``measure.latency.capture_latency``; older captures: one after
    each run too), and its ratio of identical readings stays 1 with two or many."""
    if interleaved:
        aba, aba_intervals = None, None
    phases = {legacy_name: legacy.host if legacy is not None else None,
              name: candidate.host if candidate is not None else None}
    aba = {k: v for k, v in (aba or {}).items() if v is not None and v > 0}
    if all(p is None for p in phases.values()) and not aba:
        return None
    lc = phases[legacy_name].calibration_ms if phases[legacy_name] is not None else None
    cc = phases[name].calibration_ms if phases[name] is not None else None
    ratio = cc / lc if lc and cc else None
    within = {n: w for n, p in phases.items() if (w := _within(p)) is not None}
    factors = [f for f in [_factor(ratio), *map(_factor, within.values()), *map(_factor, aba.values())]
               if f is not None]
    load = {n: float(p.before.load_1m) for n, p in phases.items()
            if p is not None and p.before is not None and p.before.load_1m is not None}
    steal = {n: float(p.steal_share) for n, p in phases.items() if p is not None and p.steal_share is not None}
    between = gauge_interval(readings(phases[name]), readings(phases[legacy_name]))
    bounds: dict[str, float] = {}
    if between is not None:
        bounds["calibration"] = established(between[1], between[2])
    for n, p in phases.items() if not interleaved else ():
        if (trend := _halves(readings(p))) is not None:
            bounds[f"within:{n}"] = established(trend[1], trend[2])
    foreign = foreign_interval(phases[legacy_name], phases[name])
    if foreign is not None:
        bounds["foreign_cpu"] = foreign_factor(foreign[1], foreign[2])
        factors.append(1 + abs(foreign[0]))
    kept = {k: [float(lo), float(hi)] for k, (lo, hi) in (aba_intervals or {}).items() if lo and hi}
    bounds.update({f"aba:{k}": established(lo, hi) for k, (lo, hi) in kept.items()})
    source = max(bounds, key=lambda k: bounds[k]) if bounds else None
    bound = bounds[source] if source is not None else None
    return HostDrift(calibration_ratio=ratio, legacy_calibration_ms=lc, candidate_calibration_ms=cc, within=within,
                     aba=aba, load_1m=load, steal_share=steal, factor=max(factors) if factors else None,
                     calibration_low=between[1] if between else None,
                     calibration_high=between[2] if between else None, aba_intervals=kept, bound=bound,
                     bound_source=source if bound is not None and bound > 1 else None,
                     foreign_cores={n: round(float(np.mean(p.foreign_cores)), 4) for n, p in phases.items()
                                    if p is not None and p.foreign_cores},
                     foreign_low=foreign[1] if foreign else None, foreign_high=foreign[2] if foreign else None,
                     design="interleaved" if interleaved else "phased")


def suspect(drift: HostDrift) -> tuple[str, ...]:
    """The directions a drift read on the gauge may produce beyond its own size: the calibration slower during the
    legacy phase makes the candidate look faster (and the reverse), a trend within a phase either way. An A-B-A
    change is read on the server itself: its bound is already the server's own drift, nothing more is suspect."""
    source = drift.bound_source or ""
    if source == "calibration" and drift.calibration_ratio is not None:
        return ("faster",) if drift.calibration_ratio < 1 else ("slower",)
    if source == "foreign_cpu" and drift.foreign_low is not None and drift.foreign_high is not None:
        return ("faster",) if drift.foreign_low + drift.foreign_high > 0 else ("slower",)
    return () if source.startswith("aba:") else ("faster", "slower")


def with_drift(verdict: Verdict, drift: HostDrift | None, margin: float,
               decide: Callable[[float], Verdict] | None = None) -> Verdict:
    """The verdict decided on the ratio's interval widened by the drift bound (``decide(widen)`` decides the ratio
    with its interval widened by the factor ``widen``). The widened verdict stands when it decides; a verdict that
    only the unwidened interval supports is ``inconclusive`` with reason ``host_drift``, as is an undecided one
    whose bound alone exceeds the margin, and, where the bound exceeds the margin, a verdict in the direction the
    drift itself would produce (a server may slow down more than the gauge: several threads contend worse than one
    sort); a verdict that holds on the widened interval stands otherwise. A
    ``failed`` point stays failed: its errors decide it whatever the host did. Without ``decide`` the verdict is
    taken as its own widened verdict."""
    if drift is None or drift.bound is None or drift.bound <= 1 or verdict.code == "failed":
        return verdict
    bound = drift.bound
    drifted = verdict.but(code="inconclusive", direction=None, n_needed=None, reason="host_drift",
                      params={**verdict.params, "drift": bound, "was": verdict.code})
    widened = decide(bound) if decide is not None else verdict
    widened = widened.but(params={**widened.params, "drift": bound})
    if bound > margin and widened.direction is not None and widened.direction in suspect(drift):
        return drifted  # the host moved by more than the margin, the way this verdict points
    if widened.code not in ("inconclusive", "failed"):
        return widened  # it holds beyond any drift the gauges establish
    if verdict.code == "inconclusive" and bound <= margin:
        return widened  # undecided with or without the drift: its own reason says why
    return drifted
