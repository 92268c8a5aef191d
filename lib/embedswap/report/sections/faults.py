"""The unusable answers of each server (the summary's ``faults``), and which servers' figures cannot be compared.

A server that corrupts some of its answers gets one headline: the share of its answers that could not be used, by
kind. Its latency is measured over the answers that survived, and its vectors over the requests that happened to be
answered whole: neither is stated as a comparison (no latency ratio, no "the vectors were the same").
"""

from __future__ import annotations

from typing import Any

from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext


def corrupting(ctx: ReportContext) -> set[str]:
    """The servers whose answers were broken at least once (none for a summary from before the section)."""
    faults = ctx.summary.faults
    return set(faults.corrupting()) if faults is not None else set()


def comparable(ctx: ReportContext) -> list[str]:
    """The candidates whose figures may be stated against the legacy server's: none when the legacy server
    corrupts answers, else those that do not."""
    broken = corrupting(ctx)
    if ctx.legacy in broken:
        return []
    return [name for name in ctx.candidates if name not in broken]


def headlines(ctx: ReportContext) -> list[dict[str, Any]]:
    """One line of figures per server with unusable answers, in the report's order of servers."""
    faults = ctx.summary.faults
    if faults is None:
        return []
    words = ctx.terms.get("fault_kinds", {})
    out = []
    for name in ctx.names:
        entry = faults.of(name)
        if entry is None or not entry.unusable:
            continue
        kinds = ctx.terms["post"]["list_sep"].join(
            f"{words.get(kind, kind)} {fmt(count, 'int')}" for kind, count in entry.by_kind.items())
        out.append({"name": code(name), "share": f"{fmt(entry.share * 100, 's')}%", "unusable": fmt(entry.unusable, "int"),
                    "answers": fmt(entry.answers, "int"), "kinds": kinds, "corrupting": entry.corrupting})
    return out
