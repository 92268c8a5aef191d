"""The query instruction, three ways: server-side field, client-written prompt, no instruction."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_sections import CosineSpread, Instruction


def _table(ctx: ReportContext, section: Instruction) -> str:
    """One row per server and way of sending the queries: tokens, cosine to the reference, the reading."""
    t = ctx.terms["instruction"]

    def cosines(spread: CosineSpread | None) -> str:
        figures = (spread.min, spread.median) if spread is not None else (None, None)
        return " · ".join(fmt(v, "cos") for v in figures)

    rows = []
    for row in section.rows:
        if not row.measured:
            variant = row.variant
            rows.append([code(row.target), t["variants"].get(variant, esc(variant)) if variant else MISSING,
                         ctx.label(False), MISSING, MISSING, MISSING, ctx.why(row, row.error or "")])
            continue
        rows.append([code(row.target), t["variants"][row.variant], ctx.label(True),
                     fmt(row.prompt_tokens, "int"), fmt(row.tokenizer_tokens, "int"),
                     cosines(row.cosine_to_reference),
                     t["readings"].get(row.reading or "", MISSING)])
    n = fmt(section.queries, "int")
    return md_table([t["server"], t["request"], ctx.terms["label"], fill(t["tokens"], n=n), t["tokenizer"],
                     f"{t['cosine']} (n = {n})", t["reading"]], rows, ["l", "l", "l", "r", "r", "r", "l"])


def _v2_table(ctx: ReportContext, section: Instruction) -> str | None:
    """vLLM's /v2/embed answers to the same query, one row per server."""
    t = ctx.terms["instruction"]
    v2_rows = []
    for row in section.v2_embed:
        v2_rows.append([code(row.target), fmt(row.status, "raw"),
                        fmt(row.prompt_tokens, "int"), fmt(row.tokenizer_tokens, "int"),
                        fmt(row.cosine_to_reference, "cos"),
                        t["readings"].get(row.reading or "", esc(row.error) or MISSING)])
    v2_table = md_table([t["server"], t["status"], t["tokens_one"], t["tokenizer"],
                         t["cosine_one"], t["reading"]], v2_rows,
                        ["l", "r", "r", "r", "r", "l"]) if v2_rows else None
    return v2_table


def instruction(ctx: ReportContext) -> dict[str, Any]:
    """The query instruction section (or why it is not measured)."""
    section = ctx.summary.instruction
    if not is_measured(section):
        return {"state": False, "label": ctx.label(False), "why": ctx.why(section),
                "table": None, "v2_table": None, "sources": MISSING}
    n = fmt(section.queries, "int")
    sources = [r.source for r in section.rows if r.measured]
    sources += [r.source for r in section.v2_embed]
    reference = section.reference
    template = (reference.template if reference is not None else None) or ""
    return {"state": True, "label": ctx.label(True), "why": None, "table": _table(ctx, section),
            "v2_table": _v2_table(ctx, section),
            "queries": n, "reference_target": reference.target if reference is not None else None,
            "template": code(template.replace("\n", "\\n")),  # the newline, visibly
            "chat_template": section.chat_template,
            "sources": ctx.refs_for(sources + ["captures/reference/tokenizer_counts.json"])}
