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
from embedswap.summary.model import Environment, Target, TargetSettings, WorkloadInfo


def _target(ctx: ReportContext, name: str) -> Target | None:
    return ctx.summary.target(name)


def _measured(info: Target | None) -> bool:
    return info is not None and info.measured


def _kind(info: Target | None) -> str:
    """A server's kind as configured, else as its target.json recorded it."""
    if info is None:
        return MISSING
    return info.config.kind or info.kind or MISSING


def stated(info: Target | None) -> dict[str, Any]:
    """A server's version as the setup words it: ``code`` picks the sentence (``common.versions``): ``kit`` (its
    launcher found it), ``server`` (the server states it about itself), ``said`` (no version, but the server says
    something else about itself), ``silent`` (asked, it says nothing), ``unconfirmed`` (not asked: the server's
    capture holds no identity), ``not_measured``."""
    measured = _measured(info)
    version = info.version if info is not None else None
    statement = info.statement if info is not None else None
    if version and info is not None:  # a version the launcher found is the kit's (pipeline.build.version_fields)
        code_ = info.version_source or "kit"
    else:
        asked = info is not None and info.identity is not None  # not asked: the capture holds no identity
        code_ = ("not_measured" if not measured else "said" if statement else "silent" if asked
                 else "unconfirmed")
    return {"code": code_, "version": esc(version) if version else None, "statement": statement}


def status(ctx: ReportContext) -> dict[str, Any]:
    """The opening status line: every section's label combined, the host, the engines and the model."""
    summary = ctx.summary
    states = [is_measured(summary.vectors), *contract_states(summary), is_measured(summary.parity)]
    states += [latency_state(ctx.summary.latency.of(n)) for n in ctx.names]
    states += [is_measured(getattr(summary, key)) for key in STATUS_SECTIONS]
    env = summary.environment or Environment()
    engines = []
    for name in ctx.names:
        info = _target(ctx, name)
        measured = _measured(info)
        version = info.version if info is not None else None
        engines.append({"name": name, "role": ctx.role_of(name), "kind": _kind(info),
                        "version": esc(version) if version else ctx.label(None if measured else False),
                        "stated": stated(info)})
    model = summary.model
    return {
        "overall": combined_label(states, ctx.lang),
        "all_measured": all(s is True for s in states),
        "env": {
            "processor": env.processor or ctx.label(None),
            "cpu_count": fmt(env.cpu_count, "int"),
            "memory_gib": fmt(env.memory_gib, "gib"),
            "gpu": env.gpu,
            "platform": env.platform or ctx.label(None),
            "python": env.python or ctx.label(None),
            "embedswap": env.embedswap or ctx.label(None),
        },
        "engines": engines,
        "model": {"spec": model.spec, "served_name": model.served_name,
                  "revision": model.revision, "fingerprint": model.fingerprint or ctx.label(None)},
    }


def _launches(ctx: ReportContext) -> list[dict[str, Any]]:
    # commands as they paste from the project's root: no path of the machine that ran them (report/portable.py)
    where = locality(ctx.summary, ctx.attempt_dir.parent.parent if ctx.attempt_dir else None)
    launches = []
    for name in ctx.names:
        info = _target(ctx, name)
        config = info.config if info is not None else TargetSettings()
        measured = _measured(info)
        commands = info.commands if info is not None else []
        launches.append({
            "name": name, "role": ctx.role_of(name), "kind": _kind(info),
            "state": measured, "label": ctx.label(measured),
            "commands": fence("\n".join(portable_command(c, where) for c in commands), "bash")
            if commands else None,
            "url": config.url, "note": esc(config.note) if config.note else None,
            "error": ctx.failure(name),
            "lock": config.lock, "dtype": config.dtype, "stated": stated(info),
        })
    return launches


def _resources_table(ctx: ReportContext) -> str:
    rows = []
    for name in ctx.names:
        info = _target(ctx, name)
        if info is None or not info.measured:
            rows.append([code(name), ctx.not_measured_cell(name)] + [ctx.label(False)] * 5)
            continue
        rows.append([code(name), ctx.label(True), fmt(info.start_seconds, "s"),
                     mib(info.rss_bytes), ctx.peak_cell(name),
                     mib(info.rss_bytes_end), fmt(info.measured_seconds, "s")])
    t = ctx.terms
    return md_table([t["target"], t["label"], t["start_s"], t["rss_start"], t["rss_peak"], t["rss_end"],
                     t["measured_s"]], rows, ["l", "l", "r", "r", "r", "r", "r"])


def _samples(work: WorkloadInfo) -> dict[str, Any]:
    """The latency and parity samples as the summary recorded them (``workload.samples``), formatted."""
    out: dict[str, Any] = {"latency": None, "parity": None}  # none recorded: the report names no sample
    if work.samples is None:
        return out
    for key in out:
        sample = getattr(work.samples, key)
        out[key] = {"documents": fmt(sample.documents, "int"), "of": fmt(sample.of, "int"),
                    "whole": sample.whole, "seed": fmt(sample.seed, "raw"),
                    "languages": ", ".join(f"{k} {fmt(v, 'int')}" for k, v in sample.languages.items())
                    or MISSING}
    return out


def _time_table(ctx: ReportContext) -> str | None:
    """Seconds per step (``timing.steps``: recorded durations only) and each one's share of their sum."""
    timing = ctx.summary.timing
    if not timing.measured or not timing.steps:
        return None
    t = ctx.terms
    rows = [[code(r.step), esc(r.status), fmt(r.seconds, "s"), fmt(r.share, "pct")] for r in timing.steps]
    rows.append([t["timing_total"], "", fmt(timing.total_seconds, "s"), fmt(1.0, "pct")])
    return md_table([t["step"], t["status"], t["seconds"], t["share_of_run"]], rows, ["l", "l", "r", "r"])


def _server_time_table(ctx: ReportContext) -> str | None:
    """Per server: start-up, then seconds per capture part (``timing.servers``), then the whole measurement."""
    servers = ctx.summary.timing.servers
    if not servers:
        return None
    from embedswap.summary.timing import PARTS

    rows = [[code(name), fmt(info.start_seconds, "s"),
             *[fmt(info.parts.get(p), "s") for p in PARTS], fmt(info.measured_seconds, "s")]
            for name, info in servers.items()]
    t = ctx.terms
    return md_table([t["target"], t["start_s"], *[code(p) for p in PARTS], t["measured_s"]], rows,
                    ["l"] + ["r"] * (len(PARTS) + 2))


def _steps_table(ctx: ReportContext) -> str | None:
    rows = []
    for step, entry in ctx.summary.steps.items():
        error = str(entry.error or "").strip()
        error = error.splitlines()[0] if error else ""  # a traceback stays in steps.json
        problems = "; ".join(entry.problems) or error or entry.detail or ""
        rows.append([code(step), esc(entry.status), esc(entry.updated), esc(problems) or MISSING])
    t = ctx.terms
    return md_table([t["step"], t["status"], t["updated"], t["problems"]], rows, ["l"] * 4) if rows else None


def setup(ctx: ReportContext) -> dict[str, Any]:
    """How each server was launched, the workload, the servers' resources and the attempt's steps."""
    work = ctx.summary.workload
    lat = ctx.summary.latency.config  # open: the latency configuration as the user wrote it
    return {
        "label": combined_label([_measured(_target(ctx, n)) for n in ctx.names], ctx.lang),
        "launches": _launches(ctx),
        "documents": fmt(work.documents, "int"),
        "languages": ", ".join(f"{k} {fmt(v, 'int')}" for k, v in work.languages.items()) or MISSING,
        "queries": fmt(work.queries, "int"),
        "batch_size": fmt(work.batch_size, "int"),
        "repeats": fmt(work.repeats, "int"),
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
            info.client for info in ctx.latency_by_target().values() if info.client)),
        "sources": ctx.refs_for([f"captures/{n}/target.json" for n in ctx.names] +
                                ["captures/environment.json", "steps.json"]),
    }
