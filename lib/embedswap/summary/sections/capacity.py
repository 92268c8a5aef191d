"""summary.json's ``capacity`` section: each server's open-loop runs, their figures computed from the captures."""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.open_loop_stats import misses, run_figures
from embedswap.reasons import not_measured
from embedswap.summary.sections.captured import target_missing


def _target(experiment: Experiment, attempt: Attempt, name: str) -> dict[str, Any]:
    ol = experiment.latency.open_loop
    assert ol is not None
    if not attempt.has(f"{name}/open_loop_runs.json"):
        return target_missing(attempt, name) or not_measured("latency_incomplete")
    meta = attempt.read_json(f"{name}/open_loop_runs.json")
    rows = attempt.read_jsonl(f"{name}/open_loop_requests.jsonl")
    groups: dict[tuple[float, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((float(row["rate"]), int(row["repeat"])), []).append(row)
    walls = {(float(r["rate"]), int(r["repeat"])): r.get("wall_s") for r in meta.get("runs", [])}
    lost = {(float(r["rate"]), int(r["repeat"])): r.get("lost_workers") or {} for r in meta.get("runs", [])}
    for key, workers in lost.items():  # a run whose every worker was lost has no request rows, but it was run
        if workers:
            groups.setdefault(key, [])
    gate = float(meta.get("gate") or experiment.parity.text_threshold)
    runs = []
    for (rate, repeat), group in sorted(groups.items()):
        figures = run_figures(group, rate, slo_p99_ms=ol.slo.p99_ms, gate=gate, max_lag_ms=ol.max_lag_ms,
                              lost=lost.get((rate, repeat)))
        why = misses(figures, ol.slo.p99_ms, ol.slo.p50_ms, experiment.decisions.margins.error_rate)
        runs.append({**figures, "repeat": repeat, "wall_s": walls.get((rate, repeat)), "misses": why})
    return {"measured": bool(runs), "runs": runs, "rates": meta.get("rates", []),
            "reference": bool(meta.get("reference")), "retry_after": meta.get("retry_after", "count"),
            "source": f"captures/{name}/open_loop_requests.jsonl"}


def capacity_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any] | None:
    """The open-loop sweep of every server that ran it; None (no section) when ``latency.open_loop`` is not set."""
    ol = experiment.latency.open_loop
    if ol is None:
        return None
    by_target = {name: _target(experiment, attempt, name) for name in experiment.target_order()}
    return {
        "measured": any(t.get("measured") for t in by_target.values()),
        "slo_p99_ms": ol.slo.p99_ms, "slo_p50_ms": ol.slo.p50_ms, "traffic": experiment.latency.traffic,
        "arrival": ol.arrival if ol.arrival != "gamma" else f"gamma (burstiness {ol.burstiness:g})",
        "gate": experiment.parity.text_threshold, "error_margin": experiment.decisions.margins.error_rate,
        "by_target": by_target,
    }
