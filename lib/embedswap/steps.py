"""The five steps as the notebooks call them. A notebook is its parameters cell, one call here, and tables.

01 legacy capture    start the legacy server, capture everything about it, stop it
02 swap deploy       (legacy is down) start each candidate in turn on the same host, capture, stop
03 vector/contract   read captures: vector diff and probe verdicts
04 latency           read captures: the two operating points, medians of the repeats
05 parity            golden fp32 reference vs every server's vectors; the gate

Every step ends by recomputing summary.json from the captures, so the summary is always current.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from embedswap.captures import Attempt, capture_complete, open_attempt
from embedswap.config import Experiment, ParityBackendSpec, load_experiment, resolve_path
from embedswap.diagnosis import diagnose_safely
from embedswap.measure import measure_target
from embedswap.models import resolve_model_path
from embedswap.parity import (
    backend_from_spec,
    gate,
    golden_reference,
    measure_backend,
    record_modalities,
    thresholds_from,
)
from embedswap.paths import project_root
from embedswap.summary import build_summary, environment, write_summary
from embedswap.reasons import not_measured
from embedswap.tokens import ensure_tokenizer_counts
from embedswap.workload import Workload, load_workload, sample_record, stratified_sample


class StepError(RuntimeError):
    """A step could not run (e.g. the captures it reads are missing). The message says which step to run first."""


@dataclass
class StepContext:
    experiment: Experiment
    experiment_dir: Path
    attempt: Attempt
    workload: Workload

    def summary(self) -> dict[str, Any]:
        summary = build_summary(self.experiment, self.experiment_dir, self.attempt, self.workload)
        write_summary(summary, self.attempt)
        return summary



def _reason(code: str, **params: object) -> dict[str, object]:
    """``why`` and ``reason`` of a not-measured entry (for entries that carry no ``measured`` flag)."""
    return {k: v for k, v in not_measured(code, **params).items() if k != "measured"}

def find_experiment_dir(experiment_dir: str | Path = "") -> Path:
    """As given (relative to the cwd, else to the project root); "" means the newest folder in experiments/."""
    if not str(experiment_dir):
        root = project_root() / "experiments"
        folders = sorted(p for p in root.glob("*/experiment.yaml")) if root.exists() else []
        if not folders:
            raise StepError(f"no experiment in {root}: create one with `embedswap new SLUG`")
        return folders[-1].parent
    for base in (Path.cwd(), project_root()):
        candidate = (base / experiment_dir).resolve()
        if (candidate / "experiment.yaml").exists():
            return candidate
    raise StepError(f"experiment folder '{experiment_dir}' has no experiment.yaml")


def open_step(experiment_dir: str | Path = "", attempt: str = "", create: bool = False) -> StepContext:
    folder = find_experiment_dir(experiment_dir)
    experiment = load_experiment(folder)
    chosen = open_attempt(folder, attempt, create=create)
    return StepContext(experiment, folder, chosen, load_workload(experiment, folder))


# --- 01 / 02: measure --------------------------------------------------------------------------------------------
def _record_environment(ctx: StepContext) -> None:
    if not ctx.attempt.has("environment.json"):
        ctx.attempt.write_json("environment.json", environment())


def measure_or_resume(ctx: StepContext, name: str) -> dict[str, Any]:
    """Measure one target, unless this attempt already has its complete captures (resume: `--attempt latest`).

    An earlier try that did not complete (failed, partial, interrupted) is moved aside first, to
    captures/.superseded/, so the target is measured again without overwriting any capture.
    """
    step = f"capture:{name}"
    if capture_complete(ctx.attempt, name):
        print(f"{name}: captures complete in attempt {ctx.attempt.name}; not measured again")
        return ctx.attempt.read_json(f"{name}/target.json")
    previous = ctx.attempt.steps().get(step)
    moved = ctx.attempt.retire(name)
    if previous or moved:
        ctx.attempt.reset_step(step, "pending", superseded={"captures": moved, "previous": previous})
        print(f"{name}: the earlier try ({(previous or {}).get('status')}) moved to {moved}; measuring again")
    return measure_target(ctx.experiment, ctx.experiment_dir, ctx.attempt, name, step)


def capture_legacy(ctx: StepContext) -> dict[str, Any]:
    """The legacy server, then its ablation variants (same host, one at a time, before the swap)."""
    _record_environment(ctx)
    ensure_tokenizer_counts(ctx.experiment, ctx.workload, ctx.attempt)
    result = measure_or_resume(ctx, ctx.experiment.legacy)
    for name in ctx.experiment.ablations:
        try:
            measure_or_resume(ctx, name)
        except Exception as exc:  # recorded as failed in steps.json; the legacy capture stands
            print(f"ablation '{name}' failed: {type(exc).__name__}: {exc}")
    return result


def swap_deploy(ctx: StepContext) -> dict[str, dict[str, Any]]:
    """Each candidate in turn, on the same host, after the legacy server is down (it was stopped in step 01).

    Candidates whose captures are already complete in this attempt are not measured again (resume)."""
    _record_environment(ctx)
    results: dict[str, dict[str, Any]] = {}
    for name in ctx.experiment.candidates:
        try:
            results[name] = measure_or_resume(ctx, name)
        except Exception as exc:  # one failed candidate must not hide the others; it is recorded as failed
            results[name] = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
    if ctx.experiment.matryoshka:
        name = ctx.experiment.matryoshka.variant
        try:
            results[name] = measure_or_resume(ctx, name)
        except Exception as exc:
            results[name] = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
    if ctx.experiment.sequencing.restore_legacy:
        results["restore"] = restore_legacy(ctx)
    return results


def restore_legacy(ctx: StepContext) -> dict[str, Any]:
    """Start the legacy server again after the swap and check it answers the first batch as it did in step 01."""
    from embedswap.client import EmbeddingClient
    from embedswap.targets import build_target
    from embedswap.vectors import rowwise_cosine

    name = ctx.experiment.legacy
    relative = f"{name}/restore.json"
    if ctx.attempt.has(relative):
        return ctx.attempt.read_json(relative)
    batch = ctx.workload.batches()[0]
    record: dict[str, Any] = {"target": name}
    try:
        with build_target(ctx.experiment, name, ctx.attempt.logs) as target:
            with EmbeddingClient(target.base_url, ctx.experiment.model.served_name, ctx.experiment.latency.timeout_s,
                                 target.headers(), target.verify_tls()) as client:
                answer = client.embed([d.text for d in batch])
            record.update(start_seconds=round(target.start_seconds or 0, 2), status=answer.status, error=answer.error)
            if answer.ok and ctx.attempt.has(f"{name}/doc_vectors.npy"):
                before = np.asarray(ctx.attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0][: len(batch)])
                record["cosine_to_step01_min"] = float(np.min(rowwise_cosine(before, answer.as_array())))
        record["restored"] = record.get("status") == 200
    except Exception as exc:  # recorded, never fatal: the measurements are already captured
        record.update(restored=False, error=f"{type(exc).__name__}: {exc}"[:1000])
    ctx.attempt.write_json(relative, record)
    return record


def targets_table(ctx: StepContext) -> pd.DataFrame:
    rows = []
    for name, info in ctx.summary()["targets"].items():
        rows.append({
            "target": name,
            "kind": info["config"]["kind"],
            "version": info.get("version"),
            "start_s": info.get("start_seconds"),
            "rss_MiB": round(info["rss_bytes"] / 2**20) if info.get("rss_bytes") else None,
            "status": ctx.attempt.step_status(f"capture:{name}"),
            "problems": "; ".join(info.get("problems") or []) or info.get("error"),
        })
    return pd.DataFrame(rows).set_index("target")


# --- 03: vectors and contract ------------------------------------------------------------------------------------
def require_captures(ctx: StepContext) -> None:
    missing = [n for n in ctx.experiment.target_order() if not ctx.attempt.has(f"{n}/target.json")]
    if missing:
        raise StepError(f"attempt {ctx.attempt.name} has no captures for {missing}: run steps 01 and 02 first")
    ensure_tokenizer_counts(ctx.experiment, ctx.workload, ctx.attempt)  # attempts made before it was captured


def vector_table(summary: dict[str, Any]) -> pd.DataFrame:
    """The article's vector table, one column per server."""
    vectors = summary["vectors"]
    rows: dict[str, dict[str, Any]] = {}
    for name, info in vectors["by_target"].items():
        if not info.get("measured"):
            rows[name] = {"dimension": None, "first L2 norm": None, "token total": None, "note": info.get("why")}
            continue
        rows[name] = {
            "dimension": info["dimension"],
            "first L2 norm": round(info["norm"]["first"], 6),
            "token total": info["token_total"],
            "index order ok": info["index_order_ok"],
            "repeat min cosine": info["repeat_min_cosine"],
            "= tokenizer's count": info.get("token_total_matches_tokenizer"),
        }
    for name, comparison in vectors["comparisons"].items():
        if comparison.get("measured"):
            c = comparison["cosine"]
            rows[name]["cosine vs legacy (min/median/max)"] = f"{c['min']:.6f} / {c['median']:.6f} / {c['max']:.6f}"
    return pd.DataFrame(rows)


def contract_table(summary: dict[str, Any]) -> pd.DataFrame:
    contract = summary["contract"]
    if isinstance(contract, dict):
        return pd.DataFrame([{"contract": contract.get("why")}])
    rows = []
    for row in contract:
        entry: dict[str, Any] = {"probe": row["probe"]}
        for name, side in row["by_target"].items():
            entry[name] = side["status"]
        for name, verdict in row["verdicts"].items():
            entry[f"verdict ({name})"] = verdict["verdict"]
            entry[f"cosine ({name})"] = None if verdict["cosine"] is None else round(verdict["cosine"], 4)
        rows.append(entry)
    return pd.DataFrame(rows).set_index("probe")


def instruction_table(summary: dict[str, Any]) -> pd.DataFrame:
    """The query instruction three ways per server (applied / ignored / another vector), then /v2/embed."""
    section = summary.get("instruction") or {}
    if not section.get("measured"):
        return pd.DataFrame([{"instruction": section.get("why", "not in this summary")}])
    rows = []
    for row in section["rows"] + [{**r, "variant": "/v2/embed input_type"} for r in section.get("v2_embed", [])]:
        cos = row.get("cosine_to_reference")
        rows.append({"server": row["target"], "request": row.get("variant"), "status": row.get("status"),
                     "prompt tokens": row.get("prompt_tokens"), "tokenizer's count": row.get("tokenizer_tokens"),
                     "cosine to reference (min)": (cos or {}).get("min") if isinstance(cos, dict) else cos,
                     "reading": row.get("reading") or row.get("error")})
    return pd.DataFrame(rows).set_index(["server", "request"])


# --- 04: latency -------------------------------------------------------------------------------------------------
def latency_table(summary: dict[str, Any], section: str = "latency") -> pd.DataFrame:
    """One row per server; ``section="ablation"`` gives the legacy server against its variants."""
    rows = []
    if not summary[section].get("by_target"):
        return pd.DataFrame([{section: summary[section].get("why")}])
    for name, info in summary[section]["by_target"].items():
        if not info.get("measured"):
            rows.append({"target": name, "note": info.get("why")})
            continue
        seq, conc = info["sequential"], info["concurrent"]
        rows.append({
            "target": name,
            "seq p50 ms": seq["p50_ms"], "seq p99 ms": seq["p99_ms"],
            f"c{conc['concurrency']} p50 ms": conc["p50_ms"], f"c{conc['concurrency']} p99 ms": conc["p99_ms"],
            f"c{conc['concurrency']} docs/s": conc["docs_per_s"],
            "docs/s per repeat": conc["spread"]["docs_per_s"],
            "errors": seq["errors"] + conc["errors"],
        })
    return pd.DataFrame(rows).set_index("target").round(1)


# --- 05: parity --------------------------------------------------------------------------------------------------
def run_parity(ctx: StepContext) -> dict[str, Any]:
    """Golden fp32 reference (captured once per attempt) against every server's document vectors, and against
    the extra offline backends of ``parity.backends`` (each one run once per attempt, its vectors captured).

    Rows are per backend and modality; a record with an ``image`` field is text+image, gated at the multimodal
    threshold. No backend here embeds images, so text+image records are reported as not measured, with why.
    """
    experiment, attempt = ctx.experiment, ctx.attempt
    # the reference embeds a sample stratified by language (parity.sample): every row below is on that sample
    langs = [d.lang for d in ctx.workload.documents]
    chosen = stratified_sample(langs, experiment.parity.sample)
    sample = sample_record(langs, chosen, "stratified by language")
    texts = [ctx.workload.documents[i].text for i in chosen]
    ids = [ctx.workload.documents[i].id for i in chosen]
    thresholds = thresholds_from(experiment.parity)
    documents_path = resolve_path(ctx.experiment_dir, experiment.workload.documents)
    by_id = record_modalities(documents_path)
    modalities = [by_id.get(i, "text") for i in ids]
    text_index = [i for i, m in enumerate(modalities) if m == "text"]
    image_ids = [ids[i] for i, m in enumerate(modalities) if m != "text"]
    clash = sorted({s.label for s in experiment.parity.backends} & set(experiment.targets))
    if clash:
        raise StepError(f"parity.backends: name '{clash[0]}' is also a target; give the backend another 'name'")
    not_asked = [name for name in experiment.target_order() if not_gated(experiment, attempt, name)]
    if len(not_asked) == len(experiment.target_order()) and not experiment.parity.backends:
        return _nothing_gated(experiment, attempt, not_asked)
    if not attempt.has("reference/doc_vectors.npy"):
        model_path = resolve_model_path(experiment.model.path)
        attempt.write_array("reference/doc_vectors.npy", golden_reference(model_path, texts))
        attempt.write_json("reference/meta.json", {"implementation": "sentence-transformers", "dtype": "float32",
                                                   "device": "cpu", "texts": len(texts), "sample": sample,
                                                   "doc_ids": ids})
    reference = attempt.read_array("reference/doc_vectors.npy")

    def offline_vectors(spec: ParityBackendSpec) -> dict[str, Any]:
        """One extra backend's vectors, captured once per attempt under parity/backends/<name>/ (a failure too)."""
        prefix = f"parity/backends/{spec.label}"
        if attempt.has(f"{prefix}/meta.json"):
            meta = attempt.read_json(f"{prefix}/meta.json")
            has = attempt.has(f"{prefix}/doc_vectors.npy")
            return {**meta, "vectors": attempt.read_array(f"{prefix}/doc_vectors.npy") if has else None}
        backend = backend_from_spec(spec, resolve_model_path(experiment.model.path), attempt.logs)
        result = measure_backend(backend, texts)
        meta = {"backend": spec.label, "spec": spec.model_dump(), "dtype": result.dtype, "device": result.device,
                "seconds": result.seconds, "error": result.error, "engine": result.meta}
        if result.vectors is not None:
            attempt.write_array(f"{prefix}/doc_vectors.npy", result.vectors)
        attempt.write_json(f"{prefix}/meta.json", meta)
        return {**meta, "vectors": result.vectors}

    def text_row(backend: str, dtype: str, device: str, vectors: Any, source: str) -> dict[str, Any]:
        row = gate(backend, dtype, device, "text", reference[text_index], vectors[text_index],
                   [ids[i] for i in text_index], thresholds=thresholds).as_dict()
        if not row["pass"]:  # issue 24: say which known pipeline mistake reproduces the vectors
            row["diagnosis"] = diagnose_safely(resolve_model_path(experiment.model.path),
                                               [texts[i] for i in text_index], vectors[text_index], backend,
                                               thresholds["text"])
        return {**row, "source": source}

    rows = []
    not_run = []
    for name in experiment.target_order():
        if name in not_asked:
            continue
        if not attempt.has(f"{name}/doc_vectors.npy"):
            not_run.append({"backend": name, **_reason("no_document_vectors_captured")})
            continue
        config = experiment.targets[name]
        dtype = getattr(config, "dtype", None) or "engine default"
        device = "remote" if config.kind == "external" else "cpu"
        try:
            stack = attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)
            rows.append(text_row(name, dtype, device, np.asarray(stack[0][chosen]),
                                 f"captures/{name}/doc_vectors.npy"))
        except ValueError as exc:  # e.g. vectors of another dimension than the reference
            not_run.append({"backend": name, "why": str(exc)})
    for spec in experiment.parity.backends:
        measured = offline_vectors(spec)
        if measured.get("vectors") is None:
            not_run.append({"backend": spec.label, **({"why": measured["error"]} if measured.get("error")
                                                     else _reason("no_vectors"))})
            continue
        try:
            rows.append(text_row(spec.label, measured["dtype"], measured["device"], measured["vectors"],
                                 f"captures/parity/backends/{spec.label}/doc_vectors.npy"))
        except ValueError as exc:
            not_run.append({"backend": spec.label, "why": str(exc)})
    if image_ids:
        multimodal = {"measured": False, "records": len(image_ids), "threshold": thresholds["text+image"],
                      **_reason("images_not_embedded", n=len(image_ids), ids=", ".join(image_ids[:5]))}
    else:
        multimodal = {"measured": False, "records": 0, "threshold": thresholds["text+image"],
                      **_reason("no_images")}
    result = {
        "rows": rows,
        "pass": bool(rows) and all(r["pass"] for r in rows) and not not_run,
        "not_run": not_run,
        "not_asked": not_asked,
        "thresholds": {"text": experiment.parity.text_threshold,
                       "multimodal": experiment.parity.multimodal_threshold},
        "multimodal": multimodal,
        "reference": "captures/reference/doc_vectors.npy (sentence-transformers, fp32, cpu)",
        "sample": sample,
    }
    if attempt.has("parity/rows.json"):
        previous = attempt.read_json("parity/rows.json")
        if json.dumps(previous, sort_keys=True) != json.dumps(result, sort_keys=True):
            raise StepError(f"attempt {attempt.name} already has different parity results; captures are never "
                            "overwritten: rerun the experiment as a new attempt")
        return previous
    attempt.write_json("parity/rows.json", result)
    attempt.mark_step("parity", "complete" if result["pass"] else "failed",
                      detail="gate passed" if result["pass"] else "gate failed")
    return result


def not_gated(experiment: Experiment, attempt: Attempt, name: str) -> bool:
    """A target whose ``capture:`` list has no ``workload`` was not asked for document vectors: nothing to gate.
    (One that was asked and has none is a failure of the gate, not this.)"""
    config = experiment.targets[name]
    return "workload" not in list(getattr(config, "capture", ["workload"])) and not attempt.has(
        f"{name}/doc_vectors.npy")


def _nothing_gated(experiment: Experiment, attempt: Attempt, not_asked: list[str]) -> dict[str, Any]:
    """No target was asked for document vectors and no parity backend is configured: the gate has nothing to
    judge, so it neither passes nor fails (``pass: null``) and the fp32 reference is not computed."""
    result = {
        "rows": [], "pass": None, "not_run": [], "not_asked": not_asked, **_reason("parity_nothing_gated"),
        "thresholds": {"text": experiment.parity.text_threshold,
                       "multimodal": experiment.parity.multimodal_threshold},
        "multimodal": {"measured": False, "records": 0, "threshold": experiment.parity.multimodal_threshold,
                       **_reason("parity_nothing_gated")},
        "reference": None,
    }
    if attempt.has("parity/rows.json"):
        return attempt.read_json("parity/rows.json")
    attempt.write_json("parity/rows.json", result)
    attempt.mark_step("parity", "skipped", detail="nothing to gate: no target captured document vectors")
    return result


def parity_table(summary: dict[str, Any]) -> pd.DataFrame:
    """One line per backend and modality; backends that were not measured, and the text+image gate when it was
    not measured, are lines with a note instead of figures."""
    parity = summary["parity"]
    rows = [{k: v for k, v in row.items() if k not in ("worst", "source")} for row in parity.get("rows") or []]
    for missing in parity.get("not_run") or []:
        rows.append({"backend": missing["backend"], "pass": False, "note": f"not measured: {missing['why']}"})
    multimodal = parity.get("multimodal") or {}
    if rows and multimodal and not multimodal.get("measured"):
        rows.append({"backend": "(text+image)", "modality": "text+image",
                     "threshold": (parity.get("thresholds") or {}).get("multimodal"),
                     "note": f"not measured: {multimodal.get('why')}"})
    if not rows:
        return pd.DataFrame([{"parity": parity.get("why")}])
    return pd.DataFrame(rows).set_index("backend")
