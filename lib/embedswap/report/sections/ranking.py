"""Search ranking: nDCG@10, recall@5, MRR@10, top-5 overlap for legacy, address swap only, and through the shim; the
verdicts and the decision come from the summary's ``decisions.ranking``."""

from __future__ import annotations

import re
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.ranking_verdict import by_candidate
from embedswap.report.catalogue import fill
from embedswap.stats.equivalence import message_key, shown_direction
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.stats import delta_cell, paired
from embedswap.report.sections.verdicts import slices_table, worse_named
from embedswap.summary.types_plan import RankingQuestion
from embedswap.summary.types_decisions import PairedTest, RankingVariant
from embedswap.summary.types_sections import AgreementStat, CandidateRanking, MetricDeltas, RankingRun

KINDS = ("naive", "shim")


def _entry(entries: dict[str, CandidateRanking], name: str) -> CandidateRanking:
    """One candidate's ranking entry; a candidate the section does not list has two unmeasured variants."""
    found = entries.get(name)
    if found is not None:
        return found
    return CandidateRanking(measured=False, naive=RankingRun(measured=False), shim=RankingRun(measured=False))


def _cells(ctx: ReportContext, variant: RankingRun | None, deltas: MetricDeltas | None, reference: bool,
           verdict: RankingVariant | None = None) -> list[str]:
    if variant is None or not is_measured(variant):
        return [ctx.label(False)] * 8
    ref = f"{MISSING} ({ctx.terms['reference']})"
    d = deltas or MetricDeltas()

    def test(metric: str) -> PairedTest | None:
        return verdict.test(metric) if verdict is not None else None

    return [fmt(variant.ndcg_at_10, "score"),
            ref if reference else delta_cell(d.ndcg_at_10, test("ndcg_at_10")),
            fmt(variant.recall_at_5, "score"),
            ref if reference else delta_cell(d.recall_at_5, test("recall_at_5")),
            fmt(variant.mrr_at_10, "score"),  # "—" where not measured
            ref if reference else delta_cell(d.mrr_at_10, test("mrr_at_10")),
            ref if reference else fmt(variant.top5_overlap, "score"),
            f"{fmt(variant.judged_queries, 'int')} / {fmt(variant.queries, 'int')}"]


def _rows(ctx: ReportContext, entries: dict[str, CandidateRanking],
          state_label: str) -> tuple[list[list[str]], list[dict]]:
    """The table rows (legacy, then each candidate's two variants) and why a variant is missing."""
    t = ctx.terms
    rows = [[esc(t["variants"]["legacy"]), code(ctx.legacy), t["queries_how"]["legacy"], state_label,
             *_cells(ctx, ctx.summary.ranking.legacy, None, True)]]
    why = []
    for name in ctx.candidates:
        entry = _entry(entries, name)
        decided = ctx.decisions.ranking.of(name)
        for kind in KINDS:
            variant: RankingRun = getattr(entry, kind)
            measured = is_measured(variant)
            if not measured:
                reason = ctx.why(variant) or esc(t["no_section"])
                why.append({"name": name, "variant": t["variants"][kind], "why": reason})
            verdict = getattr(decided, kind) if decided is not None else None
            rows.append([esc(t["variants"][kind]), code(name), t["queries_how"][kind],
                         state_label if measured else ctx.not_measured_cell(name),
                         *_cells(ctx, variant, entry.delta(kind), False, verdict)])
    return rows, why


# another model's verdict (non-inferiority) in the report's words, keyed as the post keys it (equivalence.message_key)
NON_INFERIORITY_STATE = {"non_inferior_better": "rank_better", "non_inferior": "rank_not_worse",
                         "equivalent": "rank_not_worse", "different_worse": "rank_worse", "different": "rank_worse"}


def _state(t: dict[str, Any], verdict: RankingVariant, undecided: bool, question: RankingQuestion) -> str:
    """The verdict in words: the same ranking or not (equivalence); superior / non-inferior / worse (another
    model's non-inferiority question, its plan's), from the verdict the post words too (``speaking``)."""
    if undecided:
        return t["rank_undecided"]
    spoken = verdict.speaking(question)
    if question == "equivalence" or spoken is None:
        return t["rank_same"] if verdict.unchanged else t["rank_differs"]
    key = message_key(spoken.code, shown_direction(spoken))
    return t[NON_INFERIORITY_STATE.get(key, "rank_worse" if spoken.direction == "worse" else "rank_not_worse")]


def _line(ctx: ReportContext, entry: CandidateRanking, kind: str,
          verdict: RankingVariant | None, question: RankingQuestion = "equivalence") -> tuple[str, str] | None:
    """(long, short) sentence for one variant's verdict, or None without a number."""
    spoken = verdict.speaking(question) if verdict is not None else None
    undecided = spoken is not None and spoken.code == "inconclusive"
    if verdict is None or (verdict.unchanged is None and not undecided):
        return None
    t = ctx.terms
    variant: RankingRun = getattr(entry, kind)
    d = entry.delta(kind) or MetricDeltas()
    state = _state(t, verdict, undecided, question)
    changed = verdict.changed_queries
    text = fill(
        t["rank_line"], state=state, d_ndcg=fmt(d.ndcg_at_10, "delta"), d_recall=fmt(d.recall_at_5, "delta"),
        d_mrr=fmt(d.mrr_at_10, "delta") if d.mrr_at_10 is not None else None,  # no clause without a stored MRR
        overlap=fmt(variant.top5_overlap, "score"), changed=MISSING if changed is None else fmt(changed, "int"),
        queries=fmt(verdict.queries, "int"))
    clauses = [paired(t, t[key], verdict.test(metric))
               for metric, key in (("ndcg_at_10", "ndcg"), ("recall_at_5", "recall"), ("mrr_at_10", "mrr"))]
    clauses = [c for c in clauses if c]
    if clauses:
        text += fill(t["stats"]["rank_tests"], tests="; ".join(clauses))
    text += _verdict_clause(t, verdict)
    ndcg_test = verdict.test("ndcg_at_10")
    low, high, p = (None, None, None) if ndcg_test is None else (ndcg_test.low, ndcg_test.high, ndcg_test.p_value)
    short = fill(t["rank_short"], state=state, d_ndcg=fmt(d.ndcg_at_10, "delta"), low=fmt(low, "delta"),
                 high=fmt(high, "delta"), p=fmt(p, "p"), overlap=fmt(variant.top5_overlap, "score"))
    return text, short


def _verdict_clause(t: dict[str, Any], verdict: RankingVariant) -> str:
    """The equivalence verdict's code and, when inconclusive, the queries that would decide it ('' without one)."""
    found = verdict.equivalence
    if found is None:  # a summary decided before the verdicts existed
        return ""
    text = fill(t["rank_verdict"], code=code(found.code))
    if found.code == "inconclusive":
        text += (fill(t["rank_verdict_needed"], n=fmt(found.n_needed, "int")) if found.n_needed is not None
                 else t["rank_verdict_no_n"])
    return text + worse_named(t, verdict.slices)


def slices(ctx: ReportContext) -> str | None:
    """Each candidate variant's ranking comparisons per query language (stored ``slices``), or None."""
    t = ctx.terms
    rows = []
    for name in ctx.candidates:
        decided = ctx.decisions.ranking.of(name)
        for kind in KINDS:
            variant = getattr(decided, kind) if decided is not None else None
            for metric, found in (variant.slices if variant is not None else {}).items():
                rows.append((f"{code(name)} ({esc(t['variants'][kind])})",
                             t["equivalence"]["comparisons"].get(metric, metric), found))
    return slices_table(t, rows)


def ranking_finding(ctx: ReportContext, name: str, entry: CandidateRanking) -> dict[str, Any]:
    """One candidate's two verdicts and the decision, in this language."""
    verdict = ctx.decisions.ranking.of(name)
    question = ctx.summary.plan.ranking_question(name)
    lines = {kind: _line(ctx, entry, kind, getattr(verdict, kind) if verdict is not None else None, question)
             for kind in KINDS}
    code_ = verdict.decision if verdict is not None else None
    decisions = ctx.terms["rank_decision"]
    if code_ == "shim_missing":
        decision = fill(decisions["shim_missing"], label=ctx.label(False), why=ctx.why(entry.shim) or MISSING)
    elif code_ == "undecided":
        n_needed = verdict.n_needed if verdict is not None else None
        decision = (fill(decisions["undecided"], n=fmt(n_needed, "int")) if n_needed is not None
                    else decisions["undecided_no_n"])
    else:
        decision = decisions.get(code_, MISSING)
    return {"name": name, "naive": (lines["naive"] or (None,))[0], "shim": (lines["shim"] or (None,))[0],
            "decision": decision, "naive_short": lines["naive"][1] if lines["naive"] else None,
            "shim_short": lines["shim"][1] if lines["shim"] else None,
            "naive_same": verdict.naive.unchanged if verdict is not None else None,
            "shim_same": verdict.shim.unchanged if verdict is not None else None}


def _interval_cell(stat: AgreementStat | None) -> str:
    if stat is None or stat.mean is None:
        return MISSING
    return f"{fmt(stat.mean, 'score')} [{fmt(stat.low, 'score')}, {fmt(stat.high, 'score')}]"


def agreement_table(ctx: ReportContext, entries: dict[str, CandidateRanking]) -> str | None:
    """Judgement-free agreement of each candidate variant with the legacy ranking (summary ``agreement``)."""
    t = ctx.terms["agreement"]
    rows, ks = [], None
    for name in ctx.candidates:
        for kind in KINDS:
            found = getattr(_entry(entries, name), kind).agreement
            if found is None or not found.model_fields_set:  # {}: nothing to show
                continue
            if not rows:
                ks = found.k
            rows.append([esc(ctx.terms["variants"][kind]), code(name),
                         *[_interval_cell(found.overlap_at(k)) for k in found.k],
                         _interval_cell(found.rbo), _interval_cell(found.top1_changed),
                         fmt(found.queries, "int")])
    if not rows:
        return None
    header = [ctx.terms["variant"], ctx.terms["documents_of"], *[fill(t["overlap_at"], k=k) for k in ks],
              t["rbo"], t["top1_changed"], t["queries"]]
    return md_table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2))


def ranking(ctx: ReportContext) -> dict[str, Any]:
    """Search ranking (nDCG@10, recall@5, MRR@10, top-5 overlap): legacy, address swap only, through the shim."""
    t = ctx.terms
    section = ctx.summary.ranking
    decided = ctx.decisions.ranking
    meaningless = not decided.meaningful
    tolerance = decided.tolerance
    empty = {"state": False, "meaningless": meaningless, "table": None, "findings": [], "why": [],
             "definitions": t["ranking_defs"], "sources": MISSING, "queries": MISSING, "agreement": None,
             "judged": True,
             "tolerance": {"overlap": fmt(tolerance.top5_overlap_min, "score"),
                           "ndcg": fmt(tolerance.ndcg_margin, "score"),
                           "recall": fmt(tolerance.recall_margin, "score"), "mrr": fmt(tolerance.mrr_margin, "score"),
                           "alpha": fmt(tolerance.alpha, "raw"),
                           "interval": fmt(round(100 * (1 - 2 * tolerance.alpha), 6), "raw")}}
    if not is_measured(section):
        return {**empty, "label": ctx.label(False), "top_why": ctx.why(section)}
    legacy = section.legacy
    entries = by_candidate(ctx.summary)
    state_label = t["not_meaningful"] if meaningless else ctx.label(True)
    rows, why = _rows(ctx, entries, state_label)
    findings = [] if meaningless else [ranking_finding(ctx, n, _entry(entries, n)) for n in ctx.candidates]
    header = [t["variant"], t["documents_of"], t["queries_as"], t["label"], t["ndcg"], t["d_ndcg"], t["recall"],
              t["d_recall"], t["mrr"], t["d_mrr"], t["overlap"], t["judged"]]
    variants = [legacy] + [getattr(_entry(entries, n), k) for n in ctx.candidates for k in KINDS]
    sources = [re.sub(r"\[\d+\]$", "", str(path)) for variant in variants
               if variant is not None and is_measured(variant) and variant.source is not None
               for path in (variant.source.documents, variant.source.queries)]
    measured_states = [True] + [is_measured(getattr(_entry(entries, n), k)) for n in ctx.candidates for k in KINDS]
    label_text = t["not_meaningful"] if meaningless else combined_label(measured_states, ctx.lang)
    # a summary that does not say whether the queries were judged counts them as judged
    judged = section.judged if "judged" in section.model_fields_set else True
    return {
        **empty, "state": True, "label": label_text, "top_why": None,
        "table": "\n\n".join(x for x in (md_table(header, rows, ["l", "l", "l", "l"] + ["r"] * 8), slices(ctx)) if x),
        "findings": findings, "why": why, "queries": fmt(legacy.queries if legacy is not None else None, "int"),
        "agreement": agreement_table(ctx, entries), "judged": judged,
        "sources": ctx.refs_for([], always=list(dict.fromkeys(sources))),
    }
