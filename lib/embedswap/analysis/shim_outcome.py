"""What the client shim changed, per candidate probed through it: the differences it closed, those that remain
(and whether only the legacy server's failure causes one), and those that only the shim opened."""

from __future__ import annotations

from embedswap.analysis.client_changes import legacy_side_status
from embedswap.analysis.common import roles, shim_rows, shimmed, verdict_of
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import ShimClosed, ShimOutcome, ShimRemaining

__all__ = ["candidate_outcome", "shim_outcomes"]


def candidate_outcome(summary: SummaryBody, name: str) -> ShimOutcome:
    """``{compared, differ_before, differ_after, closed, remaining, opened}`` for one candidate."""
    legacy = roles(summary)[0]
    closed: list[ShimClosed] = []
    remaining: list[ShimRemaining] = []
    opened: list[str] = []
    before_differ = after_differ = compared = 0
    for row in shim_rows(summary):
        probe = row.probe
        before, after = verdict_of(row, "naive_verdicts", name), verdict_of(row, "verdicts", name)
        if after is None:
            continue
        compared += 1
        before_differ += bool(before and before != "same")
        after_differ += after != "same"
        if before and before != "same" and after == "same":
            closed.append(ShimClosed(probe=probe, before=before))
        elif after != "same":
            remaining.append(ShimRemaining(probe=probe, verdict=after,
                                           legacy_status=legacy_side_status(row, legacy, name)))
            if before == "same":
                opened.append(probe)
    return ShimOutcome(compared=compared, differ_before=before_differ, differ_after=after_differ, closed=closed,
                       remaining=remaining, opened=opened)


def shim_outcomes(summary: SummaryBody) -> dict[str, ShimOutcome]:
    """Every candidate probed through the shim, by name (none when the shim was not probed)."""
    return {name: candidate_outcome(summary, name) for name in shimmed(summary)}
