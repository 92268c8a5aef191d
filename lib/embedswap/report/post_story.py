"""The post's statements stored in ``decisions.post`` by :mod:`embedswap.analysis.post_story`, in the language:
this run's latency against the article's own figures, and the trade a shim makes. Only words and formatting here:
which statement is made, its relation and its figures are the stored ones."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.article import Article
from embedswap.report.catalogue import fill
from embedswap.report.claim import label
from embedswap.report import post_figures
from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext
from embedswap.analysis.post_conclusion import keyed_code
from embedswap.analysis.post_story import CONCURRENCY
from embedswap.summary.types_post import ArticleComparison, ArticleFigure, Fact
from embedswap.summary.types_post_document import Statement

METRIC = {"seq_p50": "seq_p50", "conc_docs_per_s": "conc_rate"}  # an article figure -> its claim label's metric


def _names(ctx: ReportContext, subjects: list[str]) -> str:
    return ctx.terms["post"]["list_sep"].join(code(s) for s in subjects)


def _fact(facts: list[Fact], key: str) -> Fact | None:
    return next((f for f in facts if f.key == key), None)


def _key(f: ArticleFigure) -> str:
    return f"{f.relation}_{f.direction}" if f.relation in ("same_direction", "reversed") else f.relation


def _relations(ctx: ReportContext, figures: list[ArticleFigure]) -> str:
    """Each figure's relation in words; figures with one relation share one phrase (no twin clauses)."""
    post = ctx.terms["post"]
    keys = list(dict.fromkeys(_key(f) for f in figures))
    out = []
    for key in keys:
        labels = [label(ctx, METRIC[f.figure]) for f in figures if _key(f) == key]
        both = fill(post["article_both"], a=labels[0], b=labels[1]) if len(labels) == 2 else labels[0]
        out.append(fill(post["article_relation"][key], label=both))
    return post["article_join"].join(out)


def article_statements(ctx: ReportContext, article: Article | None) -> list[dict[str, Any]]:
    """``decisions.post.article`` worded: the article's ratios as published (``raw``: 2.8 prints as 2.8), the
    relation of each figure and, where a figure does not go the article's way, the host facts."""
    stored: list[ArticleComparison] = ctx.decisions.post.article or []
    if article is None:
        return []
    times = ctx.terms["post"]["times"]
    out = []
    for c in stored:
        by = {f.figure: f for f in c.figures}
        seq, rate = by.get("seq_p50"), by.get("conc_docs_per_s")
        if seq is None or rate is None:
            continue
        cores, gpu = _fact(c.facts, "host_cores"), _fact(c.facts, "host_gpu")
        out.append({
            "names": _names(ctx, c.subjects),
            # the article's figure at the article's concurrency (its label), this run's verdicts at this run's
            "seq_label": label(ctx, "seq_p50"), "rate_label": fill(ctx.terms["equivalence"]["comparisons"][
                "conc_rate"], c=fmt(article.latency.concurrency, "raw")),
            # the article's ratios and the host's cores as the document's statement cites them
            "seq": fill(times, x=post_figures.printed(ctx, "post.article_comparison", "seq_p50", list(c.subjects))),
            "rate": fill(times, x=post_figures.printed(ctx, "post.article_comparison", "conc_docs_per_s",
                                                       list(c.subjects))),
            "words": _relations(ctx, [seq, rate]),
            "why": c.why, "cores": fmt(post_figures.value(ctx, "post.article_comparison", "host_cores",
                                                          list(c.subjects)) if cores else None, "raw"),
            "gpu": str(gpu.value) if gpu is not None and gpu.value else "",
            "hardware": article.environment.hardware.in_lang(ctx.lang)})
    return out


def shim_trades(ctx: ReportContext) -> list[dict[str, Any]]:
    """``decisions.post.shim_trades`` worded: nDCG@10 of the legacy server, of the address swap and through the
    shim, at the ranking's precision (3 decimals), as the document's ``post.shim_trades.<code>`` cites them."""
    return [{"code": t.code, "names": _names(ctx, t.subjects),
             **{side: post_figures.printed(ctx, f"post.shim_trades.{t.code}", f"ndcg_{side}", list(t.subjects))
                for side in ("legacy", "candidate", "shim")}}  # the document's statement's figures
            for t in ctx.decisions.post.shim_trades or []]


def concurrency_gains(ctx: ReportContext) -> list[dict[str, Any]]:
    """The document's ``post.concurrency_gains.<code>`` statements worded: per statement its servers, each with
    its gain and interval as measured here (a gain stored without an interval printed without one), the margin,
    the concurrency and this host's CPU count; ``all``: one statement says it of every server. The article's own
    figure (Dynamo over the legacy server at its concurrency) is the first statement's, printed once after them."""
    document = ctx.decisions.post.document
    found = [s for s in (document.statements() if document is not None else []) if keyed_code(s, CONCURRENCY)]
    times = ctx.terms["post"]["times"]

    def x(s: Statement, key: str) -> str:
        f = s.fact(key)
        return fill(times, x=post_figures.as_printed(key, f.value if f is not None else None))

    out = []
    for s in found:
        items, bare = [], False
        for name in s.subjects:
            low, high = s.fact(f"{name}.gain_low"), s.fact(f"{name}.gain_high")
            bounded = low is not None and low.value is not None and high is not None and high.value is not None
            bare = bare or not bounded  # a gain stored without an interval: the sentence says why
            interval = f" [{x(s, f'{name}.gain_low')}, {x(s, f'{name}.gain_high')}]" if bounded else ""
            items.append(f"{code(name)} {x(s, f'{name}.gain')}{interval}")
        out.append({"code": keyed_code(s, CONCURRENCY), "all": len(found) == 1 and len(s.subjects) > 1,
                    "names": _names(ctx, s.subjects), "gains": ctx.terms["post"]["list_sep"].join(items),
                    "no_interval": bare, "margin": x(s, "gain_margin"),
                    "c": _printed(s, "concurrency"), "cores": _printed(s, "cpu_count")})
    return out


def _printed(s: Statement, key: str) -> str:
    f = s.fact(key)
    return post_figures.as_printed(key, f.value if f is not None else None)
