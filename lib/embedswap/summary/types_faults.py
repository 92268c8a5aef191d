"""The faults section of summary.json: per server, the share of its answers that were unusable, by kind."""

from __future__ import annotations

from embedswap.summary.types_common import Number, Strict


class TargetFaults(Strict):
    """One server's answers to well-formed requests (workload, queries, latency; probes answered 200 or not at
    all), and those that could not be used, by kind (measure.answer_faults.KINDS)."""
    answers: int = 0
    unusable: int = 0
    share: Number = 0  # unusable / answers
    by_kind: dict[str, int] = {}
    # some answers came back broken (a kind of answer_faults.CORRUPT): its latency and its vectors are not read
    # as a comparison
    corrupting: bool = False
    by_part: dict[str, int] = {}  # unusable answers per capture (workload, queries, probes, latency)


class Faults(Strict):
    """Every measured server's unusable answers (absent in summaries from before it)."""
    by_target: dict[str, TargetFaults] = {}

    def of(self, name: str | None) -> TargetFaults | None:
        return self.by_target.get(name) if name is not None else None

    def corrupting(self) -> list[str]:
        """The servers that gave broken answers, in the section's order."""
        return [name for name, t in self.by_target.items() if t.corrupting]
