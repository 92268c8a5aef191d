"""The post: the blog draft in the article's shape (conclusion first, claim headings, one contract table, one
latency table, what cannot be moved, what was not measured, a closing judgement). Its sentences and figures are the
stored post document's (``decisions.post.document``): claims, facts and their sources are decided before rendering
(analysis/post_document.py), and this module, report/post_figures.py, post_contract.py, post_conclusion.py and
post_claims.py word them through the catalogues. The full report (report.md.j2, every table) is the linked appendix.

Candidates with the same vectors share a column, a row and a sentence: a group is worded once, with what
separates its members."""

from __future__ import annotations

import re
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.post_counts import LEGACY_ANSWER
from embedswap.analysis.article import Article, load_article
from embedswap.report.catalogue import LANGUAGES, environment, fill
from embedswap.report.errors import ReportError
from embedswap.report.format import code, esc, fmt, md_table
from embedswap.report import post_figures
from embedswap.report.post_lines import index_choice, vectors_why
from embedswap.report.josa import josa
from embedswap.report.post_conclusion import conclusion_words
from embedswap.report.post_contract import contract_paragraphs
from embedswap.report.post_story import article_statements, concurrency_gains, shim_trades
from embedswap.report.claim import times
from embedswap.report.post_claims import (engine_cost, index_claims, latency_claims, latency_statements, pair_claims,
                                          parity_claim, probe_phrase, ranking_claims, restore_measured, setup_fact,
                                          shim_coverage)
from embedswap.report.sections.faults import comparable, conclusion_headlines
from embedswap.report.sections.long_input import long_input
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.contract import change_items
from embedswap.report.sections.status import setup, status
from embedswap.report.sections.vectors import another_model_entries
from embedswap.summary.model import Summary
from embedswap.summary.types_decisions import RatioInterval
from embedswap.summary.types_post import CandidateConclusion, CandidateGroup

TEMPLATE = "post.md.j2"
FULL_REPORT = "report.{lang}.md"  # the appendix beside the post; publish rewrites the link per site
FIXED = ("sequential", "concurrent")


def _names(ctx: ReportContext, members: list[str]) -> str:
    return " · ".join(code(m) for m in members)


def _status_cell(ctx: ReportContext, members: list[str], probe: str) -> str:
    rows = {r.probe: r for r in ctx.summary.contract} if isinstance(ctx.summary.contract, list) else {}
    row = rows.get(probe)
    if row is None:
        return ctx.label(False)
    # each answer's numbers as the document's contract table states them
    cells = [(m, ctx.side_cell(post_figures.answer(ctx, probe, m, row.by_target.get(m)))) for m in members]
    if len({c for _, c in cells}) == 1:
        return cells[0][1]
    return ", ".join(f"{c} ({code(m)})" for m, c in cells)


def _verdict_word(ctx: ReportContext, conclusions: list[CandidateConclusion], probe: str, shim: bool) -> str:
    words = ctx.terms["post"]["verdict"]
    found = []
    for c in conclusions:
        answer = next((a for a in c.answers if a.probe == probe), None)
        if answer is None:
            continue
        if answer.outcome == "legacy_failed":
            found.append("legacy_failed")
        else:
            found.append(answer.shim_verdict if shim else answer.verdict)
    found = [f for f in dict.fromkeys(found)]
    if not found or found == [None]:
        return ctx.label(False)
    return " / ".join(words.get(f or "", ctx.label(False)) for f in found)


def _contract(ctx: ReportContext, article: Article | None) -> dict[str, Any]:
    post = ctx.decisions.post
    rows = ctx.summary.contract if isinstance(ctx.summary.contract, list) else []
    if not rows:
        return {"table": None}
    differing = {a.probe for c in post.conclusions for a in c.answers if a.outcome in ("differs", "legacy_failed")}
    by_article = {e.probe: e for e in (article.contract if article is not None else [])}
    probes = [r.probe for r in rows if r.probe in differing or r.probe in by_article]
    t, p = ctx.terms, ctx.terms["post"]
    shimmed = bool(ctx.shimmed())
    header = [t["post"]["request"]]
    if article is not None:
        header += [p["article_legacy"], p["article_candidate"]]
    header += [fill(p["this_run"], name=code(ctx.legacy))]
    header += [fill(p["this_run"], name=_names(ctx, g.members)) for g in post.groups]
    header += [p["verdict_col"]] + ([p["shim_col"]] if shimmed else [])
    table = []
    for probe in probes:
        entry = by_article.get(probe)
        source = next(r for r in rows if r.probe == probe)
        # the probe's short phrase, as the sentences under the table name it
        row = [esc(ctx.terms["post"]["probe_words"].get(probe) or ctx.words.probes.get(probe, probe)) + (
            " (" + fill(p["compared_with"], probe=probe_phrase(ctx, source.baseline())) + ")"
            if source.baseline() else "")]
        if article is not None:
            row += [entry.legacy.in_lang(ctx.lang), entry.candidate.in_lang(ctx.lang)] if entry else ["—", "—"]
        # a route the legacy server lacks: its answer to the baseline probe is what the verdict compared
        row.append(ctx.side_cell(post_figures.answer(ctx, probe, LEGACY_ANSWER, source.legacy)) if source.baseline()
                   else _status_cell(ctx, [ctx.legacy], probe))
        row += [_status_cell(ctx, g.members, probe) for g in post.groups]
        row.append(_verdict_word(ctx, post.conclusions, probe, shim=False))
        if shimmed:
            row.append(_verdict_word(ctx, post.conclusions, probe, shim=True))
        table.append(row)
    return {"table": md_table(header, table, ["l"] * len(header)) if table else None}


def _latency(ctx: ReportContext, article: Article | None) -> dict[str, Any]:
    shown = ctx.decisions.shown
    c = post_figures.printed(ctx, "post.latency_table", "concurrency")  # the columns' concurrency, as stated
    p = ctx.terms["post"]
    header = ["", p["seq_p50"], p["seq_p99"], fill(p["conc_p50"], c=c), fill(p["conc_p99"], c=c),
              fill(p["conc_rate"], c=c)]
    # the article's statistic (the median of its 3 repeats), labelled so in its own cell, then this run's: every
    # cell a fact of the document's latency table
    rows = post_figures.latency_rows(ctx, article)
    measured = len(rows) > (2 if article is not None else 0)
    ratios = []
    rates: list[float] = []  # each candidate's concurrent throughput ratio
    for name in comparable(ctx):  # a server that corrupts answers is timed on the survivors: no ratio
        # the one stored ratio per figure (pooled, with the interval the verdict rests on): Summary.latency_ratio
        seq_ratio, rate_ratio = (_value(ctx.summary.latency_ratio(name, run, figure)) for run, figure in (
            ("sequential", "p50"), ("concurrent", "docs_per_s")))
        if rate_ratio is not None:
            rates.append(rate_ratio)
        if seq_ratio is None or rate_ratio is None:
            continue
        ratios.append({"name": code(name), "seq_from": fmt(_at(shown, ctx.legacy, "sequential", "p50_ms"), "ms"),
                       "seq_to": fmt(_at(shown, name, "sequential", "p50_ms"), "ms"),
                       "seq_ratio": times(ctx, seq_ratio),
                       "rate_from": fmt(_at(shown, ctx.legacy, "concurrent", "docs_per_s"), "rate"),
                       "rate_to": fmt(_at(shown, name, "concurrent", "docs_per_s"), "rate"),
                       "rate_ratio": times(ctx, rate_ratio), "faster": rate_ratio > 1})
    claims = latency_claims(ctx)
    heads = [r.headline for r in claims]
    return {"table": md_table(header, rows, ["l"] + ["r"] * 5) if measured else None, "concurrency": c,
            "statistic": shown.statistic, "ratios": ratios, "claims": claims, "pairs": pair_claims(ctx),
            # the document's statements: candidates whose statements are equal share one (the conclusion's
            # form, the body's)
            "brief": latency_statements(ctx, "post.c_latency_claim"),
            "lines": latency_statements(ctx, "post.latency_claim"),
            "p99_notes": list(dict.fromkeys(r.p99_note for r in claims if r.p99_note)),
            "heading": ("faster" if heads and all(h.direction == "faster" for h in heads) else
                        "slower" if heads and all(h.direction == "slower" for h in heads) else
                        "inconclusive" if heads and all(h.code == "inconclusive" for h in heads) else "plain"),
            "all_faster": bool(ratios) and all(r["faster"] for r in ratios),
            "all_slower": bool(ratios) and all(r < 1 for r in rates),
            "figure": ctx.figure("latency_points") if measured else None}


def _value(entry: RatioInterval | None) -> float | None:
    return entry.value if entry is not None else None


def _at(shown: Any, name: str | None, run: str, field: str) -> float | None:
    point = shown.at(name, run)
    return getattr(point, field) if point is not None else None


def _join(ctx: ReportContext, names: list[str]) -> str:
    return ctx.terms["post"]["list_sep"].join(code(x) for x in names)


def _probes(ctx: ReportContext, probes: list[str]) -> str:
    """Probes in running prose: each probe's short phrase in the language, never its identifier, in the contract's
    order (two candidates that answered the same probes alike then read alike)."""
    rows = ctx.summary.contract if isinstance(ctx.summary.contract, list) else []
    order = {r.probe: i for i, r in enumerate(rows)}
    ordered = sorted(dict.fromkeys(probes), key=lambda p: order.get(p, len(order)))
    return ctx.terms["post"]["list_sep"].join(probe_phrase(ctx, p) for p in ordered)


def _merged(ctx: ReportContext, items: list[Any], key: Any, name: str = "label") -> list[Any]:
    """Items (dicts or models) whose ``key(item)`` is equal said once, their names joined: candidates with
    identical findings share one sentence; different ones keep their own."""
    out: list[Any] = []
    seen: dict[Any, Any] = {}
    sep = ctx.terms["post"]["list_sep"]
    for item in items:
        k = key(item)
        first = seen.get(k)
        if first is None:
            copy = dict(item) if isinstance(item, dict) else item.model_copy()
            seen[k] = copy
            out.append(copy)
        elif isinstance(first, dict):
            first[name] += sep + item[name]
        else:
            setattr(first, name, getattr(first, name) + sep + getattr(item, name))
    return out


def _ranking_key(k: Any) -> Any:
    return (k.naive.same_finding(), k.shim.same_finding(), k.changed, k.queries, k.shim_changed,
            k.naive_ndcg.same_finding() if k.naive_ndcg else None, k.shim_ndcg.same_finding() if k.shim_ndcg else None)


def _group(ctx: ReportContext, g: CandidateGroup) -> dict[str, Any]:
    """A group's words for the vectors lines, the unknowns and the closings (its contract paragraph is the
    document's: report/post_contract.py)."""
    return {
        "label": _names(ctx, g.members), "plural": len(g.members) > 1, "basis": g.basis,
        **post_figures.group_figures(ctx, g.members),  # cosine, threshold: the group's vectors statement
        # the closing's tie sentence names the server whose front adds the 5xx
        "separators": [{"kind": s.kind, "origin": code(s.origin) if s.origin else None} for s in g.separators],
        "unknown": [ctx.terms["post"]["unknown"][u] for u in g.unknown if u not in ctx.decisions.post.not_measured],
    }


def _older(run: str | None, article: str) -> bool:
    """Whether this run's release is older than the article's (1.6.1 against 1.6.2); False when unreadable."""
    try:
        return tuple(int(x) for x in str(run).split(".")[:3]) < tuple(int(x) for x in article.split(".")[:3])
    except ValueError:
        return False


def build_post_context(summary: Summary, lang: str, figures: dict[str, bool], article: Article | None,
                       title: str | None) -> dict[str, Any]:
    ctx = ReportContext(summary, lang, figures, article, None, None, title)
    post = summary.decisions.post
    groups = [_group(ctx, g) for g in post.groups]
    vectors_measured = [g for g in groups if g["cosine"] != fmt(None, "cos4")]
    st = post_figures.servers(ctx, status(ctx))  # the servers' versions: the document's
    retry = any(c.retry for c in post.conclusions)
    changes = change_items(ctx, post_figures.todo_limit(ctx))  # the truncation limit as the document states it
    return {
        "lang": lang, "L": {"measured": ctx.label(True), "not_measured": ctx.label(False),
                            "unconfirmed": ctx.label(None)},
        "title": title, "st": st, "env": post_figures.host(ctx, st["env"]), "experiment": summary.experiment,
        "legacy": code(ctx.legacy), "legacy_name": ctx.legacy, "names": ctx.names, "groups": groups,
        "default_title": ctx.terms["post"]["default_title"],
        # the conclusion's vectors and contract sentences and the closings: the post document's statements
        **conclusion_words(ctx, groups, lambda probes: _probes(ctx, probes)),
        "faults": post_figures.faults(ctx, conclusion_headlines(ctx)),  # their figures: the document's
        "contract": _contract(ctx, article), "latency": _latency(ctx, article), "versions": post_figures.versions(ctx),
        "versions_differ": any(v.same is False for v in post.versions),
        "versions_older": any(v.same is False and _older(v.run, v.article) for v in post.versions),
        "versions_unknown": any(v.same is None for v in post.versions), "retry": retry,
        "dynamo": any(v.component == "dynamo" for v in post.versions),
        "not_measured": [ctx.terms["post"]["not_measured"][c] for c in post.not_measured],
        "article": article, "full_report": FULL_REPORT.format(lang=lang),
        "figure_cosine": ctx.figure("cosine_by_language") if vectors_measured else None,
        # the workload sentence's facts as the document states them (workload.batch_size, never the document count)
        **{key: fmt(setup_fact(ctx, "post.setup_workload", key), "int") for key in ("documents", "queries", "batch_size")},
        "parity_measured": is_measured(summary.parity), "code": code, "esc": esc,
        "ranking": _merged(ctx, ranking_claims(ctx), _ranking_key, "name"),
        "index": _merged(ctx, index_claims(ctx), lambda i: i.model_dump(exclude={"name"}).__repr__(), "name"),
        "shim_cov": _merged(ctx, shim_coverage(ctx), lambda c: c.model_dump(exclude={"name"}).__repr__(), "name"),
        "contract_paragraphs": contract_paragraphs(ctx, lambda probes: _probes(ctx, probes)),
        "todo": [i["text"] for i in changes if not i["shim_done"]],
        "todo_shim": [i["text"] for i in changes if i["shim_done"]],
        "parity": parity_claim(ctx), "cost": engine_cost(ctx), "restore_measured": restore_measured(ctx),
        # the long-input sentence's figures: the document's
        "vectors_why": vectors_why(ctx), "long_input": post_figures.long_input(ctx, long_input(ctx)),
        "models": (models := another_model_entries(ctx)),
        "models_conclusion": " ".join(m["conclusion"] for m in models),
        "index_choice": index_choice(ctx),
        **_shared(ctx, article),
    }


def _shared(ctx: ReportContext, article: Article | None) -> dict[str, Any]:
    """Statements that candidates with equal findings share (no twin sentences), and the stored story ones."""
    return {
        # the post prints no option table: equal choices are one sentence (their figures the document's)
        "index_options": _merged(ctx, post_figures.index_options(ctx), lambda o: repr(
            {k: v for k, v in o.items() if k not in ("name", "table")}), "name"),
        "long_inputs": _merged(ctx, [{**d, "name": code(d["name"])}
                                     for d in post_figures.long_input(ctx, long_input(ctx))["differing"]],
                               lambda d: (d["handling"], d["refused"]), "name"),
        "article_cmp": article_statements(ctx, article), "shim_trades": shim_trades(ctx),
        "concurrency_gains": concurrency_gains(ctx),  # what concurrency gained each server, beside the article's
        # the workload line and the candidates' launch commands as stored (report/sections/status.py's setup),
        # the article's vectors table beside this run's (report/sections/article.py's, its figures the document's)
        "setup": post_figures.workload(ctx, setup(ctx)),
        "vectors_table": post_figures.vectors_table(ctx) if article is not None
        and is_measured(ctx.summary.vectors) else None,
    }


def render_post(summary: Summary, lang: str = "ko", figures: dict[str, bool] | None = None,
                title: str | None = None, article: Article | None = None) -> str:
    """The post of one summary in one language, as markdown (figures as figures/<name>.png, the full report as
    report.<lang>.md)."""
    if lang not in LANGUAGES:
        raise ReportError(f"no report catalogue for language '{lang}' (known: {', '.join(LANGUAGES)})")
    context = build_post_context(summary, lang, figures if figures is not None else {},
                                 article if article is not None else load_article(), title)
    env = environment(lang, {"fmt": fmt, "code": code, "esc": esc, "josa": josa})
    text = env.get_template(TEMPLATE).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
