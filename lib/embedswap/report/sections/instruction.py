"""The query instruction, three ways: server-side field, client-written prompt, no instruction."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext


def _table(ctx: ReportContext, section: dict[str, Any]) -> str:
    """One row per server and way of sending the queries: tokens, cosine to the reference, the reading."""
    t = ctx.terms["instruction"]

    def cosines(spread: dict[str, Any] | None) -> str:
        spread = spread or {}
        return " · ".join(fmt(spread.get(k), "cos") for k in ("min", "median"))

    rows = []
    for row in section.get("rows") or []:
        if not row.get("measured"):
            variant = row.get("variant")
            rows.append([code(row.get("target")), t["variants"].get(variant, esc(variant)) if variant else MISSING,
                         ctx.label(False), MISSING, MISSING, MISSING, ctx.why(row, row.get("error") or "")])
            continue
        rows.append([code(row["target"]), t["variants"][row["variant"]], ctx.label(True),
                     fmt(row.get("prompt_tokens"), "int"), fmt(row.get("tokenizer_tokens"), "int"),
                     cosines(row.get("cosine_to_reference")),
                     t["readings"].get(row.get("reading") or "", MISSING)])
    n = fmt(section.get("queries"), "int")
    return md_table([t["server"], t["request"], ctx.terms["label"], t["tokens"].format(n=n), t["tokenizer"],
                     f"{t['cosine']} (n = {n})", t["reading"]], rows, ["l", "l", "l", "r", "r", "r", "l"])


def _v2_table(ctx: ReportContext, section: dict[str, Any]) -> str | None:
    """vLLM's /v2/embed answers to the same query, one row per server."""
    t = ctx.terms["instruction"]
    v2_rows = []
    for row in section.get("v2_embed") or []:
        status = row.get("status")
        v2_rows.append([code(row["target"]), fmt(status, "raw"),
                        fmt(row.get("prompt_tokens"), "int"), fmt(row.get("tokenizer_tokens"), "int"),
                        fmt(row.get("cosine_to_reference"), "cos"),
                        t["readings"].get(row.get("reading") or "", esc(row.get("error")) or MISSING)])
    v2_table = md_table([t["server"], t["status"], t["tokens_one"], t["tokenizer"],
                         t["cosine_one"], t["reading"]], v2_rows,
                        ["l", "r", "r", "r", "r", "l"]) if v2_rows else None
    return v2_table


def instruction(ctx: ReportContext) -> dict[str, Any]:
    """The query instruction section (or why it is not measured)."""
    section = ctx.raw.get("instruction") or {}
    if not is_measured(section):
        return {"state": False, "label": ctx.label(False), "why": ctx.why(section),
                "table": None, "v2_table": None, "sources": MISSING}
    n = fmt(section.get("queries"), "int")
    sources = [r.get("source") for r in section.get("rows") or [] if r.get("measured")]
    sources += [r.get("source") for r in section.get("v2_embed") or []]
    reference = section.get("reference") or {}
    return {"state": True, "label": ctx.label(True), "why": None, "table": _table(ctx, section),
            "v2_table": _v2_table(ctx, section),
            "queries": n, "reference_target": reference.get("target"),
            "template": code((reference.get("template") or "").replace("\n", "\\n")),  # the newline, visibly
            "chat_template": section.get("chat_template"),
            "sources": ctx.refs_for(sources + ["captures/reference/tokenizer_counts.json"])}
