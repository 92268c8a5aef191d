"""Search ranking: nDCG@10, recall@5, top-5 overlap for legacy, address swap only, and through the shim; the
verdicts and the decision come from the summary's ``decisions.ranking``."""

from __future__ import annotations

import re
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.ranking_verdict import by_candidate
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.stats import delta_cell, paired

KINDS = ("naive", "shim")


def _cells(ctx: ReportContext, variant: dict[str, Any], deltas: dict[str, Any] | None, reference: bool,
           tests: dict[str, Any] | None = None) -> list[str]:
    if not is_measured(variant):
        return [ctx.label(False)] * 6
    ref = f"{MISSING} ({ctx.terms['reference']})"
    d, tests = deltas or {}, tests or {}
    return [fmt(variant.get("ndcg_at_10"), "score"),
            ref if reference else delta_cell(d.get("ndcg_at_10"), tests.get("ndcg_at_10")),
            fmt(variant.get("recall_at_5"), "score"),
            ref if reference else delta_cell(d.get("recall_at_5"), tests.get("recall_at_5")),
            ref if reference else fmt(variant.get("top5_overlap"), "score"),
            f"{fmt(variant.get('judged_queries'), 'int')} / {fmt(variant.get('queries'), 'int')}"]


def _rows(ctx: ReportContext, entries: dict[str, Any], state_label: str) -> tuple[list[list[str]], list[dict]]:
    """The table rows (legacy, then each candidate's two variants) and why a variant is missing."""
    t = ctx.terms
    legacy = (ctx.raw.get("ranking") or {}).get("legacy") or {}
    rows = [[esc(t["variants"]["legacy"]), code(ctx.legacy), t["queries_how"]["legacy"], state_label,
             *_cells(ctx, legacy, None, True)]]
    why = []
    for name in ctx.candidates:
        entry = entries.get(name) or {"naive": {}, "shim": {}}
        deltas = entry.get("deltas") or {}
        decided = ((ctx.raw_decisions.get("ranking") or {}).get("by_candidate") or {}).get(name) or {}
        for kind in KINDS:
            variant = entry.get(kind) or {}
            measured = is_measured(variant)
            if not measured:
                reason = ctx.why(variant) or ctx.why(entry) or esc(t["no_section"])
                why.append({"name": name, "variant": t["variants"][kind], "why": reason})
            rows.append([esc(t["variants"][kind]), code(name), t["queries_how"][kind],
                         state_label if measured else ctx.not_measured_cell(name),
                         *_cells(ctx, variant, deltas.get(kind), False, (decided.get(kind) or {}).get("tests"))])
    return rows, why


def _line(ctx: ReportContext, entry: dict[str, Any], kind: str, verdict: dict[str, Any]) -> tuple[str, str] | None:
    """(long, short) sentence for one variant's verdict, or None without a number."""
    unchanged = verdict.get("unchanged")
    if unchanged is None:
        return None
    t = ctx.terms
    variant = entry.get(kind) or {}
    d = (entry.get("deltas") or {}).get(kind) or {}
    state = t["rank_same"] if unchanged else t["rank_differs"]
    changed = verdict.get("changed_queries")
    text = t["rank_line"].format(
        state=state, d_ndcg=fmt(d.get("ndcg_at_10"), "delta"), d_recall=fmt(d.get("recall_at_5"), "delta"),
        overlap=fmt(variant.get("top5_overlap"), "score"), changed=MISSING if changed is None else fmt(changed, "int"),
        queries=fmt(verdict.get("queries"), "int"))
    tests = verdict.get("tests") or {}
    clauses = [paired(t, t[key], tests.get(metric)) for metric, key in (("ndcg_at_10", "ndcg"), ("recall_at_5", "recall"))]
    clauses = [c for c in clauses if c]
    if clauses:
        text += t["stats"]["rank_tests"].format(tests="; ".join(clauses))
    ndcg_test = (verdict.get("tests") or {}).get("ndcg_at_10") or {}
    short = t["rank_short"].format(state=state, d_ndcg=fmt(d.get("ndcg_at_10"), "delta"),
                                   low=fmt(ndcg_test.get("low"), "delta"), high=fmt(ndcg_test.get("high"), "delta"),
                                   p=fmt(ndcg_test.get("p_value"), "p"), overlap=fmt(variant.get("top5_overlap"), "score"))
    return text, short


def ranking_finding(ctx: ReportContext, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One candidate's two verdicts and the decision, in this language."""
    verdict = ((ctx.raw_decisions.get("ranking") or {}).get("by_candidate") or {}).get(name) or {}
    lines = {kind: _line(ctx, entry, kind, verdict.get(kind) or {}) for kind in KINDS}
    code_ = verdict.get("decision")
    decisions = ctx.terms["rank_decision"]
    if code_ == "shim_missing":
        reason = ctx.why(entry.get("shim") or {}) or ctx.why(entry) or MISSING
        decision = decisions["shim_missing"].format(label=ctx.label(False), why=reason)
    else:
        decision = decisions.get(code_, MISSING)
    return {"name": name, "naive": (lines["naive"] or (None,))[0], "shim": (lines["shim"] or (None,))[0],
            "decision": decision, "naive_short": lines["naive"][1] if lines["naive"] else None,
            "shim_short": lines["shim"][1] if lines["shim"] else None,
            "naive_same": (verdict.get("naive") or {}).get("unchanged"),
            "shim_same": (verdict.get("shim") or {}).get("unchanged")}


def _interval_cell(stat: dict[str, Any] | None) -> str:
    stat = stat or {}
    if stat.get("mean") is None:
        return MISSING
    return f"{fmt(stat['mean'], 'score')} [{fmt(stat.get('low'), 'score')}, {fmt(stat.get('high'), 'score')}]"


def agreement_table(ctx: ReportContext, entries: dict[str, Any]) -> str | None:
    """Judgement-free agreement of each candidate variant with the legacy ranking (summary ``agreement``)."""
    t = ctx.terms["agreement"]
    rows = []
    for name in ctx.candidates:
        for kind in KINDS:
            found = ((entries.get(name) or {}).get(kind) or {}).get("agreement")
            if not found:
                continue
            rows.append([esc(ctx.terms["variants"][kind]), code(name),
                         *[_interval_cell(found.get(f"overlap_at_{k}")) for k in found.get("k") or ()],
                         _interval_cell(found.get("rbo")), _interval_cell(found.get("top1_changed")),
                         fmt(found.get("queries"), "int")])
    if not rows:
        return None
    ks = next(((entries.get(n) or {}).get(k) or {}).get("agreement", {}).get("k")
              for n in ctx.candidates for k in KINDS if ((entries.get(n) or {}).get(k) or {}).get("agreement"))
    header = [ctx.terms["variant"], ctx.terms["documents_of"], *[t["overlap_at"].format(k=k) for k in ks],
              t["rbo"], t["top1_changed"], t["queries"]]
    return md_table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2))


def ranking(ctx: ReportContext) -> dict[str, Any]:
    """Search ranking (nDCG@10, recall@5, top-5 overlap): legacy, address swap only, through the shim."""
    t = ctx.terms
    section = ctx.raw.get("ranking") or {}
    decided = ctx.raw_decisions.get("ranking") or {}
    meaningless = not decided.get("meaningful", True)
    tolerance = decided.get("tolerance") or {}
    empty = {"state": False, "meaningless": meaningless, "table": None, "findings": [], "why": [],
             "definitions": t["ranking_defs"], "sources": MISSING, "queries": MISSING, "agreement": None,
             "judged": True,
             "tolerance": {"overlap": fmt(tolerance.get("top5_overlap_min"), "score"),
                           "delta": fmt(tolerance.get("delta_max"), "score"),
                           "alpha": fmt(tolerance.get("alpha", 0.05), "raw")}}
    if not is_measured(section):
        return {**empty, "label": ctx.label(False), "top_why": ctx.why(section)}
    legacy = section.get("legacy") or {}
    entries = by_candidate(ctx.raw)
    state_label = t["not_meaningful"] if meaningless else ctx.label(True)
    rows, why = _rows(ctx, entries, state_label)
    findings = [] if meaningless else [ranking_finding(ctx, n, entries.get(n) or {"naive": {}, "shim": {}})
                                       for n in ctx.candidates]
    header = [t["variant"], t["documents_of"], t["queries_as"], t["label"], t["ndcg"], t["d_ndcg"], t["recall"],
              t["d_recall"], t["overlap"], t["judged"]]
    variants = [legacy] + [(entries.get(n) or {}).get(k) or {} for n in ctx.candidates for k in KINDS]
    sources = [re.sub(r"\[\d+\]$", "", str(path)) for variant in variants if is_measured(variant)
               for path in (variant.get("source") or {}).values()]
    measured_states = [True] + [is_measured((entries.get(n) or {}).get(k)) for n in ctx.candidates for k in KINDS]
    label_text = t["not_meaningful"] if meaningless else combined_label(measured_states, ctx.lang)
    return {
        **empty, "state": True, "label": label_text, "top_why": None,
        "table": md_table(header, rows, ["l", "l", "l", "l"] + ["r"] * 6),
        "findings": findings, "why": why, "queries": fmt(legacy.get("queries"), "int"),
        "agreement": agreement_table(ctx, entries), "judged": section.get("judged", True),
        "sources": ctx.refs_for([], always=list(dict.fromkeys(sources))),
    }
