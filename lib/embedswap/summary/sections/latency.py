"""summary.json's ``latency`` and ``ablation`` sections: each server's latency points with their requests."""

from __future__ import annotations

from typing import Any


from embedswap.summary.sections.captured import target_missing
from embedswap.captures import PAIRED_LEGACY, Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.load_stats import status_class  # not measure.load: that imports aiohttp
from embedswap.reasons import not_measured


def _requests_by_run(attempt: Attempt, name: str) -> dict[str, dict[str, list[Any]]]:
    """Per run, the captured requests grouped by repeat (the per-request data the intervals resample):
    ``{latency_ms: [[...] per repeat], docs: [[docs answered, 0 if failed]], wall_s: [per repeat]}``. The wall
    time of a repeat is when its last answer arrived (``send_offset_s + latency``), as the harness times it."""
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for file in ("latency_requests.jsonl", "latency_sweep_requests.jsonl"):
        if attempt.has(f"{name}/{file}"):
            for r in attempt.read_jsonl(f"{name}/{file}"):
                runs.setdefault(str(r.get("run")), {}).setdefault(int(r.get("repeat") or 0), []).append(r)
    out = {}
    for run, repeats in runs.items():
        groups = [repeats[k] for k in sorted(repeats)]
        out[run] = {**_outcomes([r for g in groups for r in g]), "requests": {
            "latency_ms": [[round(float(r["latency_ms"]), 3) for r in g] for g in groups],
            "docs": [[int(r.get("docs") or 0) if r.get("status") == 200 and not r.get("error") else 0 for r in g]
                     for g in groups],
            "wall_s": [round(max(float(r.get("send_offset_s") or 0) + float(r["latency_ms"]) / 1000 for r in g), 6)
                       for g in groups],
        }}
    return out


def _outcomes(records: list[dict[str, Any]]) -> dict[str, Any]:
    """A point's failed requests by class (429, 5xx, timeout, other) and the distinct Retry-After values the
    refusals sent, in the order first seen (none where the captures recorded no Retry-After)."""
    classes: dict[str, int] = {}
    waits: list[str] = []
    for r in records:
        kind = status_class(r.get("status"), r.get("error"))
        if kind != "ok":
            classes[kind] = classes.get(kind, 0) + 1
        wait = r.get("retry_after")
        if wait is not None and str(wait) not in waits:
            waits.append(str(wait))
    return {"error_classes": classes, "retry_after": waits}


def latency_stats_with_requests(attempt: Attempt, name: str) -> dict[str, Any]:
    """``latency_stats.json`` with each point's per-request data attached (``requests``)."""
    stats = attempt.read_json(f"{name}/latency_stats.json")
    by_run = _requests_by_run(attempt, name)
    points = [stats.get(k) for k in ("sequential", "concurrent")] + list(stats.get("sweep") or [])
    for point in points:
        if isinstance(point, dict) and point.get("run") in by_run:
            point.update(by_run[point["run"]])
    return stats


def latency_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    by_target: dict[str, Any] = {}
    for name in experiment.target_order():
        if attempt.has(f"{name}/latency_stats.json"):
            by_target[name] = {"measured": True, **latency_stats_with_requests(attempt, name),
                               "source": f"captures/{name}/latency_requests.jsonl"}
        else:
            by_target[name] = target_missing(attempt, name) or not_measured("latency_incomplete")
    paired = {}  # sequencing.interleave: legacy's runs alternating with each candidate's
    for name in experiment.candidates:
        folder = f"{name}/{PAIRED_LEGACY}"
        if attempt.has(f"{folder}/latency_stats.json"):
            paired[name] = {"measured": True, **latency_stats_with_requests(attempt, folder),
                            "source": f"captures/{folder}/latency_requests.jsonl"}
    return {
        "legacy": by_target[experiment.legacy],
        "candidate": by_target[experiment.primary_candidate],
        "by_target": by_target,
        **({"paired_legacy": paired} if paired else {}),
        "config": experiment.latency.model_dump(),
    }


def ablation_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    """The legacy server against its variants (e.g. no global lock): which part of the gap batching explains."""
    if not experiment.ablations:
        return not_measured("no_ablation_variants")
    rows: dict[str, Any] = {}
    for name in [experiment.legacy, *experiment.ablations]:
        config = experiment.targets[name]
        if attempt.has(f"{name}/latency_stats.json"):
            rows[name] = {"measured": True, "lock": getattr(config, "lock", None),
                          **latency_stats_with_requests(attempt, name),
                          "source": f"captures/{name}/latency_requests.jsonl"}
        else:
            rows[name] = target_missing(attempt, name) or not_measured("latency_incomplete")
    return {"measured": all(r.get("measured") for r in rows.values()), "by_target": rows}
