"""Status line and setup: host, engines, model, launches, workload, resources and steps."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.latency_ratios import latency_state
from embedswap.report.format import MISSING, code, combined_label, esc, fence, fmt, md_table, mib
from embedswap.report.sections.contract import contract_states
from embedswap.report.sections.gaps import STATUS_SECTIONS
from embedswap.report.sections.context import ReportContext
from embedswap.report.notebooks import exported
from embedswap.report.portable import locality, portable_command


def status(ctx: ReportContext) -> dict[str, Any]:
    """The opening status line: every section's label combined, the host, the engines and the model."""
    states = [is_measured(ctx.raw.get("vectors")), *contract_states(ctx.raw),
              is_measured(ctx.raw.get("parity"))]
    states += [latency_state(ctx.latency_by_target().get(n, {})) for n in ctx.names]
    states += [is_measured(ctx.raw.get(key)) for key in STATUS_SECTIONS]
    env = ctx.raw.get("environment") or {}
    engines = []
    for name in ctx.names:
        info = (ctx.raw.get("targets") or {}).get(name) or {}
        measured = bool(info.get("measured"))
        version = info.get("version")
        engines.append({"name": name, "role": ctx.role_of(name),
                        "kind": (info.get("config") or {}).get("kind") or info.get("kind") or MISSING,
                        "version": version or ctx.label(None if measured else False)})
    model = ctx.raw.get("model") or {}
    return {
        "overall": combined_label(states, ctx.lang),
        "all_measured": all(s is True for s in states),
        "env": {
            "processor": env.get("processor") or ctx.label(None),
            "cpu_count": fmt(env.get("cpu_count"), "int"),
            "memory_gib": fmt(env.get("memory_gib"), "gib"),
            "gpu": env.get("gpu"),
            "platform": env.get("platform") or ctx.label(None),
            "python": env.get("python") or ctx.label(None),
            "embedswap": env.get("embedswap") or ctx.label(None),
        },
        "engines": engines,
        "model": {"spec": model.get("spec"), "served_name": model.get("served_name"),
                  "revision": model.get("revision"), "fingerprint": model.get("fingerprint") or ctx.label(None)},
    }


def _launches(ctx: ReportContext) -> list[dict[str, Any]]:
    targets = ctx.raw.get("targets") or {}
    # commands as they paste from the project's root: no path of the machine that ran them (report/portable.py)
    where = locality(ctx.raw, ctx.attempt_dir.parent.parent if ctx.attempt_dir else None)
    launches = []
    for name in ctx.names:
        info = targets.get(name) or {}
        config = info.get("config") or {}
        launches.append({
            "name": name, "role": ctx.role_of(name), "kind": config.get("kind") or info.get("kind") or MISSING,
            "state": bool(info.get("measured")), "label": ctx.label(bool(info.get("measured"))),
            "commands": fence("\n".join(portable_command(c, where) for c in info["commands"]), "bash")
            if info.get("commands") else None,
            "url": config.get("url"), "note": esc(config.get("note")) if config.get("note") else None,
            "error": ctx.failure(name),
            "lock": config.get("lock"), "dtype": config.get("dtype"),
        })
    return launches


def _resources_table(ctx: ReportContext) -> str:
    targets = ctx.raw.get("targets") or {}
    rows = []
    for name in ctx.names:
        info = targets.get(name) or {}
        if not info.get("measured"):
            rows.append([code(name), ctx.not_measured_cell(name)] + [ctx.label(False)] * 5)
            continue
        rows.append([code(name), ctx.label(True), fmt(info.get("start_seconds"), "s"),
                     mib(info.get("rss_bytes")), ctx.peak_cell(name),
                     mib(info.get("rss_bytes_end")), fmt(info.get("measured_seconds"), "s")])
    t = ctx.terms
    return md_table([t["target"], t["label"], t["start_s"], t["rss_start"], t["rss_peak"], t["rss_end"],
                     t["measured_s"]], rows, ["l", "l", "r", "r", "r", "r", "r"])


def _samples(work: dict[str, Any]) -> dict[str, Any]:
    """The latency and parity samples as the summary recorded them (``workload.samples``), formatted."""
    out: dict[str, Any] = {"latency": None, "parity": None}  # a summary from before issue 20 has neither
    for key, sample in ((work.get("samples") or {})).items():
        if not sample:
            continue
        out[key] = {"documents": fmt(sample.get("documents"), "int"), "of": fmt(sample.get("of"), "int"),
                    "whole": bool(sample.get("whole")), "seed": fmt(sample.get("seed"), "raw"),
                    "languages": ", ".join(f"{k} {fmt(v, 'int')}" for k, v in (sample.get("languages") or {}).items())
                    or MISSING}
    return out


def _time_table(ctx: ReportContext) -> str | None:
    """Seconds per step (``timing.steps``: recorded durations only) and each one's share of their sum."""
    timing = ctx.raw.get("timing") or {}
    if not timing.get("measured") or not timing.get("steps"):
        return None
    t = ctx.terms
    rows = [[code(r["step"]), esc(r.get("status")), fmt(r["seconds"], "s"), fmt(r.get("share"), "pct")]
            for r in timing["steps"]]
    rows.append([t["timing_total"], "", fmt(timing.get("total_seconds"), "s"), fmt(1.0, "pct")])
    return md_table([t["step"], t["status"], t["seconds"], t["share_of_run"]], rows, ["l", "l", "r", "r"])


def _server_time_table(ctx: ReportContext) -> str | None:
    """Per server: start-up, then seconds per capture part (``timing.servers``), then the whole measurement."""
    servers = (ctx.raw.get("timing") or {}).get("servers") or {}
    if not servers:
        return None
    from embedswap.summary.timing import PARTS

    rows = [[code(name), fmt(info.get("start_seconds"), "s"),
             *[fmt((info.get("parts") or {}).get(p), "s") for p in PARTS], fmt(info.get("measured_seconds"), "s")]
            for name, info in servers.items()]
    t = ctx.terms
    return md_table([t["target"], t["start_s"], *[code(p) for p in PARTS], t["measured_s"]], rows,
                    ["l"] + ["r"] * (len(PARTS) + 2))


def _steps_table(ctx: ReportContext) -> str | None:
    rows = []
    for step, entry in (ctx.raw.get("steps") or {}).items():
        error = str(entry.get("error") or "").strip()
        error = error.splitlines()[0] if error else ""  # a traceback stays in steps.json
        problems = "; ".join(entry.get("problems") or []) or error or entry.get("detail") or ""
        rows.append([code(step), esc(entry.get("status")), esc(entry.get("updated")), esc(problems) or MISSING])
    t = ctx.terms
    return md_table([t["step"], t["status"], t["updated"], t["problems"]], rows, ["l"] * 4) if rows else None


def setup(ctx: ReportContext) -> dict[str, Any]:
    """How each server was launched, the workload, the servers' resources and the attempt's steps."""
    targets = ctx.raw.get("targets") or {}
    work = ctx.raw.get("workload") or {}
    langs = work.get("languages") or {}
    lat = (ctx.raw.get("latency") or {}).get("config") or {}
    return {
        "label": combined_label([bool((targets.get(n) or {}).get("measured")) for n in ctx.names], ctx.lang),
        "launches": _launches(ctx),
        "documents": fmt(work.get("documents"), "int"),
        "languages": ", ".join(f"{k} {fmt(v, 'int')}" for k, v in langs.items()) or MISSING,
        "queries": fmt(work.get("queries"), "int"),
        "batch_size": fmt(work.get("batch_size"), "int"),
        "repeats": fmt(work.get("repeats"), "int"),
        "latency": {k: fmt(lat.get(k), "raw") for k in ("sequential_requests", "concurrent_requests", "concurrency",
                                                        "repeats", "warmup_requests", "timeout_s", "sweep",
                                                        "sweep_requests", "sweep_repeats")},
        "resources_table": _resources_table(ctx),
        "samples": _samples(work),
        "time_table": _time_table(ctx),
        "server_time_table": _server_time_table(ctx),
        # the executed notebooks, exported next to the report as notebooks/<name>.html (report/notebooks.py)
        "notebooks": exported(ctx.attempt_dir),
        "steps_table": _steps_table(ctx),
        # which HTTP client timed the requests (captures made before it was recorded: none named)
        "latency_client": ", ".join(code(c) for c in dict.fromkeys(
            info.get("client") for info in ctx.latency_by_target().values() if isinstance(info, dict)
            and info.get("client"))),
        "sources": ctx.refs_for([f"captures/{n}/target.json" for n in ctx.names] +
                                ["captures/environment.json", "steps.json"]),
    }
