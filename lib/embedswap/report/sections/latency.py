"""Latency and throughput at the article's two operating points, the ratios to legacy, peak memory, and the lock
reading of the concurrent gap (ratios and shares from the summary's ``decisions.latency``)."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.latency_points import latency_points_of
from embedswap.analysis.latency_ratios import latency_state, point_state
from embedswap.report.catalogue import fill
from embedswap.report.sections.faults import comparable, headlines, table as faults_table
from embedswap.report.format import code, combined_label, fmt, md_table, mib, esc
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.stats import ratio as ratio_text
from embedswap.report.sections.sweep import ablation, sweep
from embedswap.report.sections.verdicts import drift_text, ratio_cell
from embedswap.summary.types_decisions import LockReading, RatioFigure
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget
from embedswap.summary.types_post import ShownPoint


def _point(info: LatencyTarget | None, run: str) -> LatencyPoint | None:
    """One of a target's two operating points (``run``: sequential or concurrent), or None."""
    return getattr(info, run) if info is not None else None


def _figure(point: LatencyPoint | ShownPoint | None, field: str) -> Any:
    """One stored figure of a point (``field``: p50_ms, docs_per_s, ...), or None without the point."""
    return getattr(point, field) if point is not None else None


def _table(ctx: ReportContext, c: str) -> tuple[str, list[dict[str, str]], list[dict[str, str]]]:
    """The latency table, why a server has no row of numbers, and the points where every request failed."""
    t = ctx.terms
    header = [t["target"], t["label"], t["seq_p50"], t["seq_p99"], fill(t["conc_p50"], c=c),
              fill(t["conc_p99"], c=c), fill(t["conc_rate"], c=c), fill(t["stats"]["n_col"], c=c),
              t["per_repeat"], t["errors"]]
    rows, why, unconfirmed = [], [], []
    for name in ctx.names:
        info = ctx.summary.latency.of(name)
        state = latency_state(info)
        if state is False:
            rows.append([code(name), ctx.not_measured_cell(name)] + [ctx.label(False)] * 8)
            why.append({"name": name, "why": ctx.why(info)})
            continue
        rows.append(ctx.point_row(name, info, ctx.label(state)))
        for _, point_name, point in latency_points_of(info):
            if point_state(point) is None:
                n = (point.requests_per_repeat or 0) * (point.repeats or 0)
                unconfirmed.append({"name": name, "point": point_name, "errors": fmt(point.errors, "int"),
                                    "requests": fmt(n, "int"), "text": fill(t["all_failed"], n=fmt(n, "int"))})
    return md_table(header, rows, ["l", "l"] + ["r"] * 8), why, unconfirmed


def _ratio(ctx: ReportContext, name: str) -> dict[str, Any]:
    """Legacy and candidate figures side by side with the one stored ratio (Summary.latency_ratio), formatted."""
    legacy, info = ctx.summary.latency.of(ctx.legacy), ctx.summary.latency.of(name)
    stored = ctx.decisions.latency.ratio(name)
    out: dict[str, Any] = {"name": name}
    values = []
    for key, run, field in (("seq", "sequential", "p50_ms"), ("conc", "concurrent", "docs_per_s")):
        kind = "rate" if field == "docs_per_s" else "ms"
        figure: RatioFigure = "docs_per_s" if kind == "rate" else "p50"
        for side, name_, entry_ in (("legacy", ctx.legacy, legacy), ("candidate", name, info)):
            shown = ctx.decisions.shown.at(name_, run) if is_measured(entry_) else None
            out[f"{key}_{side}"] = fmt(getattr(shown, field) if shown is not None else None, kind)
        entry = ctx.summary.latency_ratio(name, run, figure)
        value = entry.value if entry is not None else None
        values.append(value)
        verdicts = stored.verdicts_at(run) if stored is not None else None
        out[f"{key}_ratio"] = None if value is None and verdicts is None else ratio_cell(
            ctx.terms, entry, verdicts, figure, stored.drift if stored is not None else None)
    out["complete"] = values[0] is not None and values[1] is not None  # sequential p50 and concurrent docs/s
    return out


def ratio_table(ctx: ReportContext) -> str | None:
    """Every point both sides measured (article points and sweep): candidate / legacy with interval and verdict."""
    t = ctx.terms
    rows = []
    for name in comparable(ctx):  # a server that corrupts answers is timed on the survivors: no ratio
        stored = ctx.decisions.latency.ratio(name)
        for run, entry in (stored.intervals if stored is not None else {}).items():
            point = {"sequential": "seq", "concurrent": f"c{ctx.concurrency()}"}.get(run, run.replace("_", " "))
            verdicts = stored.verdicts_at(run) if stored is not None else None
            cells = [ratio_cell(t, getattr(entry, key), verdicts, key, stored.drift if stored else None)
                     for key in ("p50", "p99", "docs_per_s")]
            rows.append([code(name), esc(point), *cells, " / ".join(fmt(v, "int") for v in entry.p50.n),
                         drift_text(t, stored.drift if stored else None)])
    if not rows:
        return None
    header = [t["target"], t["point"], t["stats"]["p50_ratio"], t["stats"]["p99_ratio"],
              t["equivalence"]["rate_answered"], t["stats"]["n_pair"], t["equivalence"]["drift"]]
    return md_table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2))


def _lock_measured(ctx: ReportContext, reading: LockReading) -> dict[str, Any]:
    rates = {n: _figure(ctx.decisions.shown.at(n, "concurrent"), "docs_per_s") for n in ctx.latency_by_target()}
    out = []
    shown = ctx.decisions.shown
    lock_conc, lock_seq = shown.at(ctx.legacy, "concurrent"), shown.at(ctx.legacy, "sequential")
    for variant in reading.variants:
        conc, seq = shown.at(variant.variant, "concurrent"), shown.at(variant.variant, "sequential")
        shares = [{"name": s.candidate, "rate": fmt(rates.get(s.candidate), "rate"), "case": s.case,
                   "share": fmt(s.share, "pct"), "rest": fmt(None if s.share is None else 1 - s.share, "pct")}
                  for s in variant.shares]
        iv = variant.at("concurrent")
        out.append({
            "name": variant.variant,  # every figure from decisions.shown, as in the table above
            "lock_p50": fmt(_figure(lock_conc, "p50_ms"), "ms"), "free_p50": fmt(_figure(conc, "p50_ms"), "ms"),
            "lock_seq": fmt(_figure(lock_seq, "p50_ms"), "ms"), "free_seq": fmt(_figure(seq, "p50_ms"), "ms"),
            "lock_rate": fmt(_figure(lock_conc, "docs_per_s"), "rate"),
            "free_rate": fmt(_figure(conc, "docs_per_s"), "rate"),
            "rate_ratio": ratio_text(ctx.terms, iv.docs_per_s if iv is not None else None, variant.rate_ratio),
            "p50_ratio": ratio_text(ctx.terms, iv.p50 if iv is not None else None, variant.p50_ratio),
            "shares": shares,
        })
    return {"measured": True, "label": ctx.label(True), "variants": out, "concurrency": fmt(ctx.concurrency(), "raw")}


def lock(ctx: ReportContext, ablation_label: str) -> dict[str, Any] | None:
    """The article's reading of the concurrent gap (one global lock): measured when the lock ablation ran, else an
    estimate that stays unconfirmed (미확인)."""
    reading = ctx.decisions.latency.lock
    if reading is None:
        return None
    if reading.measured:
        return _lock_measured(ctx, reading)
    legacy = ctx.decisions.shown
    section = ctx.summary.ablation
    why = ctx.why(section) or next((ctx.why(r) for r in section.by_target.values() if r.why), "")
    return {"factor": fmt(reading.factor, "ratio"), "seq": fmt(_figure(legacy.at(ctx.legacy, "sequential"), "p50_ms"), "ms"),
            "conc": fmt(_figure(legacy.at(ctx.legacy, "concurrent"), "p50_ms"), "ms"), "label": ctx.label(None),
            "measured": False, "ablation_label": ablation_label, "ablation_why": why or None}


def latency(ctx: ReportContext) -> dict[str, Any]:
    """The latency section with its sweep, ablation, lock reading and memory."""
    c = fmt(ctx.concurrency(), "raw")
    by_target = ctx.latency_by_target()
    table, why, unconfirmed = _table(ctx, c)
    sweep_part, ablation_part = sweep(ctx), ablation(ctx)
    lock_part = lock(ctx, ablation_part["label"])
    memory = []
    for name in ctx.names:
        value, reason = ctx.peak(name)
        if latency_state(ctx.summary.latency.of(name)) is False:
            continue
        memory.append({"name": name, "mib": mib(value) if value else None, "gib": fmt(value / 2**30, "gib")
                       if value else None, "why": esc(reason) if reason else None})
    sources = [i.source for i in by_target.values() if is_measured(i) and i.source]
    states = [latency_state(ctx.summary.latency.of(n)) for n in ctx.names]
    return {
        "state": states, "label": combined_label(states, ctx.lang),
        "table": table, "sweep": sweep_part, "sweep_table": sweep_part["table"], "why": why,
        "unconfirmed": unconfirmed, "ratios": [_ratio(ctx, name) for name in comparable(ctx)], "lock": lock_part,
        "faults": headlines(ctx), "faults_table": faults_table(ctx),
        "faults_margin": (f"{fmt(ctx.decisions.faults.margin * 100, 's')}%" if ctx.decisions is not None
                          and ctx.decisions.faults is not None else None),
        "ratio_table": ratio_table(ctx),
        "lock_note": lock_part if lock_part and not lock_part["measured"] else None,
        "concurrency": c, "ablation": ablation_part, "memory": memory,
        "figure": ctx.figure("latency_points"),
        "sources": ctx.refs_for([f"captures/{n}/latency_stats.json" for n in ctx.names], always=sources),
    }
