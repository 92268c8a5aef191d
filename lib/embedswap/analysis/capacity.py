"""``decisions.capacity``: the largest request rate at which each server meets the latency target, with an
interval over repeats; each candidate's capacity against the legacy server's (a ratio verdict in the kit's
vocabulary, against the throughput margin); the replicas the stated traffic needs; where a server starts to shed
load (429) and why its goodput falls below its throughput.

Capacity of one repeat: walking the rates upwards, the last rate met before the first one missed. When the miss is
the p99 alone, the knee is placed between the two by linear interpolation of p99 against rate (the tail grows
smoothly there, and the grid alone would quantise every repeat to the same few rates, leaving no spread to make an
interval from); any other miss (errors, wrong vectors, an invalid run) keeps the last rate met. The interval over
repeats is the (1 - 2 alpha) t interval of the log capacities, as the latency ratios read theirs.
"""

from __future__ import annotations

import math
import statistics
import numpy as np

from embedswap.stats.equivalence import ALPHA, Verdict
from embedswap.stats.latency_equivalence import log_ratio_interval, ratio_verdict
from embedswap.analysis.stored_verdicts import stored
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_capacity import (Capacity, CapacityDecisions, CapacityTarget, OpenRun, RatePoint,
                                              ServerCapacity)


def repeat_capacity(runs: list[OpenRun], slo_p99_ms: float) -> tuple[float | None, str, str | None,
                                                                      float | None, float | None]:
    """(capacity, censored, limit, met_rate, missed_rate) of one repeat's runs, in rate order."""
    met: OpenRun | None = None
    for run in sorted(runs, key=lambda r: float(r.rate)):
        if not run.misses:
            met = run
            continue
        limit = run.misses[0]
        if met is None:
            return None, "below", limit, None, float(run.rate)
        if run.misses == ["p99"] and met.p99_ms is not None and run.p99_ms is not None and run.p99_ms > met.p99_ms:
            share = (slo_p99_ms - float(met.p99_ms)) / (float(run.p99_ms) - float(met.p99_ms))
            knee = float(met.rate) + max(0.0, min(1.0, share)) * (float(run.rate) - float(met.rate))
            return knee, "none", limit, float(met.rate), float(run.rate)
        return float(met.rate), "none", limit, float(met.rate), float(run.rate)
    return (float(met.rate), "above", None, float(met.rate), None) if met else (None, "below", None, None, None)


def log_interval(values: list[float], alpha: float = ALPHA) -> tuple[float | None, float | None, float | None]:
    """(geometric mean, low, high): the (1 - 2 alpha) t interval of the log values; no interval from one."""
    from scipy import stats

    logs = np.log(np.asarray(values, dtype=np.float64))
    centre = float(np.exp(logs.mean())) if len(logs) else None
    if len(logs) < 2:
        return centre, None, None
    half = float(stats.t.ppf(1 - alpha, len(logs) - 1)) * float(logs.std(ddof=1)) / math.sqrt(len(logs))
    return centre, float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))


def _points(target: CapacityTarget) -> list[RatePoint]:
    by_rate: dict[float, list[OpenRun]] = {}
    for run in target.runs:
        by_rate.setdefault(float(run.rate), []).append(run)
    out = []
    for rate, runs in sorted(by_rate.items()):
        valid = [r for r in runs if r.valid]
        p99 = [float(r.p99_ms) for r in valid if r.p99_ms is not None]
        p50 = [float(r.p50_ms) for r in valid if r.p50_ms is not None]
        tput = [float(r.throughput) for r in valid if r.throughput is not None]
        good = [float(r.goodput) for r in valid if r.goodput is not None]
        total = sum(r.requests for r in runs)
        out.append(RatePoint(rate=rate, repeats=len(runs), valid=len(valid),
                             p99_ms=statistics.median(p99) if p99 else None, p99_low=min(p99) if p99 else None,
                             p99_high=max(p99) if p99 else None, p50_ms=statistics.median(p50) if p50 else None,
                             throughput=statistics.median(tput) if tput else None,
                             goodput=statistics.median(good) if good else None,
                             shed_share=sum(r.shed for r in runs) / total if total else 0.0,
                             meets=bool(valid) and all(not r.misses for r in valid)))
    return out


def server_capacity(target: CapacityTarget, section: Capacity, alpha: float = ALPHA) -> ServerCapacity:
    slo = float(section.slo_p99_ms or 0)
    repeats: dict[int, list[OpenRun]] = {}
    for run in target.runs:
        repeats.setdefault(run.repeat, []).append(run)
    found = [repeat_capacity(runs, slo) for _, runs in sorted(repeats.items())]
    per_repeat = [c for c, *_ in found]
    censored = "above" if any(f[1] == "above" for f in found) else "below" if all(f[1] == "below" for f in found) \
        else "none"
    positive = [c for c in per_repeat if c]
    capacity, low, high = log_interval(positive, alpha) if positive and censored != "below" else (None, None, None)
    limits = [f[2] for f in found if f[2]]
    met = [f[3] for f in found if f[3] is not None]
    missed = [f[4] for f in found if f[4] is not None]
    points = _points(target)
    # the figures below stay unset (absent from summary.json) when they do not apply
    out = ServerCapacity(capacity=capacity, low=low, high=high, per_repeat=per_repeat, censored=censored,
                         limit=max(set(limits), key=limits.count) if limits else None,
                         met_rate=min(met) if met else None, missed_rate=min(missed) if missed else None,
                         invalid_rates=sorted({float(r.rate) for r in target.runs if not r.valid}), points=points)
    traffic = section.traffic
    if traffic and capacity:
        out.replicas = math.ceil(float(traffic) / capacity)
        if low and high:
            out.replicas_low, out.replicas_high = math.ceil(float(traffic) / high), math.ceil(float(traffic) / low)
    shedding = [p for p in points if p.shed_share > 0]
    if shedding:
        out.sheds_from, out.shed_share = shedding[0].rate, shedding[0].shed_share
        out.shed_share_max = max(p.shed_share for p in shedding)
    valid = [r for r in target.runs if r.valid]
    answered = sum(r.answered for r in valid)
    wrong = sum(r.wrong_vectors for r in valid)
    late = sum(r.late for r in valid)
    if answered and wrong:
        out.goodput_gap, out.goodput_gap_share = "wrong_vectors", wrong / answered
    elif answered and late:
        out.goodput_gap, out.goodput_gap_share = "late", late / answered
    return out


def capacity_decisions(summary: SummaryBody, config: DecisionsConfig) -> CapacityDecisions | None:
    """The ``decisions.capacity`` of a summary with a ``capacity`` section (None without one), against the
    experiment's typed ``decisions`` (its alpha and ``throughput_ratio`` margin)."""
    section = summary.capacity
    if section is None:
        return None
    alpha = config.alpha
    margin = config.margins.throughput_ratio
    servers = {name: server_capacity(t, section, alpha) for name, t in section.by_target.items() if t.measured}
    ratios: dict[str, Verdict] = {}
    legacy, unmeasured = summary.roles.legacy, ServerCapacity()
    base = [c for c in servers.get(legacy, unmeasured).per_repeat if c]
    bounded = servers.get(legacy, unmeasured).censored == "above"
    for name in summary.roles.candidates:
        mine = [c for c in servers.get(name, unmeasured).per_repeat if c]
        if mine and base and (bounded or servers.get(name, unmeasured).censored == "above"):
            # a server that met every rate tried has a lower bound, not a capacity: no ratio is decided from it
            ratios[name] = stored(Verdict(code="inconclusive", direction=None, low=None, high=None, margin=margin,
                                          estimate=statistics.geometric_mean(mine) / statistics.geometric_mean(base),
                                          n=min(len(mine), len(base)), n_needed=None, reason="capacity_censored"))
            continue
        if len(mine) >= 2 and len(base) >= 2:
            est, low, high, n = log_ratio_interval(mine, base, alpha)
            verdict = ratio_verdict(est, low, high, margin, n=n, confidence=1 - 2 * alpha, lower_is_better=False,
                                    faster_is_harmless=True, alpha=alpha)
        else:
            est = (statistics.geometric_mean(mine) / statistics.geometric_mean(base)) if mine and base else None
            verdict = ratio_verdict(est, None, None, margin, n=min(len(mine), len(base)), lower_is_better=False,
                                    alpha=alpha)
        ratios[name] = stored(verdict)
    return CapacityDecisions(slo_p99_ms=section.slo_p99_ms, slo_p50_ms=section.slo_p50_ms, traffic=section.traffic,
                             servers=servers, ratios=ratios)
