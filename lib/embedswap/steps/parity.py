"""Step 05: the golden fp32 reference (on ``parity.sample`` documents, stratified by language) against every
server's document vectors and the extra offline backends; the gate.

Split out of ``embedswap.steps``, which re-exports ``run_parity`` and ``not_gated``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment, resolve_path
from embedswap.config.sections import ParityBackendSpec
from embedswap.diagnosis.step import diagnose_row
from embedswap.models import local_copy, resolve_model_path
from embedswap.summary.sections.plan import plan_of_attempt
from embedswap.parity.checks import MATRIX_FILE, captured_matrix
from embedswap.parity.multimodal_step import captured_multimodal
from embedswap.parity.backends import backend_from_spec, measure_backend
from embedswap.parity.gate import gate, golden_reference, record_modalities, thresholds_from
from embedswap.parity.reference_cache import cached_witness_vectors
from embedswap.parity.vllm import VllmOfflineBackend
from embedswap.parity.witnesses import ENGINE_WITNESS, agreement, witness_vectors
from embedswap.parity.witnesses import WITNESSES as DEFAULT_WITNESSES  # WITNESSES here is the capture's path
from embedswap.steps.context import StepContext, StepError, why_fields
from embedswap.measure.workload import sample_record, stratified_sample


def run_parity(ctx: StepContext) -> dict[str, Any]:
    """Golden fp32 reference (captured once per attempt) against every server's document vectors, and against
    the extra offline backends of ``parity.backends`` (each one run once per attempt, its vectors captured).

    Rows are per backend and modality; a record with an ``image`` field is text+image, gated at the multimodal
    threshold. With ``parity.multimodal`` a CLIP model's captions and images are gated through vLLM
    (embedswap.parity.multimodal_step); else text+image records are reported as not measured, with why.
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
        _reference(experiment, attempt, texts, {"texts": len(texts), "sample": sample, "doc_ids": ids})
    reference = attempt.read_array("reference/doc_vectors.npy")

    offline = {spec.label: backend_from_spec(spec, resolve_model_path(experiment.model.path), attempt.logs)
               for spec in experiment.parity.backends if not attempt.has(f"parity/backends/{spec.label}/meta.json")}
    riders = [(texts, b) for b in offline.values() if isinstance(b, VllmOfflineBackend) and b.shares_engine()]
    if riders and experiment.parity.checks is not None and not attempt.has(MATRIX_FILE):
        # the offline vLLM backends run in the matrix's engine process (one vLLM import), their vectors unchanged
        captured_matrix(experiment, attempt, texts, riders)

    def offline_vectors(spec: ParityBackendSpec) -> dict[str, Any]:
        """One extra backend's vectors, captured once per attempt under parity/backends/<name>/ (a failure too)."""
        prefix = f"parity/backends/{spec.label}"
        if attempt.has(f"{prefix}/meta.json"):
            meta = attempt.read_json(f"{prefix}/meta.json")
            has = attempt.has(f"{prefix}/doc_vectors.npy")
            return {**meta, "vectors": attempt.read_array(f"{prefix}/doc_vectors.npy") if has else None}
        result = measure_backend(offline[spec.label], texts)
        meta = {"backend": spec.label, "spec": spec.model_dump(), "dtype": result.dtype, "device": result.device,
                "seconds": result.seconds, "error": result.error, "engine": result.meta}
        if result.vectors is not None:
            attempt.write_array(f"{prefix}/doc_vectors.npy", result.vectors)
        attempt.write_json(f"{prefix}/meta.json", meta)
        return {**meta, "vectors": result.vectors}

    def text_row(backend: str, dtype: str, device: str, vectors: Any, source: str,
                 own: Any = None) -> dict[str, Any]:
        """``own``: the reference of the model the backend serves when it is another one (its own fp32 vectors)."""
        golden = reference if own is None else own
        row = gate(backend, dtype, device, "text", golden[text_index], vectors[text_index],
                   [ids[i] for i in text_index], thresholds=thresholds).as_dict()
        if not row["pass"] and own is None:  # say which known pipeline mistake of the model reproduces the vectors
            row["diagnosis"] = diagnose_row(experiment, attempt, [texts[i] for i in text_index],
                                            vectors[text_index], backend, thresholds["text"])
        return {**row, "source": source}

    rows = []
    not_run = []
    # a server of another model (issue 57) is gated against its own model's fp32 reference where a local copy
    # exists, and not measured otherwise: never failed against the experiment's model
    plan = plan_of_attempt(experiment, attempt, ctx.workload)
    others = plan.others()
    other_model = []
    for name in experiment.target_order():
        if name in not_asked:
            continue
        if not attempt.has(f"{name}/doc_vectors.npy"):
            not_run.append({"backend": name, **why_fields("no_document_vectors_captured")})
            continue
        config = experiment.targets[name]
        own_path = local_copy(config.model) if name in others else None
        if name in others and own_path is None:
            # the model as configured, else as the server stated it; neither: said so, never named (issue 64)
            change = plan.by_candidate[name].model
            why = (why_fields("parity_no_local_model_unstated", name=name)
                   if change.candidate_model_source == "not_stated" else
                   why_fields("parity_no_local_model", name=name, model=change.candidate_model or "?"))
            other_model.append({"backend": name, **why})
            continue
        dtype = getattr(config, "dtype", None) or "engine default"
        device = "remote" if config.kind == "external" else "cpu"
        try:
            stack = attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)
            own = _own_reference(attempt, name, own_path, texts) if own_path else None
            rows.append(text_row(name, dtype, device, np.asarray(stack[0][chosen]),
                                 f"captures/{name}/doc_vectors.npy", own=own))
        except ValueError as exc:  # e.g. vectors of another dimension than the reference
            not_run.append({"backend": name, "why": str(exc)})
    for spec in experiment.parity.backends:
        measured = offline_vectors(spec)
        if measured.get("vectors") is None:
            not_run.append({"backend": spec.label, **({"why": measured["error"]} if measured.get("error")
                                                     else why_fields("no_vectors"))})
            continue
        try:
            rows.append(text_row(spec.label, measured["dtype"], measured["device"], measured["vectors"],
                                 f"captures/parity/backends/{spec.label}/doc_vectors.npy"))
        except ValueError as exc:
            not_run.append({"backend": spec.label, "why": str(exc)})
    multimodal = captured_multimodal(experiment, attempt, attempt.logs / "multimodal")  # parity.multimodal
    if multimodal is None and image_ids:
        multimodal = {"measured": False, "records": len(image_ids), "threshold": thresholds["text+image"],
                      **why_fields("images_not_embedded", n=len(image_ids), ids=", ".join(image_ids[:5]))}
    elif multimodal is None:
        multimodal = {"measured": False, "records": 0, "threshold": thresholds["text+image"],
                      **why_fields("no_images")}
    result = {
        "rows": rows,
        # a configured multimodal part that failed (or could not run) fails the gate too
        "pass": (bool(rows) and all(r["pass"] for r in rows) and not not_run
                 and multimodal.get("pass") is not False),
        "not_run": not_run,
        "not_asked": not_asked,
        **({"other_model": other_model} if other_model else {}),
        "thresholds": {"text": experiment.parity.text_threshold,
                       "multimodal": experiment.parity.multimodal_threshold},
        "multimodal": multimodal,
        "reference": f"captures/reference/doc_vectors.npy ({_reference_name(attempt)}, fp32, cpu)",
        "sample": sample,
        # the witnesses of the reference: their agreement, the consensus the gate uses, who was left out and why
        **({"witnesses": attempt.read_json(WITNESSES)} if attempt.has(WITNESSES) else {}),
        # article 003's matrix: its rows are findings beside the gate, they do not decide it
        "matrix": captured_matrix(experiment, attempt, texts),
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


WITNESSES = "reference/witnesses.json"


def _reference(experiment: Experiment, attempt: Attempt, texts: list[str], meta: dict[str, Any]) -> None:
    """The gate's reference: the witnesses (parity.witnesses) run on the sample, and the vectors of one witness of
    their consensus; with no consensus, sentence-transformers batched as before (its row then says so)."""
    model_path = resolve_model_path(experiment.model.path)
    witnesses = DEFAULT_WITNESSES + ([ENGINE_WITNESS] if _engine_witness(experiment) else [])
    # the witnesses' vectors are the model's own computation: read from the reference cache where an earlier run
    # of the same model, texts and versions stored them (parity.reference_cache), and said so in the meta below
    vectors, errors, origin = cached_witness_vectors(model_path, texts, witnesses,
                                                     f"{attempt.experiment_dir.name}/{attempt.name}", witness_vectors)
    found = agreement(vectors, experiment.parity.text_threshold, errors)
    name = found["reference"]
    chosen = vectors[name] if name is not None else golden_reference(model_path, texts)
    attempt.write_json(WITNESSES, found)
    attempt.write_array("reference/doc_vectors.npy", chosen)
    attempt.write_json("reference/meta.json", {"implementation": name or "sentence-transformers batch",
                                               "dtype": "float32", "device": "cpu", **meta,
                                               "witness_origin": origin})


def _own_reference(attempt: Attempt, name: str, model_path: str, texts: list[str]) -> np.ndarray:
    """The fp32 reference of the model a server of another model serves (sentence-transformers on the CPU), captured
    once per attempt under reference/<name>/."""
    path = f"reference/{name}/doc_vectors.npy"
    if not attempt.has(path):
        attempt.write_array(path, golden_reference(model_path, texts))
        attempt.write_json(f"reference/{name}/meta.json", {"implementation": "sentence-transformers batch",
                                                          "model": model_path, "dtype": "float32", "device": "cpu"})
    return attempt.read_array(path)


def _engine_witness(experiment: Experiment) -> bool:
    """``parity.engine_witness``: ``auto`` is on where a target runs on vLLM (its own kind or Dynamo's worker) and
    the engine environment is there; ``true`` runs it regardless (a missing engine is then a named witness failure)."""
    from embedswap.paths import engine_python

    asked = experiment.parity.engine_witness
    if asked == "auto":
        return (any(target.kind in ("vllm", "dynamo") for target in experiment.targets.values())
                and Path(engine_python()).exists())
    return bool(asked)


def _reference_name(attempt: Attempt) -> str:
    meta = attempt.read_json("reference/meta.json") if attempt.has("reference/meta.json") else {}
    return str(meta.get("implementation") or "sentence-transformers")


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
        "rows": [], "pass": None, "not_run": [], "not_asked": not_asked, **why_fields("parity_nothing_gated"),
        "thresholds": {"text": experiment.parity.text_threshold,
                       "multimodal": experiment.parity.multimodal_threshold},
        "multimodal": {"measured": False, "records": 0, "threshold": experiment.parity.multimodal_threshold,
                       **why_fields("parity_nothing_gated")},
        "reference": None,
    }
    if attempt.has("parity/rows.json"):
        return attempt.read_json("parity/rows.json")
    attempt.write_json("parity/rows.json", result)
    attempt.mark_step("parity", "skipped", detail="nothing to gate: no target captured document vectors")
    return result
