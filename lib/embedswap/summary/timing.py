"""summary.json's ``timing``: how long each step of the attempt took, and each part of each server's capture.

From what the run recorded only: ``steps.json`` (``seconds`` of every notebook, written by ``embedswap run``) and
each target's ``target.json`` (``start_seconds``, ``part_seconds`` per capture part, ``measured_seconds``). A step
or part without a recorded duration is left out, never estimated.
"""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.reasons import not_measured

PARTS = ("workload", "queries", "probes", "latency")


def timing_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    steps = []
    for step, entry in attempt.steps().items():
        seconds = entry.get("seconds")
        if isinstance(seconds, (int, float)):
            steps.append({"step": step, "status": entry.get("status"), "seconds": round(float(seconds), 1)})
    total = round(sum(s["seconds"] for s in steps), 1) if steps else None
    for row in steps:
        row["share"] = row["seconds"] / total if total else None
    servers = {}
    for name in experiment.target_order():
        if not attempt.has(f"{name}/target.json"):
            continue
        info = attempt.read_json(f"{name}/target.json")
        parts = info.get("part_seconds") or {}
        servers[name] = {"start_seconds": info.get("start_seconds"),
                         "parts": {p: parts.get(p) for p in PARTS},
                         "measured_seconds": info.get("measured_seconds")}
    if not steps and not servers:
        return not_measured("timing_not_recorded")
    return {"measured": True, "steps": steps, "total_seconds": total, "servers": servers,
            "source": "steps.json (seconds per notebook), captures/<target>/target.json (part_seconds)"}
