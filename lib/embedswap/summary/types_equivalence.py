"""Verdicts against the margins of ``decisions.margins`` as summary.json stores them
(:mod:`embedswap.stats.equivalence`): one figure's verdict, a latency point's error gate, the host drift beside a
latency ratio, and per-slice (language) verdicts of one comparison."""

from __future__ import annotations

from typing import Literal

from embedswap.stats.equivalence import Code, Verdict
from embedswap.summary.types_common import Strict

__all__ = ["Code", "ErrorGate", "HostDrift", "PointVerdicts", "SlicedVerdicts", "Verdict"]



class ErrorGate(Verdict):
    """A latency point's error rate against ``error_rate``: ``failed`` names the statuses (``429``, ``5xx``,
    ``timeout``, ``other``; most frequent first) and the Retry-After values a refusal sent."""
    statuses: dict[str, int] = {}
    retry_after: list[str] = []
    requests: int | None = None
    errors: int | None = None


class HostDrift(Strict):
    """How much the host itself changed between the legacy and the candidate latency phases.

    ``calibration_ratio``: the fixed calibration workload's time in the candidate's phase over the legacy phase's
    (> 1: the host was slower while the candidate was measured); ``within``: per server, its phase's calibration
    after / before; ``aba``: per figure, the legacy server measured again after the candidates over its first
    measurement (A-B-A; empty when it was not re-measured); ``factor``: the largest of them as a factor >= 1 (what
    the gauges read, their own noise included).

    ``calibration_low``/``calibration_high``: the 95 % interval of ``calibration_ratio`` from the phases' repeated
    readings (the gauge's own noise); ``aba_intervals``: the 95 % interval of each A-B-A ratio; ``bound``: the
    drift the readings establish beyond their noise (the end of the interval nearest 1, as a factor >= 1; 1 when
    every interval covers 1), by which each ratio's interval is widened before it is decided; ``bound_source``:
    which reading set it (``calibration``, ``foreign_cpu`` or an A-B-A figure).

    ``foreign_cores``: per server, the mean cores' worth of CPU other jobs used during its phase, and
    ``foreign_low``/``foreign_high`` the 95 % interval of the legacy phase's foreign share of the CPUs minus the
    candidate phase's (> 0: the host was busier with other work while legacy was measured)."""
    calibration_ratio: float | None = None
    legacy_calibration_ms: float | None = None
    candidate_calibration_ms: float | None = None
    within: dict[str, float] = {}
    aba: dict[str, float] = {}
    load_1m: dict[str, float] = {}  # per server, the 1-minute load average at the start of its phase
    steal_share: dict[str, float] = {}
    factor: float | None = None
    calibration_low: float | None = None
    calibration_high: float | None = None
    aba_intervals: dict[str, list[float]] = {}
    bound: float | None = None
    bound_source: str | None = None
    foreign_cores: dict[str, float] = {}
    foreign_low: float | None = None
    foreign_high: float | None = None
    # phased: each server in a phase of its own (drift bounded by the gauges); interleaved: alternating blocks
    # of one phase (sequencing.interleave), drift reaches both sides alike and cancels in the ratio
    design: Literal["phased", "interleaved"] = "phased"


class PointVerdicts(Strict):
    """One operating point of one candidate against legacy: the error gate of each side, the ratio verdicts
    (candidate / legacy) and the point's combined verdict. A point whose error rate exceeds its margin is
    ``failed`` on every figure: no ratio is read from its surviving requests."""
    errors: dict[str, ErrorGate] = {}  # by side: candidate, legacy
    p50: Verdict | None = None
    p99: Verdict | None = None
    docs_per_s: Verdict | None = None
    verdict: Verdict | None = None

    def figure(self, key: str) -> Verdict | None:
        """The verdict of one figure (p50, p99, docs_per_s), or None: not decided."""
        return getattr(self, key) if key in ("p50", "p99", "docs_per_s") else None


class SlicedVerdicts(Strict):
    """One comparison decided per slice (language, query tag) with Holm's correction across the slices: the
    overall verdict (``slices`` names the slices that decided it) and each slice's."""
    overall: Verdict
    by_slice: dict[str, Verdict] = {}
    kind: Literal["lang", "tag"] = "lang"

    def worse(self) -> list[str]:
        """The slices that are harmfully different (worse / slower) or failed."""
        return [k for k, v in self.by_slice.items()
                if v.code == "failed" or (v.code == "different" and v.direction in ("worse", "slower"))]
