"""Capacity at a latency target (the open-loop sweep): formatting of ``decisions.capacity`` only."""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_capacity import CapacityTarget, ServerCapacity
from embedswap.summary.types_equivalence import Verdict


def _interval(t: dict[str, Any], value: Any, low: Any, high: Any, kind: str) -> str:
    if value is None:
        return MISSING
    if low is None or high is None:
        return fmt(value, kind)
    return fill(t["interval"], value=fmt(value, kind), low=fmt(low, kind), high=fmt(high, kind))


def _capacity_cell(t: dict[str, Any], server: ServerCapacity) -> str:
    if server.censored == "below":
        return t["none_met"]
    shown = _interval(t, server.capacity, server.low, server.high, "rate")
    return fill(t["at_least"], value=shown) if server.censored == "above" else shown


def _replicas_cell(t: dict[str, Any], server: ServerCapacity) -> str:
    if server.replicas is None:
        return MISSING
    if server.replicas_low is not None and server.replicas_high is not None \
            and server.replicas_low != server.replicas_high:
        shown = fill(t["interval"], value=fmt(server.replicas, "int"), low=fmt(server.replicas_low, "int"),
                     high=fmt(server.replicas_high, "int"))
    else:
        shown = fmt(server.replicas, "int")
    return fill(t["at_most"], value=shown) if server.censored == "above" else shown


def _ratio_line(t: dict[str, Any], name: str, legacy: str, verdict: Verdict) -> str:
    word = (t["verdicts"]["censored"] if verdict.reason == "capacity_censored"
            else t["verdicts"].get(f"{verdict.code}_{verdict.direction}") or t["verdicts"][verdict.code])
    return fill(t["ratio_line"], name=code(name), legacy=code(legacy),
                ratio=_interval(t, verdict.estimate, verdict.low, verdict.high, "ratio"),
                margin=fmt(verdict.margin, "ratio"), verdict=word)


def _notes(t: dict[str, Any], name: str, server: ServerCapacity, traffic: Any) -> list[str]:
    out = []
    shown = code(name)
    if server.sheds_from is not None:
        out.append(fill(t["sheds"], name=shown, rate=fmt(server.sheds_from, "rate"),
                        share=fmt(100 * float(server.shed_share or 0), "rate"),
                        max=fmt(100 * float(server.shed_share_max or 0), "rate")))
    if server.goodput_gap is not None:
        out.append(fill(t[f"gap_{server.goodput_gap}"], name=shown,
                        share=fmt(100 * float(server.goodput_gap_share or 0),
                                  "rate")))
    if server.invalid_rates:
        out.append(fill(t["invalid"], name=shown, rates=", ".join(fmt(r, "rate") for r in server.invalid_rates)))
    if server.censored == "above":
        out.append(fill(t["censored_above"], name=shown, rate=fmt(server.met_rate, "rate")))
    elif server.limit is not None and server.met_rate is not None and server.missed_rate is not None:
        out.append(fill(t["knee"], name=shown, met=fmt(server.met_rate, "rate"),
                        missed=fmt(server.missed_rate, "rate"), limit=t["limits"][server.limit]))
    if server.replicas is not None and traffic is not None:
        out.append(fill(t["replicas"], name=shown, traffic=fmt(traffic, "rate"),
                        replicas=_replicas_cell(t, server)))
    return out


def _worker_notes(t: dict[str, Any], name: str, entry: CapacityTarget | None) -> list[str]:
    """A run split across workers and invalid: the worker it names, lost or furthest behind (once per rate)."""
    out: dict[tuple[float, int], str] = {}
    for run in entry.runs if entry is not None else []:
        if run.invalid_worker is None or (float(run.rate), run.invalid_worker) in out:
            continue
        worker = str(run.invalid_worker)
        if worker in run.lost_workers:
            line = fill(t["worker_lost"], name=code(name), rate=fmt(run.rate, "rate"), worker=worker,
                        why=esc(run.lost_workers[worker]))
        else:
            line = fill(t["worker_behind"], name=code(name), rate=fmt(run.rate, "rate"), worker=worker,
                        lag=fmt(run.worker_lag_p90_ms.get(worker), "ms"))
        out[(float(run.rate), run.invalid_worker)] = line
    return list(out.values())


def capacity(ctx: ReportContext) -> dict[str, Any]:
    """The section's values; ``shown`` is False when no open-loop sweep was configured (nothing is printed)."""
    section = ctx.summary.capacity
    decided = ctx.decisions.capacity
    if section is None or decided is None:
        return {"shown": False}
    t = ctx.terms["capacity"]
    rows, points, notes, ratios = [], [], [], []
    for name in ctx.names:
        server = decided.of(name)
        entry = section.of(name)
        if server is None:
            why = ctx.why(entry) if entry is not None else ""
            rows.append([code(name), ctx.label(False), MISSING, MISSING, MISSING, esc(why) or MISSING])
            continue
        bracket = fill(t["bracket"], met=fmt(server.met_rate, "rate"), missed=fmt(server.missed_rate, "rate"))
        rows.append([code(name), _capacity_cell(t, server), bracket if server.met_rate is not None and server.missed_rate is not None else MISSING,
                     _replicas_cell(t, server),
                     fmt(server.sheds_from, "rate") if server.sheds_from is not None else t["no"],
                     t["limits"].get(server.limit or "", MISSING)])
        for p in server.points:
            points.append([code(name), fmt(p.rate, "rate"), f"{p.valid} / {p.repeats}", fmt(p.p50_ms, "ms"),
                           _interval(t, p.p99_ms, p.p99_low, p.p99_high, "ms"), fmt(p.throughput, "rate"),
                           fmt(p.goodput, "rate"), fmt(100 * float(p.shed_share), "rate"),
                           t["yes"] if p.meets else t["no"]])
        notes += _notes(t, name, server, decided.traffic) + _worker_notes(t, name, entry)
    for name, verdict in decided.ratios.items():
        ratios.append(_ratio_line(t, name, ctx.legacy, verdict))
    sources = [e.source for e in section.by_target.values() if e.measured and e.source]
    retry = {e.retry_after for e in section.by_target.values() if e.measured}
    slo = fill(t["slo_p99"], p99=fmt(section.slo_p99_ms, "ms"))
    if section.slo_p50_ms is not None:
        slo += fill(t["slo_p50"], p50=fmt(section.slo_p50_ms, "ms"))
    return {
        "shown": True, "label": ctx.label(bool(decided.servers)), "slo": slo,
        "traffic": fmt(section.traffic, "rate") if section.traffic is not None else MISSING,
        "arrival": esc(section.arrival or MISSING), "gate": fmt(section.gate, "raw"),
        "retry_after": t["retry_honour" if "honour" in retry else "retry_count"],
        "table": md_table([t["server"], t["capacity"], t["bracket_col"], t["replicas_col"], t["sheds_col"],
                           t["limit_col"]], rows, ["l", "r", "r", "r", "r", "l"]),
        "points": md_table([t["server"], t["rate"], t["valid"], t["p50"], t["p99"], t["throughput"], t["goodput"],
                            t["shed_share"], t["meets"]], points, ["l"] + ["r"] * 8) if points else None,
        "notes": notes, "ratios": ratios,
        "figure": ctx.figure("capacity_curve"),
        "sources": ctx.refs_for([], always=sources),
    }
