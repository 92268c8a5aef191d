"""What happens to the user's index: per candidate the decision of ``decisions.index`` (keep, re-embed with its
cost, adapter, blocked), the figures behind it and the grid's table (candidate queries on the index at each
re-embedded share, exact and HNSW). Formatting only: every figure is in the summary."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.index_options import option_tables
from embedswap.summary.types_equivalence import Verdict
from embedswap.summary.types_index import CellDecision, HnswPlan, IndexDecision


def _verdict(ctx: ReportContext, v: Verdict | None, kind: str = "delta") -> str:
    if v is None:
        return MISSING
    words = ctx.terms["index"]["verdicts"]
    name = words.get(f"{v.code}_{v.direction}" if v.direction else v.code, words.get(v.code, v.code))
    return fill(ctx.terms["index"]["verdict_cell"], estimate=fmt(v.estimate, kind), low=fmt(v.low, kind),
                high=fmt(v.high, kind), verdict=name)


def _row(ctx: ReportContext, cell: CellDecision, basis: str) -> list[str]:
    words = ctx.terms["index"]
    verdict = cell.ndcg if basis == "ndcg_at_10" else cell.overlap
    return [fmt(cell.share, "pct"), words["methods"][cell.method], fmt(cell.ndcg_at_10, "score"),
            fmt(cell.recall_at_5, "score"), fmt(cell.top5_overlap, "score"), _verdict(ctx, verdict),
            fmt(cell.hnsw_recall, "score")]


def _table(ctx: ReportContext, decision: IndexDecision) -> str:
    words = ctx.terms["index"]
    basis = decision.basis or "ndcg_at_10"
    cells = sorted((c for c in decision.cells if c.queries == "candidate"), key=lambda c: (c.share, c.method))
    legacy = sorted((c for c in decision.cells if c.queries == "legacy" and c.share in (0, 1)),
                    key=lambda c: (c.share, c.method))
    rows = [_row(ctx, c, basis) for c in cells]
    rows += [[f"{fmt(c.share, 'pct')} ({words['legacy_queries']})", *_row(ctx, c, basis)[1:]] for c in legacy]
    metric = words["ndcg"] if basis == "ndcg_at_10" else words["overlap"]
    return md_table([words["share"], words["method"], words["ndcg"], words["recall"], words["overlap"],
                     fill(words["change"], metric=metric), words["hnsw_recall"]], rows,
                    ["r", "l", "r", "r", "r", "l", "r"])


def _cost(ctx: ReportContext, decision: IndexDecision) -> list[dict[str, str]]:
    out = []
    for cost in (decision.cost, decision.cost_best):
        if cost is None:
            continue
        out.append({"point": code(cost.point), "corpus": fmt(cost.corpus_size, "int"),
                    "rate": fmt(cost.docs_per_s, "rate"), "rate_low": fmt(cost.docs_per_s_low, "rate"),
                    "rate_high": fmt(cost.docs_per_s_high, "rate"), "hours": fmt(cost.hours_per_replica, "s"),
                    "hours_low": fmt(cost.hours_low, "s"), "hours_high": fmt(cost.hours_high, "s"),
                    "window": fmt(cost.window_hours, "raw"), "replicas": fmt(cost.replicas, "int"),
                    "replicas_high": fmt(cost.replicas_high, "int"),
                    "scaled": cost.token_scale != 1.0})
    return out


def _candidate(ctx: ReportContext, name: str, decision: IndexDecision) -> dict[str, Any]:
    entry = ctx.summary.index.of(name)
    adapter = decision.adapter
    why = ""
    if entry is not None and not entry.measured:
        why = ctx.why(entry)
    return {
        "name": code(name), "why": why,
        # the key of its message in [prose.index.decisions]: the one decision (``choice``), worded as the index
        # options chose it where they decided (the sample's cross search is then a figure); a re-embed because an
        # index mixing both servers' vectors ranks worse has its own message (the cross check alone passed)
        "decision": "by_options" if decision.decided_on == "options" else (
            "re_embed_mixed" if decision.choice == "re_embed" and decision.mixed_worse else decision.choice),
        "option": ctx.terms["index_options"]["names"].get(decision.option or "", "")
        if decision.decided_on == "options" else "",
        "basis": decision.basis,
        "cross": _verdict(ctx, decision.cross),
        "backward": decision.backward_compatible,
        "retention": fmt(decision.retention, "pct"),
        "hnsw_recall": fmt(decision.hnsw_recall, "score"),
        "length": decision.length, "advice": decision.advice,
        "distance": code(decision.distance or ""),
        "adapter": None if adapter is None else {
            "identity": adapter.identity, "residual": f"{adapter.residual_test:.1e}",
            "unmapped": f"{adapter.residual_unmapped:.1e}", "retained": fmt(adapter.retained, "pct"),
            "cross_retained": fmt(adapter.cross_retained, "pct"), "verdict": _verdict(ctx, adapter.verdict)},
        "costs": _cost(ctx, decision),
        "mixed_worse": fmt(decision.mixed_worse, "pct") if decision.mixed_worse else "",
        "table": _table(ctx, decision) if decision.cells else "",
    }


def _hnsw(plan: HnswPlan | None) -> dict[str, Any] | None:
    """The plan's figures when some shares had no HNSW search (None: every share had it)."""
    if plan is None or not plan.exact_only:
        return None
    return {"shares": fmt(plan.shares, "pct"), "exact_only": fmt(plan.exact_only, "pct"), "setting": plan.setting,
            "documents": fmt(plan.documents, "int"), "limit": fmt(plan.auto_max_documents, "int")}


def index(ctx: ReportContext) -> dict[str, Any]:
    """The section's template values: ``state``, ``store``, ``candidates`` (one dict each), ``figure``."""
    section = ctx.summary.index
    if not is_measured(section):
        return {"state": False, "label": ctx.label(False),
                "why": ctx.why(section, ctx.words.reason("index_not_run")), "candidates": [],
                "figure": None}
    store = section.store
    return {
        "state": True, "label": ctx.label(True),
        "store": None if store is None else {
            "kind": store.kind, "server": esc(store.server_version), "pgvector": esc(store.pgvector_version),
            "dsn_env": code(f"${store.dsn_env}") if store.dsn_env else ""},
        "distance": code(section.distance), "k": section.k, "ef_search": section.ef_search,
        "shares": fmt(section.shares, "pct"),
        "hnsw": _hnsw(section.hnsw_plan),
        "seed": section.seed, "queries": section.queries,
        "sources": ctx.refs_for(["captures/index/searches.json"]),
        "candidates": [_candidate(ctx, name, decision) for name, decision in ctx.decisions.index.items()],
        "figure": ctx.figure("index_shares"),
        "options": option_tables(ctx),
    }
