"""summary.json: every figure of the report, computed from the attempt's capture files only.

Each section says whether it was measured; a section that could not be computed carries
``{"measured": false, "why": ..., "reason": {code, params}}`` (:mod:`embedswap.reasons`) so the report can
label it 미실측 / not measured, in its own words, instead of inventing it. The decisions the report states are
computed here too (:mod:`embedswap.analysis`, under ``decisions``), and the result is checked against the typed
model (:mod:`embedswap.summary.model`) before it is written; older files are upgraded on load
(:mod:`embedswap.analysis.upgrade`).
Sections keyed by role (``legacy``, ``candidate`` = the first candidate) also have ``by_target`` for every
server, so a three-way experiment reads the same way as a two-way one.
"""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from embedswap import __version__
from embedswap.analysis import decide, decisions_json
from embedswap.captures import Attempt, atomic_write_bytes, json_bytes
from embedswap.config.experiment import Experiment
from embedswap.diagnosis.step import diagnosis_section
from embedswap.summary.sections.capacity import capacity_section
from embedswap.summary.sections.contract import contract_section
from embedswap.summary.sections.long_input import long_input_section
from embedswap.summary.sections.instruction import instruction_section
from embedswap.summary.sections.latency import ablation_section, latency_section
from embedswap.summary.sections.parity import parity_section
from embedswap.summary.sections.variants import matryoshka_section, restore_section
from embedswap.summary.sections.vectors import vectors_section
from embedswap.summary.sections.plan import plan_of_attempt
from embedswap.models import model_fingerprint, resolve_model_path
from embedswap.summary.sections.ranking import ranking_section
from embedswap.summary.sections.shim import shim_section
from embedswap.summary.sections.index import index_section
from embedswap.summary.sections.faults import faults_section
from embedswap.summary.finite import null_non_finite
from embedswap.summary.timing import timing_section
from embedswap.summary.model import Summary, SummaryBody, validate_body
from embedswap.summary.types_decisions import Decisions
from embedswap.reasons import attach_reasons
from embedswap.analysis.upgrade import SCHEMA_VERSION
from embedswap.measure.identity import stated_version
from embedswap.measure.workload import Workload, sample_record, stratified_sample



def samples_section(experiment: Experiment, attempt: Attempt, workload: Workload) -> dict[str, Any]:
    """Which documents the latency runs (``latency.sample``) and the parity reference (``parity.sample``) used:
    the parity one as step 05 recorded it, else as the configuration draws it (step 05 not run yet)."""
    langs = [d.lang for d in workload.documents]
    latency = sample_record(langs, workload.latency_sample(experiment.latency.sample), "seeded random")
    recorded = attempt.read_json("parity/rows.json").get("sample") if attempt.has("parity/rows.json") else None
    parity = recorded or sample_record(langs, stratified_sample(langs, experiment.parity.sample),
                                       "stratified by language")
    return {"latency": latency, "parity": parity}


def targets_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    out = {}
    for name in experiment.target_order():
        config = experiment.targets[name].model_dump()
        info = attempt.read_json(f"{name}/target.json") if attempt.has(f"{name}/target.json") else None
        entry = {"config": config, "measured": info is not None and not info.get("error"), **(info or {})}
        out[name] = {**entry, **version_fields(entry)}
    return out


def version_fields(target: dict[str, Any]) -> dict[str, Any]:
    """A target's shown version and its source: the kit's launcher's where it found one, else what the server
    states about itself (an external server, which the kit did not start, says it on its version routes), and what
    it said (the guard's parts), so that "unconfirmed" is left only to a server that says nothing."""
    stated = stated_version(target.get("identity"))
    said = {"said": stated.parts, "statement": stated.said}
    if target.get("version"):
        return {"version_source": "kit", **said}
    if stated.version is not None:
        return {"version": stated.version, "version_source": "server", **said}
    return {"version": None, "version_source": None, **said}


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": psutil.cpu_count(logical=True),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpu": None,  # filled by the parity GPU script when one is present; this kit measured on what it ran on
        "embedswap": __version__,
    }


def summarise(experiment: Experiment, experiment_dir: Path, attempt: Attempt, workload: Workload) -> Summary:
    """The one pipeline: the attempt's captures read into sections, validated once, decided against the
    experiment's typed ``decisions``, written to summary.json, and returned as the typed :class:`Summary` every
    reader (notebooks, report, post, figures, console, guard) gets."""
    summary, body, decided = _built(experiment, experiment_dir, attempt, workload)
    write_summary(summary, attempt)
    # the body is already validated and the decisions are typed: joined without validating either again
    return Summary.model_construct(_fields_set={*body.model_fields_set, "decisions"},
                                   **{name: getattr(body, name) for name in type(body).model_fields},
                                   decisions=decided)


def build_summary(experiment: Experiment, experiment_dir: Path, attempt: Attempt, workload: Workload) -> dict[str, Any]:
    """summary.json's content (the dict :func:`write_summary` writes); :func:`summarise` is the pipeline."""
    return _built(experiment, experiment_dir, attempt, workload)[0]


def _built(experiment: Experiment, experiment_dir: Path, attempt: Attempt,
           workload: Workload) -> tuple[dict[str, Any], SummaryBody, Decisions]:
    model_path = resolve_model_path(experiment.model.path)
    env_path = attempt.captures / "environment.json"
    env = json.loads(env_path.read_text()) if env_path.exists() else environment()
    summary = {
        "schema_version": SCHEMA_VERSION,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "experiment": {
            "name": experiment.name,
            "date": experiment.date.isoformat(),
            "description": experiment.description,
            "folder": experiment_dir.name,
            "attempt": attempt.name,
            "config": experiment.model_dump(mode="json"),
        },
        "model": {"spec": experiment.model.path, "served_name": experiment.model.served_name,
                  **model_fingerprint(model_path)},
        "workload": {
            "documents": len(workload.documents),
            "languages": {lang: sum(1 for d in workload.documents if d.lang == lang)
                          for lang in sorted({d.lang for d in workload.documents})},
            "queries": len(workload.queries),
            "batch_size": workload.batch_size,
            "repeats": experiment.workload.repeats,
            "samples": samples_section(experiment, attempt, workload),
        },
        "roles": {"legacy": experiment.legacy, "candidate": experiment.primary_candidate,
                  "candidates": experiment.candidates},
        "environment": env,
        "steps": attempt.steps(),
        "targets": targets_section(experiment, attempt),
        "vectors": vectors_section(experiment, attempt, workload),
        # each candidate's comparison as step 03 decided it: the contract and the instruction read their probes as
        # it says (a candidate serving another model within its own answers)
        "plan": (plan := plan_of_attempt(experiment, attempt, workload)).model_dump(mode="json", exclude_defaults=True),
        "contract": contract_section(experiment, attempt, plan),
        "instruction": instruction_section(experiment, attempt, plan),
        "long_input": long_input_section(experiment, attempt),
        "latency": latency_section(experiment, attempt),
        "ablation": ablation_section(experiment, attempt),
        "matryoshka": matryoshka_section(experiment, attempt),
        "restore": restore_section(experiment, attempt),
        "parity": parity_section(attempt),
        "diagnosis": diagnosis_section(attempt),
        "ranking": ranking_section(experiment, attempt, workload),
        "shim": shim_section(experiment, attempt),
        "timing": timing_section(experiment, attempt),
        "index": index_section(experiment, attempt, workload),
        "faults": faults_section(experiment, attempt),
    }
    if experiment.latency.open_loop is not None:  # the open-loop sweep: a section only where it was configured
        summary["capacity"] = capacity_section(experiment, attempt)
    summary, non_finite = null_non_finite(summary)  # a NaN figure is null with its place recorded, never a crash
    summary["non_finite"] = non_finite
    attach_reasons(summary)  # free texts a builder recorded (an exception's message) keep no code
    body = validate_body(summary, source=str(attempt.summary_path))
    # the experiment's decisions, validated once when experiment.yaml was loaded, passed down typed
    decided = decide(body, experiment.decisions)
    summary["decisions"] = decisions_json(decided)
    return summary, body, decided


def write_summary(summary: dict[str, Any], attempt: Attempt) -> Path:
    # summary.json is derived data: recomputing it from the same captures replaces it
    atomic_write_bytes(attempt.summary_path, json_bytes(summary), overwrite=True)
    return attempt.summary_path
