"""What each server did with an input longer than the model takes: a row per server, its handling worded by code."""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_long_input import LongInputFinding


def handling(ctx: ReportContext, found: LongInputFinding) -> str:
    """One server's handling in words (``[terms.long_input.handling]``, by code), the figures it names filled in."""
    text = ctx.terms["long_input"]["handling"][found.code]
    return fill(text, status=fmt(found.status, "raw"), limit=fmt(found.limit, "int"),
                closest=fmt(found.cosine, "cos"), error=esc(found.error or ""))


def _table(ctx: ReportContext, findings: list[LongInputFinding]) -> str:
    t = ctx.terms["long_input"]
    rows = [[code(f.target), handling(ctx, f), fmt(f.cosine, "cos") if f.code != "refused" else MISSING,
             fmt(f.prompt_tokens, "int"),
             MISSING if f.same_as_legacy is None else t["yes"] if f.same_as_legacy else t["no"]]
            for f in findings]
    return md_table([t["server"], t["handling_col"], t["cosine"], t["usage"], t["same_as_legacy"]], rows,
                    ["l", "l", "r", "r", "l"])


def long_input(ctx: ReportContext) -> dict[str, Any]:
    """The long-input section: left out where the summary holds no record of it, else the table or why it was not
    measured."""
    section = ctx.summary.long_input
    if section.absent:
        return {"state": None, "legacy": None, "differing": []}
    if not section.measured:
        return {"state": False, "why": ctx.why(section), "legacy": None, "differing": []}
    findings = list(section.by_target.values())
    differing = [f for f in findings if f.same_as_legacy is False]
    legacy = section.of(ctx.summary.roles.legacy)
    return {"state": True, "label": ctx.label(True), "table": _table(ctx, findings),
            "tokens": fmt(section.document_tokens, "int"),
            "limits": ", ".join(fmt(v, "int") for v in section.limits) or MISSING,
            "threshold": fmt(section.threshold, "raw"),
            "sources": ctx.refs_for([f"captures/{f.target}/long_input.json" for f in findings]),
            "legacy": None if legacy is None else {"name": legacy.target, "handling": handling(ctx, legacy)},
            "differing": [{"name": f.target, "handling": handling(ctx, f), "refused": f.code == "refused",
                           "status": fmt(f.status, "raw")}
                          for f in differing]}
