"""The faults section of summary.json (per server and part, unusable answers by kind) and its decision
(``decisions.faults``: corruption at any count, transport faults by rate against a margin)."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Section, Strict
from embedswap.summary.types_equivalence import Verdict

Part = Literal["workload", "queries", "latency", "probes"]


class PartFaults(Strict):
    """One part's answers (a probe's refusal included: the transport delivered it) and the unusable ones."""
    answers: int = 0
    unusable: int = 0
    by_kind: dict[str, int] = {}


class FaultEvent(Strict):
    """Requests of one probe (or one part) that got no whole answer, as a reader needs them in words."""
    part: Part
    kind: str  # a transport kind of wire.answer_faults (connection, stale_connection, timeout, cut_body, ...)
    count: int  # sends of this kind
    sends: int | None = None  # the probe's sends (its first and its repeats)
    probe: str | None = None
    path: str | None = None  # the route it was sent to
    retried: list[int] = []  # statuses of the answers to the sends retried after a stale connection (0: none)
    others: list[int] = []  # statuses the probe's other sends got
    # every send of the probe (and every send once more) got no answer: how the server answers that request, the
    # probe's own verdict, counted in no transport rate (issue 64)
    every_send: bool = False


class TargetFaults(Strict):
    """One server's answers to well-formed requests (workload, queries, latency, probes), and those that could not
    be used, by kind (wire.answer_faults.KINDS)."""
    answers: int = 0
    unusable: int = 0
    share: Number = 0  # unusable / answers
    by_kind: dict[str, int] = {}  # a kind of answer_faults.CORRUPT at any count: decisions.faults says corrupting
    by_part: dict[str, int] = {}  # unusable answers per capture (workload, queries, probes, latency)
    parts: dict[str, PartFaults] = {}  # per capture part with answers (workload, queries, probes, latency)
    events: list[FaultEvent] = []


class Faults(Section):
    """Every measured server's unusable answers. A summary.json without this part reads as ``absent`` (reason
    ``section_absent``, as the other parts a writer left out): no faults decision, and the report says nothing of
    faults rather than "none"."""
    measured: bool = True  # a faults part is written whole; Section's ``absent`` marks one a writer left out
    by_target: dict[str, TargetFaults] = {}

    def of(self, name: str | None) -> TargetFaults | None:
        return self.by_target.get(name) if name is not None else None


# --- the decision (analysis.faults) ---------------------------------------------------------------------------

TargetFaultCode = Literal["corrupting", "transport_above_margin", "transport_within_margin", "none"]


class PartFaultDecision(Strict):
    """One part's transport faults against ``decisions.margins.transport_rate`` (a Clopper-Pearson interval, the
    latency error gate's test), with the legacy server's own rate in the same part beside it."""
    answers: int
    unusable: int
    transport: int  # unusable answers of a transport kind
    corrupt: int  # unusable answers of a corruption kind (a finding at any count)
    by_kind: dict[str, int] = {}
    verdict: Verdict
    legacy_rate: Number | None = None  # the legacy server's transport rate in the same part (None: not measured)


class TargetFaultDecision(Strict):
    """``corrupting`` at any corrupt 200; else ``transport_above_margin`` where a part's transport rate is above the
    margin; else ``transport_within_margin`` with faults not shown above it; else ``none``."""
    code: TargetFaultCode
    corrupt: dict[str, int] = {}  # corrupt 200s by kind
    parts: dict[str, PartFaultDecision] = {}


class FaultDecisions(Strict):
    margin: Number  # decisions.margins.transport_rate
    by_target: dict[str, TargetFaultDecision] = {}

    def of(self, name: str | None) -> TargetFaultDecision | None:
        return self.by_target.get(name) if name is not None else None

    def corrupting(self) -> list[str]:
        return [name for name, t in self.by_target.items() if t.code == "corrupting"]


def comparable(faults: FaultDecisions | None, legacy: str | None, candidates: list[str]) -> list[str]:
    """The candidates whose figures may be stated against the legacy server's: none when the legacy server corrupts
    answers, else those that do not (transport faults do not withdraw a comparison; no faults decision: all)."""
    broken = set(faults.corrupting()) if faults is not None else set()
    return [] if legacy in broken else [n for n in candidates if n not in broken]
