"""The concurrency sweep and the lock ablation (the legacy server with and without its global lock)."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.latency_points import sweep_points_of
from embedswap.analysis.latency_ratios import latency_state, point_state
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table, mib
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.stats import n_cell, point_cell


def sweep(ctx: ReportContext) -> dict[str, Any]:
    """The concurrency sweep (``by_target[name].sweep``, a list of points): one row per server and point."""
    t = ctx.terms
    rows = []
    why = []
    peaks = []
    states: list[bool | None] = []
    entries = [(n, ctx.summary.latency.of(n), False) for n in ctx.names]
    entries += [(n, r, True) for n, r in ctx.ablation_variants().items()]
    for name, info, ablation in entries:
        shown = f"{code(name)} ({t['ablation_mark']})" if ablation else code(name)
        points = list(sweep_points_of(info))
        if not is_measured(info):
            if not ablation:
                rows.append([shown, MISSING, ctx.not_measured_cell(name)] + [ctx.label(False)] * 5)
                states.append(False)
            continue
        if info.sweep_note:
            reason = info.sweep_reason
            note = ctx.words.reason(reason.code, reason.params) if reason else info.sweep_note
            why.append({"name": name, "why": esc(fill(t["sweep_skipped"], why=note))})
            rows.append([shown, MISSING, ctx.label(False)] + [ctx.label(False)] * 5)
            states.append(False)
            continue
        if points:
            states.append(True if any(point_state(p) is True for _, _, p in points) else None)
        best = None
        for run, point_name, point in sorted(points, key=lambda p: p[2].concurrency or 0):
            n = (point.requests_per_repeat or 0) * (point.repeats or 0)
            iv = ctx.decisions.latency.intervals(name, run)
            rows.append([shown, esc(point_name), ctx.label(point_state(point)),
                         point_cell(t, iv, "p50", point.p50_ms, "ms"),
                         point_cell(t, iv, "p99", point.p99_ms, "ms"),
                         point_cell(t, iv, "docs_per_s", point.docs_per_s, "rate"), n_cell(iv),
                         f"{fmt(point.errors, 'int')} / {fmt(n, 'int')}"])
            rate = point.docs_per_s
            if rate is not None and (best is None or rate > best[1]):
                best = (point.concurrency, rate)
        if best:
            peaks.append({"name": name, "ablation": ablation, "concurrency": fmt(best[0], "raw"),
                          "rate": fmt(best[1], "rate")})
    has_points = any(r[1] != MISSING for r in rows)
    table = md_table([t["target"], t["point"], t["label"], t["p50"], t["p99"], t["rate"], t["n"], t["errors"]],
                     rows, ["l", "l", "l", "r", "r", "r", "r", "r"]) if has_points or why else None
    if not has_points and not why:
        states = []
    return {"table": table, "why": why, "peaks": peaks,
            "label": combined_label(states, ctx.lang) if states else ctx.label(False),
            "has_points": has_points,
            "figure": ctx.figure("latency_sweep"),
            "sources": ctx.refs_for([f"captures/{n}/latency_sweep_requests.jsonl" for n, _, _ in entries],
                                     always=[f"captures/{p['name']}/latency_stats.json" for p in peaks])}


def ablation(ctx: ReportContext) -> dict[str, Any]:
    """The legacy server with its global lock against its variants (e.g. without it), latency only."""
    t = ctx.terms
    section = ctx.summary.ablation
    rows_in = section.by_target
    if not rows_in:
        return {"state": False, "label": ctx.label(False), "why": ctx.why(section), "table": None,
                "sources": MISSING, "row_why": []}
    c = fmt(ctx.concurrency(), "raw")
    header = [t["target"], t["lock"], t["label"], t["seq_p50"], t["seq_p99"], fill(t["conc_p50"], c=c),
              fill(t["conc_p99"], c=c), fill(t["conc_rate"], c=c), fill(t["stats"]["n_col"], c=c), t["per_repeat"],
              t["errors"], t["rss_peak"]]
    rows = []
    row_why = []
    for name, info in rows_in.items():
        lock = info.lock  # the variant's own record of its lock (None: its kind has none)
        lock_cell = MISSING if lock is None else t["on" if lock else "off"]
        state = latency_state(info)
        if state is False:
            rows.append([code(name), lock_cell, ctx.not_measured_cell(name)] + [ctx.label(False)] * 9)
            row_why.append({"name": name, "why": ctx.why(info)})
            continue
        row = ctx.point_row(name, info, ctx.label(state))
        value = info.rss_peak_bytes
        rows.append([row[0], lock_cell, *row[1:], mib(value) if value else ctx.label(False)])
    states = [latency_state(r) for r in rows_in.values()]
    sources = [r.source for r in rows_in.values() if is_measured(r) and r.source]
    return {
        "state": is_measured(section), "label": combined_label(states, ctx.lang), "why": ctx.why(section),
        "table": md_table(header, rows, ["l", "l", "l"] + ["r"] * 9), "row_why": row_why,
        "sources": ctx.refs_for([], always=sources),
    }
