"""summary.json: every figure of the report, computed from the attempt's capture files only.

Each section says whether it was measured; a section that could not be computed carries
``{"measured": false, "why": ..., "reason": {code, params}}`` (:mod:`embedswap.reasons`) so the report can
label it 미실측 / not measured, in its own words, instead of inventing it. The decisions the report states are
computed here too (:mod:`embedswap.analysis`, under ``decisions``), and the result is checked against the typed
model (:mod:`embedswap.summary.model`) before it is written; older files are upgraded on load
(:mod:`embedswap.summary.upgrade`).
Sections keyed by role (``legacy``, ``candidate`` = the first candidate) also have ``by_target`` for every
server, so a three-way experiment reads the same way as a two-way one.
"""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from embedswap import __version__
from embedswap.analysis import decide, decisions_json
from embedswap.captures import Attempt, atomic_write_bytes, json_bytes
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import DEFAULT_PROBE_PATH, classify
from embedswap.diagnosis.step import diagnosis_section
from embedswap.summary.sections.instruction import instruction_section
from embedswap.models import model_fingerprint, resolve_model_path
from embedswap.summary.sections.ranking import ranking_section
from embedswap.summary.sections.shim import shim_section
from embedswap.measure.tokens import TOKENIZER_COUNTS
from embedswap.analysis.vectors import compare, index_order_ok, norms, repeat_stability, token_total
from embedswap.summary.finite import null_non_finite
from embedswap.summary.timing import timing_section
from embedswap.summary.model import validate_body, validate_summary
from embedswap.reasons import attach_reasons, not_measured
from embedswap.summary.upgrade import SCHEMA_VERSION
from embedswap.measure.workload import Workload, sample_record, stratified_sample



def _target_missing(attempt: Attempt, name: str) -> dict[str, Any] | None:
    """Why a target has no usable captures (a not-measured entry), or None if it has them."""
    if not attempt.has(f"{name}/target.json"):
        return not_measured("target_not_captured", name=name)
    info = attempt.read_json(f"{name}/target.json")
    if info.get("error"):
        return not_measured("target_failed", name=name, error=info["error"].splitlines()[0][:300])
    return None


def _doc_vectors(attempt: Attempt, name: str) -> np.ndarray | None:
    # memory-mapped: a corpus-scale stack is paged in as each figure reads it, not loaded whole per target
    return attempt.read_array(f"{name}/doc_vectors.npy", mmap=True) if attempt.has(f"{name}/doc_vectors.npy") else None


def _norm_ratio(legacy: np.ndarray, candidate: np.ndarray) -> dict[str, Any]:
    """Per document, candidate / legacy L2 length (min, median, max) and whether any is off 1 by more than
    contract.NORM_TOLERANCE: a scaled or sliced-without-renormalising candidate, which cosine cannot see."""
    from embedswap.measure.contract import NORM_TOLERANCE

    a = np.linalg.norm(np.asarray(legacy, dtype=np.float64), axis=1)
    b = np.linalg.norm(np.asarray(candidate, dtype=np.float64), axis=1)
    ratio = np.divide(b, a, out=np.full_like(b, np.nan), where=a > 0)
    finite = ratio[np.isfinite(ratio)]
    spread = ({"min": float(finite.min()), "median": float(np.median(finite)), "max": float(finite.max())}
              if finite.size else {"min": None, "median": None, "max": None})
    return {**spread, "differs": bool(finite.size and np.any(np.abs(finite - 1.0) > NORM_TOLERANCE))}


def vectors_section(experiment: Experiment, attempt: Attempt, workload: Workload) -> dict[str, Any]:
    names = experiment.target_order()
    langs = [d.lang for d in workload.documents]
    ids = [d.id for d in workload.documents]
    by_target: dict[str, Any] = {}
    for name in names:
        missing = _target_missing(attempt, name)
        stack = _doc_vectors(attempt, name)
        if missing or stack is None:
            by_target[name] = missing or not_measured("no_document_vectors", name=name)
            continue
        requests = attempt.read_jsonl(f"{name}/workload_requests.jsonl")
        by_target[name] = {
            "measured": True,
            "dimension": int(stack.shape[2]),
            "norm": norms(stack[0]),
            "token_total": token_total(requests),
            "index_order_ok": index_order_ok(requests),
            "repeat_min_cosine": repeat_stability(stack),
            "repeats": int(stack.shape[0]),
            "source": f"captures/{name}/doc_vectors.npy",
        }
    legacy = _doc_vectors(attempt, experiment.legacy)
    comparisons: dict[str, Any] = {}
    for name in experiment.candidates:
        candidate = _doc_vectors(attempt, name)
        if legacy is None or candidate is None or not by_target[name].get("measured"):
            comparisons[name] = not_measured("vectors_missing", legacy=experiment.legacy, name=name)
        elif legacy.shape[2] != candidate.shape[2]:
            comparisons[name] = not_measured("dimensions_differ", legacy=legacy.shape[2], candidate=candidate.shape[2])
        else:
            comparisons[name] = {"measured": True, **compare(legacy[0], candidate[0], langs, ids),
                                 "norm_ratio": _norm_ratio(legacy[0], candidate[0])}
    primary = comparisons[experiment.primary_candidate]
    counts = attempt.read_json(TOKENIZER_COUNTS) if attempt.has(TOKENIZER_COUNTS) else {}
    tokenizer_total = (counts.get("documents") or {}).get("total")
    for info in by_target.values():
        if info.get("measured"):
            info["token_total_matches_tokenizer"] = (None if tokenizer_total is None or info["token_total"] is None
                                                     else info["token_total"] == tokenizer_total)

    def role(key: str) -> dict[str, Any]:
        return {r: by_target[n].get(key) for r, n in (("legacy", experiment.legacy),
                                                     ("candidate", experiment.primary_candidate))}

    return {
        "measured": bool(primary.get("measured")),
        "dimension": role("dimension"),
        "token_total": role("token_total"),
        "norm_first": {r: (v or {}).get("first") for r, v in role("norm").items()},
        "cosine": primary.get("cosine", {"min": None, "median": None, "max": None}),
        "by_language": primary.get("by_language"),
        "worst": primary.get("worst"),
        "by_target": by_target,
        "comparisons": comparisons,
        # the model's own tokenizer, offline (captures/reference/tokenizer_counts.json): the yardstick of the totals
        "tokenizer_token_total": tokenizer_total,
        "tokenizer": {k: counts.get(k) for k in ("implementation", "max_length", "error") if counts.get(k)},
    }


def _probe_side(record: dict[str, Any] | None) -> dict[str, Any]:
    if record is None:
        return {"status": None, "measured": False}
    keep = ("status", "error", "encoding", "dim", "n_vectors", "prompt_tokens", "latency_ms", "tokenizer_tokens")
    vector = record.get("vector")
    # the first vector's L2 length: cosine cannot see a scaled or sliced-without-renormalising answer, this can
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64))) if vector else None
    if record.get("not_applicable"):  # the target's API shape cannot say this probe: nothing was sent
        return {"measured": True, "status": None, "not_applicable": True, "api_shape": record.get("api_shape"),
                "not_applicable_field": record.get("not_applicable_field")}
    return {"measured": True, **{k: record.get(k) for k in keep}, "norm": norm}


def contract_section(experiment: Experiment, attempt: Attempt) -> list[dict[str, Any]] | dict[str, Any]:
    probes: dict[str, dict[str, dict[str, Any]]] = {}
    order: list[str] = []
    descriptions: dict[str, tuple[str, Any]] = {}
    for name in experiment.target_order():
        if not attempt.has(f"{name}/probes.jsonl"):
            continue
        for record in attempt.read_jsonl(f"{name}/probes.jsonl"):
            if record["probe"] not in order:
                order.append(record["probe"])
                descriptions[record["probe"]] = (record.get("description", ""), record.get("sent"))
            probes.setdefault(record["probe"], {})[name] = record
    if not order:
        return not_measured("no_probe_captures")
    threshold = experiment.parity.text_threshold
    rows = []
    for probe in order:
        answers = probes[probe]
        legacy = answers.get(experiment.legacy)
        first = next(iter(answers.values()))
        compare_to = first.get("compare_to")
        if compare_to:  # a route the legacy server lacks: its answer to the named probe is the reference
            legacy = probes.get(compare_to, {}).get(experiment.legacy)
        row: dict[str, Any] = {
            "probe": probe,
            "description": descriptions[probe][0],
            "sent": descriptions[probe][1],
            "path": first.get("path", DEFAULT_PROBE_PATH),
            "compare_to": compare_to,
            "legacy": _probe_side(legacy),
            "candidate": _probe_side(answers.get(experiment.primary_candidate)),
            "by_target": {n: _probe_side(answers.get(n)) for n in experiment.target_order()},
            "verdicts": {},
        }
        for name in experiment.candidates:
            candidate = answers.get(name)
            if legacy is None or candidate is None:
                row["verdicts"][name] = {"verdict": None, "detail": "not measured on both servers", "cosine": None}
            else:
                row["verdicts"][name] = classify(legacy, candidate, threshold).record()
        primary = row["verdicts"][experiment.primary_candidate]
        row.update(verdict=primary["verdict"], detail=primary["detail"], cosine=primary["cosine"],
                   aspects=primary.get("aspects", []),
                   **({"detail_reason": primary["detail_reason"]} if "detail_reason" in primary else {}))
        rows.append(row)
    return rows


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
        out[run] = {
            "latency_ms": [[round(float(r["latency_ms"]), 3) for r in g] for g in groups],
            "docs": [[int(r.get("docs") or 0) if r.get("status") == 200 and not r.get("error") else 0 for r in g]
                     for g in groups],
            "wall_s": [round(max(float(r.get("send_offset_s") or 0) + float(r["latency_ms"]) / 1000 for r in g), 6)
                       for g in groups],
        }
    return out


def latency_stats_with_requests(attempt: Attempt, name: str) -> dict[str, Any]:
    """``latency_stats.json`` with each point's per-request data attached (``requests``)."""
    stats = attempt.read_json(f"{name}/latency_stats.json")
    by_run = _requests_by_run(attempt, name)
    points = [stats.get(k) for k in ("sequential", "concurrent")] + list(stats.get("sweep") or [])
    for point in points:
        if isinstance(point, dict) and point.get("run") in by_run:
            point["requests"] = by_run[point["run"]]
    return stats


def latency_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    by_target: dict[str, Any] = {}
    for name in experiment.target_order():
        if attempt.has(f"{name}/latency_stats.json"):
            by_target[name] = {"measured": True, **latency_stats_with_requests(attempt, name),
                               "source": f"captures/{name}/latency_requests.jsonl"}
        else:
            by_target[name] = _target_missing(attempt, name) or not_measured("latency_incomplete")
    return {
        "legacy": by_target[experiment.legacy],
        "candidate": by_target[experiment.primary_candidate],
        "by_target": by_target,
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
            rows[name] = _target_missing(attempt, name) or not_measured("latency_incomplete")
    return {"measured": all(r.get("measured") for r in rows.values()), "by_target": rows}


def matryoshka_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    """`dimensions` probes on the base engine and on the variant started with the Matryoshka override, and whether
    the variant's cut vector matches the legacy server's cut-and-renormalise."""
    if experiment.matryoshka is None:
        return not_measured("no_matryoshka")
    base, variant = experiment.matryoshka.base, experiment.matryoshka.variant
    sides = {role: {r["probe"]: r for r in attempt.read_jsonl(f"{n}/probes.jsonl")} if attempt.has(f"{n}/probes.jsonl")
             else None for role, n in (("legacy", experiment.legacy), ("base", base), ("variant", variant))}
    if sides["variant"] is None or sides["legacy"] is None:
        return _target_missing(attempt, variant) or not_measured("no_matryoshka_probes", name=variant)
    rows = []
    for probe in ("dimensions_native", "dimensions_reduced"):
        legacy = sides["legacy"].get(probe) or {}
        with_override = sides["variant"].get(probe) or {}
        without = (sides["base"] or {}).get(probe) or {}
        row: dict[str, Any] = {
            "probe": probe,
            "sent": with_override.get("sent"),
            "legacy": {"status": legacy.get("status"), "dim": legacy.get("dim")},
            "without_override": {"status": without.get("status"), "dim": without.get("dim"),
                                 "error": without.get("error")},
            "with_override": {"status": with_override.get("status"), "dim": with_override.get("dim"),
                              "error": with_override.get("error")},
            "cosine_to_legacy_cut": None,
        }
        if legacy.get("vector") is not None and with_override.get("vector") is not None:
            row["cosine_to_legacy_cut"] = classify(legacy, with_override).cosine
        rows.append(row)
    works = all(r["with_override"]["status"] == 200 for r in rows)
    return {"measured": True, "base": base, "variant": variant, "override_works": works, "rows": rows,
            "command": (attempt.read_json(f"{variant}/target.json").get("commands")
                        if attempt.has(f"{variant}/target.json") else None)}


def restore_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    if not experiment.sequencing.restore_legacy:
        return not_measured("restore_off")
    relative = f"{experiment.legacy}/restore.json"
    if not attempt.has(relative):
        return not_measured("restore_not_run")
    return {"measured": True, **attempt.read_json(relative), "source": f"captures/{relative}"}


def parity_section(attempt: Attempt) -> dict[str, Any]:
    if not attempt.has("parity/rows.json"):
        return {**not_measured("parity_not_run"), "rows": [], "pass": None}
    data = attempt.read_json("parity/rows.json")
    if not data.get("rows") and not data.get("not_run") and data.get("why"):  # nothing was gated: not a failure
        return {"measured": False, **data}
    return {"measured": True, **data}


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
        out[name] = {"config": config, "measured": info is not None and not info.get("error"), **(info or {})}
    return out


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


def build_summary(experiment: Experiment, experiment_dir: Path, attempt: Attempt, workload: Workload) -> dict[str, Any]:
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
        "contract": contract_section(experiment, attempt),
        "instruction": instruction_section(experiment, attempt),
        "latency": latency_section(experiment, attempt),
        "ablation": ablation_section(experiment, attempt),
        "matryoshka": matryoshka_section(experiment, attempt),
        "restore": restore_section(experiment, attempt),
        "parity": parity_section(attempt),
        "diagnosis": diagnosis_section(attempt),
        "ranking": ranking_section(experiment, attempt, workload),
        "shim": shim_section(experiment, attempt),
        "timing": timing_section(experiment, attempt),
    }
    summary, non_finite = null_non_finite(summary)  # a NaN figure is null with its place recorded, never a crash
    summary["non_finite"] = non_finite
    attach_reasons(summary)  # free texts a builder recorded (an exception's message) keep no code
    summary["decisions"] = decisions_json(decide(validate_body(summary, source=str(attempt.summary_path))))
    validate_summary(summary, source=str(attempt.summary_path))
    return summary


def write_summary(summary: dict[str, Any], attempt: Attempt) -> Path:
    # summary.json is derived data: recomputing it from the same captures replaces it
    atomic_write_bytes(attempt.summary_path, json_bytes(summary), overwrite=True)
    return attempt.summary_path
