"""Through the client migration shim: each probe's verdict before and after, and what the shim learned."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import verdict_of
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_sections import ShimRewrite, ShimRow, ShimSettings

# the shim's settings in the order the report lists them (others follow in capture order)
SHIM_SETTINGS = ("strip_dimensions", "prepend_query_instruction", "max_input_tokens", "model_override",
                 "non_retryable_statuses", "reject_empty_strings", "force_float", "renormalise", "usage",
                 "drop_fields")


def _table(ctx: ReportContext, rows: list[ShimRow], shimmed: list[str]) -> str:
    t = ctx.terms
    header = [t["probe"], code(ctx.legacy)]
    for name in ctx.candidates:
        header += [f"{ctx.column(name)}: {t['before_after']}", f"{code(name)}: {t['through_shim']}"]
    table_rows = []
    for row in rows:
        cells = [code(row.probe), ctx.side_cell(row.side(ctx.legacy))]
        for name in ctx.candidates:
            if name not in shimmed:
                cells += [ctx.label(False), ctx.label(False)]
                continue
            before = verdict_of(row, "naive_verdicts", name)
            cells += [f"{before or ctx.label(False)} → {ctx.verdict_cell(row.verdict_for(name))}",
                      ctx.side_cell(row.side(name))]
        table_rows.append(cells)
    return md_table(header, table_rows, ["l"] * len(header))


def _per_candidate(ctx: ReportContext, rows: list[ShimRow], name: str,
                   config: ShimSettings | None) -> dict[str, Any]:
    """What the shim closed, what remains, what only the shim opened (decisions.shim), and its settings."""
    outcome = ctx.decisions.shim_of(name)
    by_probe = {r.probe: r for r in rows}
    closed, remaining, opened = [], [], []
    if outcome is not None:
        closed = [{"probe": c.probe, "before": c.before,
                   "rewrites": _rewrites(ctx, _rewrite_of(by_probe, c.probe, name))} for c in outcome.closed]
        remaining = [{"probe": r.probe, "verdict": r.verdict, "note": ctx.legacy_side(r.legacy_status)}
                     for r in outcome.remaining]
        opened = list(outcome.opened)
    return {"name": name, "closed": closed, "remaining": remaining, "opened": opened,
            "before": fmt(outcome.differ_before if outcome is not None else None, "int"),
            "after": fmt(outcome.differ_after if outcome is not None else None, "int"),
            "compared": fmt(outcome.compared if outcome is not None else None, "int"),
            "settings": shim_settings(ctx, config)}


def _rewrite_of(by_probe: dict[str, ShimRow], probe: str, name: str) -> ShimRewrite | None:
    """What the shim did to one probe on its way to one candidate, if the probe has a row."""
    row = by_probe.get(probe)
    return row.rewrite(name) if row is not None else None


def _rewrites(ctx: ReportContext, info: ShimRewrite | None) -> str:
    """What the shim did to one request, in this language where the kit's sentence has a code."""
    texts = (info.rewrites if info is not None else None) or []
    codes = (info.rewrite_reasons if info is not None else None) or [None] * len(texts)
    words = [ctx.words.reason(c.code, c.params) if c else str(t) for t, c in zip(texts, codes)]
    return esc(ctx.words.labels["separator"].join(words)) if words else ""


def shim_settings(ctx: ReportContext, config: ShimSettings | None) -> list[dict[str, str]]:
    """What the shim learned for one candidate (the settings with a recorded reason), each reason in this
    language where it has a code (a reason given by hand in experiment.yaml as written)."""
    if config is None:
        return []
    out = []
    keys = [k for k in SHIM_SETTINGS if k in config.reasons] + [k for k in config.reasons if k not in SHIM_SETTINGS]
    for key in keys:
        value = config.value(key)
        if isinstance(value, bool):
            shown = ctx.terms["settings"]["true" if value else "false"]
        elif isinstance(value, (list, tuple)):
            shown = ", ".join(fmt(v, "raw") for v in value) or MISSING
        else:
            shown = fmt(value, "raw")
        code = config.reason_code(key)
        text = ctx.words.reason(code.code, code.params) if code else config.reason_text(key)
        out.append({"key": key, "value": esc(shown), "reason": esc(text)})
    return out


def shim(ctx: ReportContext) -> dict[str, Any]:
    """The shim section: the before/after table and one summary per candidate probed through the shim."""
    t = ctx.terms
    section = ctx.summary.shim
    rows = ctx.shim_rows()
    shimmed = ctx.shimmed()
    if not rows or not shimmed:
        return {"table": None, "per_candidate": [], "why": [], "sources": MISSING, "state": False,
                "label": ctx.label(False), "top_why": ctx.why(section, t["no_section"])}
    per_candidate = [_per_candidate(ctx, rows, name, section.settings(name)) for name in shimmed]
    why = [{"name": n, "why": ctx.failure(n) or esc(fill(t["not_probed"], name=n))}
           for n in ctx.candidates if n not in shimmed]
    sources = list(section.sources.values())
    return {
        "state": True, "top_why": None,
        "label": combined_label([n in shimmed for n in ctx.candidates], ctx.lang),
        "table": _table(ctx, rows, shimmed), "per_candidate": per_candidate, "why": why,
        "sources": ctx.refs_for([f"captures/{n}/shim_config.json" for n in ctx.candidates], always=sources),
    }
