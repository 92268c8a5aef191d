"""``decisions.faults``: each server's unusable answers judged by their kind.

Silent corruption (a 200 with wrong-length vectors, non-finite values, an index that is not a permutation, the
wrong count, a body that is not an answer) reaches an index unnoticed: one is a finding. Transport faults (no
answer, a stale keep-alive connection, a timeout, a cut body, an error status) are seen and retried by a client:
each part's rate is judged against ``decisions.margins.transport_rate`` with the latency error gate's test
(Clopper-Pearson), beside the legacy server's own rate in that part. Neither withdraws a comparison.
"""

from __future__ import annotations

from embedswap.analysis.stored_verdicts import stored
from embedswap.config.decisions import DecisionsConfig
from embedswap.stats.latency_equivalence import error_gate
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_faults import (FaultDecisions, PartFaultDecision, PartFaults, TargetFaultDecision,
                                            TargetFaults)
from embedswap.wire.answer_faults import CORRUPT


def _parts(entry: TargetFaults) -> dict[str, PartFaults]:
    """The per-part figures (every server with an answer has one part at least)."""
    return entry.parts


def _transport(part: PartFaults) -> dict[str, int]:
    return {k: n for k, n in part.by_kind.items() if k not in CORRUPT}


def part_decision(part: PartFaults, config: DecisionsConfig, legacy: PartFaults | None = None) -> PartFaultDecision:
    transport = _transport(part)
    errors = sum(transport.values())
    verdict = error_gate({"ok": part.answers - errors, **transport}, config.margins.transport_rate,
                         alpha=config.alpha, power=config.power)
    legacy_rate = None
    if legacy is not None and legacy.answers:
        legacy_rate = round(sum(_transport(legacy).values()) / legacy.answers, 4)
    return PartFaultDecision(answers=part.answers, unusable=part.unusable, transport=errors,
                             corrupt=part.unusable - errors, by_kind=part.by_kind,
                             verdict=stored(verdict), legacy_rate=legacy_rate)


def fault_decisions(summary: SummaryBody, config: DecisionsConfig) -> FaultDecisions | None:
    """None for a summary that holds no faults part (``Faults.absent``)."""
    if summary.faults.absent:
        return None
    legacy = summary.faults.of(summary.roles.legacy)
    legacy_parts = _parts(legacy) if legacy is not None else {}
    out: dict[str, TargetFaultDecision] = {}
    for name, entry in summary.faults.by_target.items():
        parts = {p: part_decision(figures, config, legacy_parts.get(p) if name != summary.roles.legacy
                                  else None) for p, figures in _parts(entry).items()}
        corrupt = {k: n for k, n in entry.by_kind.items() if k in CORRUPT}
        code = ("corrupting" if corrupt else
                "transport_above_margin" if any(d.verdict.code == "failed" for d in parts.values()) else
                "transport_within_margin" if any(d.transport for d in parts.values()) else "none")
        out[name] = TargetFaultDecision(code=code, corrupt=corrupt, parts=parts)
    return FaultDecisions(margin=config.margins.transport_rate, by_target=out)
