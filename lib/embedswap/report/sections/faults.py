"""The unusable answers of each server (the summary's ``faults``, judged in ``decisions.faults``): which servers'
figures cannot be compared, the headline of each server with faults, and the table per server and part.

A server whose 200s were corrupt (wrong vectors in a success) gets no latency ratio and no "the vectors were the
same": what came back whole says nothing about the rest. A server with transport faults only (no answer, a stale
keep-alive connection, a timeout, a cut body) keeps its comparisons; the headline states the share, the kinds and,
for the first events, what happened in words.
"""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import code, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_faults import FaultEvent, comparable as comparable_of


def corrupting(ctx: ReportContext) -> set[str]:
    """The servers ``decisions.faults`` found corrupting (none without a faults section)."""
    judged = ctx.decisions.faults
    return set(judged.corrupting()) if judged is not None else set()


def comparable(ctx: ReportContext) -> list[str]:
    """The candidates whose figures may be stated against the legacy server's: none when the legacy server
    corrupts answers, else those that do not (transport faults do not withdraw a comparison)."""
    return comparable_of(ctx.decisions.faults if ctx.decisions is not None else None, ctx.legacy, ctx.candidates)


def _code(ctx: ReportContext, name: str) -> str:
    """The server's stored fault decision (every summary with a faults section has them after its upgrade)."""
    judged = ctx.decisions.faults
    decided = judged.of(name) if judged is not None else None
    return decided.code if decided is not None else "none"


def _statuses(values: list[int], ctx: ReportContext) -> str:
    words = ctx.terms["fault_kinds"]
    return ctx.terms["post"]["list_sep"].join(str(v) if v else words["connection"] for v in values)


def event_words(ctx: ReportContext, event: FaultEvent) -> dict[str, Any]:
    words = ctx.terms["fault_kinds"]
    return {"kind": words.get(event.kind, event.kind), "count": fmt(event.count, "int"),
            "sends": fmt(event.sends, "int"), "probe": code(event.probe) if event.probe else None,
            "path": code(event.path) if event.path else None, "part": ctx.terms["fault_parts"][event.part],
            "retried": _statuses(event.retried, ctx) if event.retried else None,
            "others": _statuses(event.others, ctx) if event.others else None, "every_send": event.every_send}


def headlines(ctx: ReportContext) -> list[dict[str, Any]]:
    """One line of figures per server with unusable answers or transport events, in the report's order."""
    faults = ctx.summary.faults
    if faults.absent:
        return []
    words = ctx.terms.get("fault_kinds", {})
    judged = ctx.decisions.faults if ctx.decisions is not None else None
    margin = f"{fmt(judged.margin * 100, 's')}%" if judged is not None else None
    out = []
    for name in ctx.names:
        entry = faults.of(name)
        if entry is None or not (entry.unusable or entry.events):
            continue
        kinds = ctx.terms["post"]["list_sep"].join(
            f"{words.get(kind, kind)} {fmt(count, 'int')}" for kind, count in entry.by_kind.items())
        out.append({"name": code(name), "share": f"{fmt(entry.share * 100, 's')}%", "unusable": fmt(entry.unusable, "int"),
                    "unusable_n": entry.unusable, "answers": fmt(entry.answers, "int"), "kinds": kinds,
                    "corrupting": name in corrupting(ctx), "code": _code(ctx, name), "margin": margin,
                    "events": [event_words(ctx, e) for e in entry.events]})
    return out


def conclusion_headlines(ctx: ReportContext) -> list[dict[str, Any]]:
    """The post's conclusion keeps the servers whose faults were decided to be a finding (``decisions.faults`` code
    other than ``none``), each with its intermittent events only: a stale connection a client's retry closed is a
    non-finding, and a probe that got no answer on every send is its own verdict, both worded in the full report
    (issues 63, 64)."""
    return [{**f, "events": [e for e in f["events"] if not e["every_send"]]} for f in headlines(ctx)
            if f["code"] != "none"]


def table(ctx: ReportContext) -> str | None:
    """Per server and part: answers, unusable by kind, the transport rate with its interval, the verdict."""
    judged = ctx.decisions.faults if ctx.decisions is not None else None
    if judged is None or not any(t.code != "none" for t in judged.by_target.values()):
        return None
    t, kinds = ctx.terms["fault_table"], ctx.terms["fault_kinds"]
    rows = []
    for name in ctx.names:
        decided = judged.of(name)
        for part, d in (decided.parts if decided is not None else {}).items():
            v = d.verdict
            rate = (fill(t["rate"], rate=f"{fmt((v.estimate or 0) * 100, 's')}%", low=f"{fmt((v.low or 0) * 100, 's')}%",
                         high=f"{fmt((v.high or 0) * 100, 's')}%") if v.n else fmt(None))
            verdict = t["corrupt"] if d.corrupt else t["verdicts"][v.code]
            rows.append([code(name), ctx.terms["fault_parts"].get(part, part), fmt(d.answers, "int"),
                         ctx.terms["post"]["list_sep"].join(f"{kinds.get(k, k)} {fmt(n, 'int')}"
                                                            for k, n in d.by_kind.items()) or "0",
                         rate, fmt(None if d.legacy_rate is None else d.legacy_rate * 100, "s") +
                         ("%" if d.legacy_rate is not None else ""), verdict])
    header = [t["server"], t["part"], t["answers"], t["unusable"], t["transport_rate"], t["legacy_rate"], t["verdict"]]
    return md_table(header, rows, ["l", "l", "r", "l", "r", "r", "l"])
