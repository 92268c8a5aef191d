"""Host drift between the legacy and a candidate latency phase, and what it does to a ratio's verdict.

The servers are measured one after the other; a ratio's interval covers the request noise of the run, not the
host changing between the phases (another job loading the CPU while only one server is measured gave opposite
verdicts with narrow intervals on this kind of 2-core host). Each latency phase records a fixed calibration
workload's time before and after (:mod:`embedswap.measure.host_state`). The drift of a candidate's ratios is the
largest of: the candidate phase's calibration time over the legacy phase's, each phase's after / before, and, where
the legacy server was measured again after the candidates (A-B-A), its second measurement over its first; as a
factor >= 1. A ratio whose drift exceeds the ratio's own margin is ``inconclusive`` with reason ``host_drift``:
the host moved by more than the change the margin accepts, so no verdict on the servers can be read from it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from embedswap.analysis.equivalence import Verdict
from embedswap.summary.types_equivalence import HostDrift
from embedswap.summary.types_latency import HostPhase, LatencyTarget


def _factor(ratio: float | None) -> float | None:
    return math.exp(abs(math.log(ratio))) if ratio is not None and ratio > 0 else None


def _within(phase: HostPhase | None) -> float | None:
    if phase is None or phase.before is None or phase.after is None:
        return None
    before, after = phase.before.calibration_ms, phase.after.calibration_ms
    return after / before if before and after else None


def host_drift(legacy_name: str, legacy: LatencyTarget | None, name: str, candidate: LatencyTarget | None,
               aba: dict[str, float] | None = None) -> HostDrift | None:
    """The drift between the legacy phase and one candidate's (None when neither phase recorded the host and
    there is no A-B-A measurement)."""
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
    return HostDrift(calibration_ratio=ratio, legacy_calibration_ms=lc, candidate_calibration_ms=cc, within=within,
                     aba=aba, load_1m=load, steal_share=steal, factor=max(factors) if factors else None)


def with_drift(verdict: Verdict, drift: HostDrift | None, margin: float) -> Verdict:
    """The verdict, or ``inconclusive`` (reason ``host_drift``) when the drift exceeds the ratio's margin. A
    ``failed`` point stays failed: its errors decide it whatever the host did."""
    if drift is None or drift.factor is None or verdict.code == "failed" or drift.factor <= margin:
        return verdict
    return replace(verdict, code="inconclusive", direction=None, n_needed=None, reason="host_drift",
                   params={**verdict.params, "drift": drift.factor, "was": verdict.code})
