"""Vectors: dimension, length, token totals, per-document cosine against legacy, by language."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext


def _main_table(ctx: ReportContext) -> str:
    """One column per server: dimension, first vector's length, token totals, cosine to legacy, repeats, order."""
    vectors = ctx.raw.get("vectors") or {}
    by_target = vectors.get("by_target") or {}
    comparisons = vectors.get("comparisons") or {}
    t = ctx.terms
    n_docs = (ctx.raw.get("workload") or {}).get("documents")
    header = [t["item"]] + [f"{code(n)} ({ctx.role_of(n)}, "
                            f"{ctx.label(True) if is_measured(by_target.get(n)) else ctx.not_measured_cell(n)})"
                            for n in ctx.names]
    rows: list[list[str]] = []

    def row(title: str, cell: Callable[[str, dict[str, Any]], str]) -> None:
        cells = []
        for name in ctx.names:
            info = by_target.get(name) or {}
            cells.append(cell(name, info) if is_measured(info) else ctx.label(False))
        rows.append([title, *cells])

    row(t["dimension"], lambda n, i: fmt(i.get("dimension"), "int"))
    row(t["first_l2"], lambda n, i: fmt((i.get("norm") or {}).get("first"), "norm"))
    row(t["norm_median"], lambda n, i: fmt((i.get("norm") or {}).get("median"), "norm"))

    def ratio_cell(name: str, info: dict[str, Any]) -> str:
        if name == ctx.legacy:
            return f"{MISSING} ({t['reference']})"
        ratio = (comparisons.get(name) or {}).get("norm_ratio")
        if not isinstance(ratio, dict):
            return ctx.label(False)
        cell = " · ".join(fmt(ratio.get(k), "norm") for k in ("min", "median", "max"))
        return f"{cell} ({t['length_differs']})" if ratio.get("differs") else cell

    row(t["norm_ratio"], ratio_cell)
    row(t["token_total"].format(n=fmt(n_docs, "int")), lambda n, i: fmt(i.get("token_total"), "int"))
    if vectors.get("tokenizer_token_total") is not None:
        matches = {True: t["yes"], False: t["no"], None: MISSING}
        row(t["tokenizer_match"].format(n=fmt(vectors["tokenizer_token_total"], "int")),
            lambda n, i: matches[i.get("token_total_matches_tokenizer")])

    def cosine_cell(name: str, info: dict[str, Any]) -> str:
        if name == ctx.legacy:
            return f"{MISSING} ({t['reference']})"
        comparison = comparisons.get(name) or {}
        if not is_measured(comparison):
            return ctx.label(False)
        c = comparison.get("cosine") or {}
        n = len(comparison.get("per_document") or []) or None  # how many documents the row covers
        return " · ".join(fmt(c.get(k), "cos") for k in ("min", "median", "max")) + (f" (n = {n})" if n else "")

    row(t["cosine_mmm"], cosine_cell)
    row(t["repeat_min"], lambda n, i: fmt(i.get("repeat_min_cosine"), "cos"))
    row(t["index_order"], lambda n, i: t["yes"] if i.get("index_order_ok") else t["no"])
    return md_table(header, rows)


def _language_table(ctx: ReportContext) -> str | None:
    """Per-document cosine to legacy by document language, one column per candidate."""
    comparisons = (ctx.raw.get("vectors") or {}).get("comparisons") or {}
    t = ctx.terms
    lang_table = None
    measured_comparisons = {n: c for n, c in comparisons.items() if is_measured(c)}
    if measured_comparisons:
        langs = list(dict.fromkeys(l for c in measured_comparisons.values() for l in (c.get("by_language") or {})))
        lang_rows = []
        for lang in langs:
            cells = [code(lang)]
            count = None
            for name in ctx.candidates:
                per = ((comparisons.get(name) or {}).get("by_language") or {}).get(lang)
                if per is None:
                    cells.append(ctx.label(False))
                    continue
                count = per.get("n", count)
                cells.append(" · ".join(fmt(per.get(k), "cos") for k in ("min", "median", "max")))
            lang_rows.append([cells[0], fmt(count, "int"), *cells[1:]])
        lang_table = md_table([t["lang"], t["n"]] + [f"{code(n)}: {t['cosine_mmm']}" for n in ctx.candidates],
                              lang_rows)
    return lang_table


def vectors(ctx: ReportContext) -> dict[str, Any]:
    """The vectors section: the tables, the lowest cosines, and why a server's vectors are missing."""
    vectors = ctx.raw.get("vectors") or {}
    by_target = vectors.get("by_target") or {}
    comparisons = vectors.get("comparisons") or {}
    worst = []
    for name in ctx.candidates:
        comparison = comparisons.get(name) or {}
        if is_measured(comparison):
            worst.append({"name": name, "docs": ", ".join(
                f"{code(w.get('doc_id'))} ({esc(w.get('lang'))}) {fmt(w.get('cosine'), 'cos')}"
                for w in comparison.get("worst") or [])})
    why = [{"name": n, "why": ctx.why(c)} for n, c in comparisons.items() if not is_measured(c)]
    why += [{"name": n, "why": ctx.why(i)} for n, i in by_target.items() if not is_measured(i)]
    cos = vectors.get("cosine") or {}
    sources = [i.get("source") for i in by_target.values() if is_measured(i) and i.get("source")]
    return {
        "state": is_measured(ctx.raw.get("vectors")),
        "label": ctx.label(is_measured(ctx.raw.get("vectors"))),
        "table_label": combined_label([is_measured(by_target.get(n)) for n in ctx.names], ctx.lang),
        "table": _main_table(ctx),
        "lang_table": _language_table(ctx),
        "worst": worst,
        "why": why,
        "cos_min": fmt(cos.get("min"), "cos"), "cos_median": fmt(cos.get("median"), "cos"),
        "cos_max": fmt(cos.get("max"), "cos"),
        "figure": "cosine_by_language" if ctx.figures.get("cosine_by_language") else None,
        "sources": ctx.refs_for([f"captures/{n}/workload_requests.jsonl" for n in ctx.names], always=sources),
    }
