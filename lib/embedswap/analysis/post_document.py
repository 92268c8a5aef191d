"""The post as a document of statements (``decisions.post.document``, issue 63), decided from the decisions above it
before anything is rendered: per section, each statement's catalogue message, the claims it makes (stored
verdicts, each figure an :class:`~embedswap.summary.estimate.Estimate`) and the facts it cites, each with its
path in summary.json. Candidates whose statements are equal (as printed) share one statement; the index sentence
carries the queries its decision holds for as a fact (the condition it is true under). The conclusion's vectors and
contract sentences and the closings are decided in :mod:`embedswap.analysis.post_conclusion`, the contract paragraphs in
:mod:`embedswap.analysis.post_contract`, the figures outside claims (tables, cosines, host, versions, index, start
times) in :mod:`embedswap.analysis.post_figures`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.post_claims import delta_claim, headline_claim, latency_claim, variant_claims
from embedswap.analysis.post_conclusion import closing_statements, conclusion_statements
from embedswap.analysis.post_contract import contract_statements
from embedswap.analysis.post_counts import (contract_table, fault_lines, long_inputs, p99_notes, parity_line,
                                             shim_lines, todo_facts, workload_facts)
from embedswap.analysis.post_figures import (host, index_facts, index_options, latency_table, servers, start_times,
                                              vectors_groups, vectors_table)
from embedswap.analysis.post_story import ARTICLE_FIGURES, concurrency_statements
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions
from embedswap.summary.types_faults import comparable
from embedswap.summary.types_post import Fact, LatencyShown
from embedswap.summary.types_post_document import PostClaim, PostDocument, Section, Statement

# a fact's printed precision where it has one (report/format.py): statements equal as printed are one
FACT_DECIMALS = {"seq_from": 1, "seq_to": 1, "rate_from": 1, "rate_to": 1, "ndcg_legacy": 3, "ndcg_candidate": 3,
                 "ndcg_shim": 3, "hnsw_recall": 4, "retained": 4, "hours_per_replica": 1, "window_hours": 1}
# the figures a latency sentence prints: (run, figure, metric label)
LATENCY_FIGURES = (("sequential", "p50", "seq_p50"), ("concurrent", "docs_per_s", "conc_rate"))


def printed_fact(f: Fact) -> Any:
    """A fact's value as printed (its precision where it has one)."""
    digits = FACT_DECIMALS.get(f.key)
    return round(f.value, digits) if digits is not None and isinstance(f.value, float) else f.value


def _merge(statements: list[Statement], key: Callable[[Statement], Any]) -> list[Statement]:
    """Statements whose ``key`` is equal said once: their subjects and claims joined, the first one's facts kept."""
    out: list[Statement] = []
    keys: list[Any] = []
    for s in statements:
        k = key(s)
        if k in keys:
            first = out[keys.index(k)]
            first.subjects = [*first.subjects, *s.subjects]
            first.claims = [*first.claims, *s.claims]
        else:
            keys.append(k)
            out.append(s.model_copy(deep=True))
    return out


def _said(s: Statement) -> Any:
    """What a statement says without whom: its first subject's claims' findings and its facts as printed."""
    first = s.subjects[0] if s.subjects else ""
    return (s.key, tuple(c.finding() for c in s.claims_of(first)), tuple((f.key, printed_fact(f)) for f in s.facts))


def _brief(s: Statement) -> Any:
    """The conclusion's form: value and verdict only (its intervals are the body's)."""
    first = s.subjects[0] if s.subjects else ""
    return tuple((c.metric, c.code, c.direction, c.estimate.printed()[0], tuple(sorted(c.statuses.items())))
                 for c in s.claims_of(first))


def heading_finding(c: PostClaim) -> tuple[object, ...]:
    """What a latency heading prints of a claim: its code and direction, no figure (one heading for the section)."""
    return (c.code, c.direction)


def _heading(s: Statement) -> Any:
    """Headings equal as printed are one statement, whatever their figures (the demo's dynamo and vllm, both
    slower by 1.26x and 1.31x, were two statements saying the same)."""
    first = s.subjects[0] if s.subjects else ""
    return (s.key, tuple(heading_finding(c) for c in s.claims_of(first)))


def _shown_fact(shown: LatencyShown, key: str, name: str, run: str, field: str) -> Fact:
    point = shown.at(name, run)
    return Fact(key=key, value=getattr(point, field) if point is not None else None,
                source=f"decisions.shown.by_target.{name}.{run}.{field}")


def _latency(summary: SummaryBody, decisions: Decisions) -> tuple[list[Statement], list[Statement]]:
    """(the conclusion's latency statements, the latency section's)."""
    legacy, candidates = roles(summary)
    shown, latency = decisions.shown, decisions.latency
    heads, lines = [], []
    for name in comparable(decisions.faults, legacy, candidates):
        ratio = latency.ratios.get(name)
        if ratio is None:
            continue
        base = f"decisions.latency.ratios.{name}"
        claims = [latency_claim(ratio, [name], base, run, figure, metric, shown, legacy)
                  for run, figure, metric in LATENCY_FIGURES]
        heads.append(Statement(key="post.latency_headings", subjects=[name],
                               claims=[headline_claim(ratio, [name], base)]))
        lines.append(Statement(key="post.latency_claim", subjects=[name], claims=claims, facts=[
            _shown_fact(shown, "seq_from", legacy, "sequential", "p50_ms"),
            _shown_fact(shown, "seq_to", name, "sequential", "p50_ms"),
            _shown_fact(shown, "rate_from", legacy, "concurrent", "docs_per_s"),
            _shown_fact(shown, "rate_to", name, "concurrent", "docs_per_s")]))
    brief = [Statement(key="post.c_latency_claim", subjects=s.subjects, claims=s.claims) for s in lines]
    usable = set(comparable(decisions.faults, legacy, candidates))
    pairs = []
    for i, pair in enumerate(latency.pairs):
        if not {pair.first, pair.second} <= usable:
            continue
        subjects = [pair.second, pair.first]
        base = f"decisions.latency.pairs.{i}.ratio"
        pairs.append(Statement(key="post.pair_claim", subjects=subjects, claims=[
            latency_claim(pair.ratio, subjects, base, run, figure, metric) for run, figure, metric in LATENCY_FIGURES],
            facts=[_shown_fact(shown, "seq_from", pair.first, "sequential", "p50_ms"),
                   _shown_fact(shown, "seq_to", pair.second, "sequential", "p50_ms"),
                   _shown_fact(shown, "rate_from", pair.first, "concurrent", "docs_per_s"),
                   _shown_fact(shown, "rate_to", pair.second, "concurrent", "docs_per_s")]))
    articles = []
    for c in decisions.post.article or []:
        claims = []
        for name in c.subjects:
            ratio = latency.ratios.get(name)
            if ratio is None:
                continue
            for f in c.figures:
                run, figure = ARTICLE_FIGURES[f.figure][:2]
                metric = "seq_p50" if f.figure == "seq_p50" else "conc_rate"
                claims.append(latency_claim(ratio, [name], f"decisions.latency.ratios.{name}", run, figure, metric,
                                            shown, legacy))
        articles.append(Statement(key="post.article_comparison", subjects=list(c.subjects), claims=claims,
                                  facts=[f.article for f in c.figures] + list(c.facts)))
    body = [*_merge(heads, _heading), *_merge(lines, _said), *articles, *pairs]
    return _merge(brief, _brief), body


def _ranking(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    _, candidates = roles(summary)
    out: list[Statement] = []
    if is_measured(summary.ranking):
        lines = []
        for name in candidates:
            c = decisions.ranking.of(name)
            if c is None:
                continue
            question = summary.plan.ranking_question(name)
            naive, naive_ndcg = variant_claims(name, "naive", c.naive, question)
            shim, shim_ndcg = variant_claims(name, "shim", c.shim, question)
            path = f"decisions.ranking.by_candidate.{name}"
            lines.append(Statement(key="post.ranking_line", subjects=[name],
                                   claims=[x for x in (naive, naive_ndcg, shim, shim_ndcg) if x is not None],
                                   facts=[Fact(key="changed", value=c.naive.changed_queries,
                                               source=f"{path}.naive.changed_queries"),
                                          Fact(key="queries", value=c.naive.queries, source=f"{path}.naive.queries"),
                                          Fact(key="shim_changed", value=c.shim.changed_queries,
                                               source=f"{path}.shim.changed_queries")]))
        out += _merge(lines, _said)
    for t in decisions.post.shim_trades or []:
        claims = []
        for name in t.subjects:
            decided = decisions.ranking.of(name)
            for kind in ("naive", "shim"):
                v = getattr(decided, kind).metrics.get("ndcg_at_10") if decided is not None else None
                claims.append(delta_claim(v, subjects=[name], metric="ndcg_at_10",
                                          variant="address_swap" if kind == "naive" else "shim",
                                          source=f"decisions.ranking.by_candidate.{name}.{kind}.metrics.ndcg_at_10"))
        out.append(Statement(key=f"post.shim_trades.{t.code}", subjects=list(t.subjects), claims=claims, facts=[
            t.legacy.model_copy(update={"key": "ndcg_legacy"}), t.candidate.model_copy(update={"key": "ndcg_candidate"}),
            t.shim.model_copy(update={"key": "ndcg_shim"})]))
    index = []
    for name in candidates:
        d = decisions.index.get(name)
        if d is None or d.decided_on == "options":  # the options line says it, once
            continue
        facts = [Fact(key="index_choice", value=d.choice, source=f"decisions.index.{name}.choice")]
        if d.condition is not None:  # the queries the decision holds for: the sentence is true under them only
            facts.append(Fact(key="index_queries", value=d.condition.value,
                              source=f"decisions.index.{name}.condition.value"))
        facts += index_facts(decisions, name)  # the recall, cost and retained share the sentence prints
        index.append(Statement(key="post.index_line", subjects=[name], facts=facts))
    return [*out, *_merge(index, _said), *index_options(summary, decisions), *shim_lines(summary, decisions),
            *filter(None, [parity_line(summary)])]


def _setup(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    workload = summary.workload
    out = [Statement(key="post.setup_workload", facts=[
        Fact(key="documents", value=workload.documents, source="workload.documents"),
        Fact(key="batch_size", value=workload.batch_size, source="workload.batch_size"),  # never the documents
        Fact(key="queries", value=workload.queries, source="workload.queries"), *workload_facts(summary)])]
    versions = decisions.post.versions
    if versions:
        facts = []
        for i, v in enumerate(versions):
            facts += [Fact(key=f"{v.component}_article", value=v.article, source=f"article:environment.{v.component}"),
                      Fact(key=f"{v.component}_run", value=v.run, source=f"decisions.post.versions.{i}.run")]
        out.append(Statement(key="post.versions", facts=facts))
    return [*out, host(summary), *servers(summary)]


def post_document(summary: SummaryBody, decisions: Decisions) -> PostDocument:
    """The post's statements of one summary, from its decisions (``decisions.post`` and ``decisions.shown``
    included: decided last, this reads them)."""
    brief, latency = _latency(summary, decisions)
    sections = [Section(key="conclusion", statements=[*conclusion_statements(summary, decisions), *brief,
                                                      *filter(None, [long_inputs(summary)]),
                                                      *fault_lines(summary, decisions)]),
                Section(key="setup", statements=_setup(summary, decisions)),
                Section(key="contract", statements=[*filter(None, [contract_table(summary, decisions)]),
                                                    *contract_statements(summary, decisions)]),
                Section(key="vectors", statements=[*filter(None, [vectors_table(summary)]),
                                                   *vectors_groups(decisions)]),
                Section(key="ranking", statements=_ranking(summary, decisions)),
                Section(key="latency", statements=[latency_table(summary, decisions), *latency,
                                                   *concurrency_statements(summary, decisions.latency),
                                                   *p99_notes(summary, decisions)]),
                Section(key="immovable", statements=[start_times(summary)]),
                Section(key="closing", statements=[*closing_statements(decisions),
                                                   *filter(None, [todo_facts(decisions)])])]
    return PostDocument(sections=[s for s in sections if s.statements])
