"""Vectors: dimension, length, token totals, per-document cosine against legacy, by language."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.verdicts import slices_table
from embedswap.summary.types_common import Spread
from embedswap.summary.types_vectors import TargetVectors


def _spread(spread: Spread | None, kind: str) -> str:
    """'min · median · max' of a spread, '—' for each figure it lacks."""
    figures = (spread.min, spread.median, spread.max) if spread is not None else (None, None, None)
    return " · ".join(fmt(v, kind) for v in figures)


def _main_table(ctx: ReportContext) -> str:
    """One column per server: dimension, first vector's length, token totals, cosine to legacy, repeats, order."""
    vectors = ctx.summary.vectors
    t = ctx.terms
    n_docs = ctx.summary.workload.documents
    header = [t["item"]] + [f"{code(n)} ({ctx.role_of(n)}, "
                            f"{ctx.label(True) if is_measured(vectors.of(n)) else ctx.not_measured_cell(n)})"
                            for n in ctx.names]
    rows: list[list[str]] = []

    def row(title: str, cell: Callable[[str, TargetVectors], str]) -> None:
        cells = []
        for name in ctx.names:
            info = vectors.of(name)
            cells.append(cell(name, info) if info is not None and is_measured(info) else ctx.label(False))
        rows.append([title, *cells])

    row(t["dimension"], lambda n, i: fmt(i.dimension, "int"))
    row(t["first_l2"], lambda n, i: fmt(i.norm.first if i.norm is not None else None, "norm"))
    row(t["norm_median"], lambda n, i: fmt(i.norm.median if i.norm is not None else None, "norm"))

    def ratio_cell(name: str, info: TargetVectors) -> str:
        if name == ctx.legacy:
            return f"{MISSING} ({t['reference']})"
        comparison = vectors.comparison(name)
        ratio = comparison.norm_ratio if comparison is not None else None
        if ratio is None:
            return ctx.label(False)
        cell = _spread(ratio, "norm")
        return f"{cell} ({t['length_differs']})" if ratio.differs else cell

    row(t["norm_ratio"], ratio_cell)
    row(fill(t["token_total"], n=fmt(n_docs, "int")), lambda n, i: fmt(i.token_total, "int"))
    if vectors.tokenizer_token_total is not None:
        matches = {True: t["yes"], False: t["no"], None: MISSING}
        row(fill(t["tokenizer_match"], n=fmt(vectors.tokenizer_token_total, "int")),
            lambda n, i: matches[i.token_total_matches_tokenizer])

    def cosine_cell(name: str, info: TargetVectors) -> str:
        if name == ctx.legacy:
            return f"{MISSING} ({t['reference']})"
        comparison = vectors.comparison(name)
        if comparison is None or not is_measured(comparison):
            return ctx.label(False)
        n = len(comparison.per_document) or None  # how many documents the row covers
        return _spread(comparison.cosine, "cos") + (f" (n = {n})" if n else "")

    row(t["cosine_mmm"], cosine_cell)
    row(t["repeat_min"], lambda n, i: fmt(i.repeat_min_cosine, "cos"))
    row(t["index_order"], lambda n, i: t["yes"] if i.index_order_ok else t["no"])
    return md_table(header, rows)


def _language_table(ctx: ReportContext) -> str | None:
    """Per-document cosine to legacy by document language, one column per candidate."""
    vectors = ctx.summary.vectors
    comparisons = vectors.comparisons
    t = ctx.terms
    lang_table = None
    measured_comparisons = {n: c for n, c in comparisons.items() if is_measured(c)}
    if measured_comparisons:
        langs = list(dict.fromkeys(l for c in measured_comparisons.values() for l in (c.by_language or {})))
        lang_rows = []
        for lang in langs:
            cells = [code(lang)]
            count = None
            for name in ctx.candidates:
                comparison = vectors.comparison(name)
                per = (comparison.by_language or {}).get(lang) if comparison is not None else None
                if per is None:
                    cells.append(ctx.label(False))
                    continue
                count = per.n
                cells.append(_spread(per, "cos"))
            lang_rows.append([cells[0], fmt(count, "int"), *cells[1:]])
        lang_table = md_table([t["lang"], t["n"]] + [f"{code(n)}: {t['cosine_mmm']}" for n in ctx.candidates],
                              lang_rows)
    sliced = [(code(n), t["equivalence"]["comparisons"]["cosine"], found) for n in ctx.candidates
              if (found := ctx.decisions.vectors.get(n)) is not None]
    verdicts = slices_table(t, sliced, "cos")
    return "\n\n".join(x for x in (lang_table, verdicts) if x) or None


def another_model_entries(ctx: ReportContext) -> list[dict[str, Any]]:
    """The candidates serving another model than the legacy server (summary ``plan``), with their evidence in
    words and figures (issue 57): the post and the full report state it instead of a wall of differences."""
    words = ctx.terms["models"]["evidence"]
    out = []
    for name in ctx.candidates:
        found = ctx.summary.plan.of(name)
        if found is None or not found.another_model:
            continue
        change = found.model
        said = [e for e in change.evidence if e.says_another]
        cosine = next((e for e in change.evidence if e.kind == "cosine"), None)
        # a model neither stated nor configured is said so, never named (issue 64)
        model = (fill(ctx.terms["models"]["not_stated"], name=name) if change.candidate_model_source == "not_stated"
                 else code(change.candidate_model or MISSING))
        entry = {
            "name": code(name), "model": model,
            "legacy_model": code(change.legacy_model or MISSING),
            "evidence": ctx.terms["models"]["list_sep"].join(fill(words[e.kind], legacy=esc(e.legacy or MISSING),
                                                        candidate=esc(e.candidate or MISSING)) for e in said),
            "cosine": fmt(cosine.cosine_median, "cos4") if cosine is not None else None,
            "by_language": ctx.terms["models"]["list_sep"].join(f"{esc(lang)} {fmt(v, 'cos4')}"
                                                      for lang, v in (cosine.by_language if cosine else {}).items()),
        }
        # the post's conclusion sentence, worded here: a loop over candidates inside a message would be read back
        # by the A/A check's pattern with a backtracking blow-up (tests/support/aa_check.py)
        entry["conclusion"] = fill(ctx.terms["models"]["conclusion"], **entry)
        out.append(entry)
    return out


def vectors(ctx: ReportContext) -> dict[str, Any]:
    """The vectors section: the tables, the lowest cosines, and why a server's vectors are missing."""
    vectors = ctx.summary.vectors
    by_target = vectors.by_target
    comparisons = vectors.comparisons
    worst = []
    for name in ctx.candidates:
        comparison = vectors.comparison(name)
        if comparison is not None and is_measured(comparison):
            worst.append({"name": name, "docs": ", ".join(
                f"{code(w.doc_id)} ({esc(w.lang)}) {fmt(w.cosine, 'cos')}" for w in comparison.worst or [])})
    why = [{"name": n, "why": ctx.why(c)} for n, c in comparisons.items() if not is_measured(c)]
    why += [{"name": n, "why": ctx.why(i)} for n, i in by_target.items() if not is_measured(i)]
    cos = vectors.cosine
    sources = [i.source for i in by_target.values() if is_measured(i) and i.source]
    return {
        "state": is_measured(vectors),
        "label": ctx.label(is_measured(vectors)),
        "table_label": combined_label([is_measured(vectors.of(n)) for n in ctx.names], ctx.lang),
        "table": _main_table(ctx),
        "lang_table": _language_table(ctx),
        "worst": worst,
        "why": why,
        "models": another_model_entries(ctx),
        "cos_min": fmt(cos.min if cos is not None else None, "cos"),
        "cos_median": fmt(cos.median if cos is not None else None, "cos"),
        "cos_max": fmt(cos.max if cos is not None else None, "cos"),
        "figure": ctx.figure("cosine_by_language"),
        "sources": ctx.refs_for([f"captures/{n}/workload_requests.jsonl" for n in ctx.names], always=sources),
    }
