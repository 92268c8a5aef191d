"""The five steps as the notebooks call them. A notebook is its parameters cell, one call here, and tables.

01 legacy capture    start the legacy server, capture everything about it, stop it
02 swap deploy       (legacy is down) start each candidate in turn on the same host, capture, stop
03 vector/contract   read captures: vector diff and probe verdicts
04 latency           read captures: the two operating points, medians of the repeats
05 parity            golden fp32 reference vs every server's vectors; the gate

Every step ends by recomputing summary.json from the captures, so the summary is always current.

The run flow of steps 01/02 is here; the shared context is in :mod:`embedswap.steps.context`, the notebooks' tables
in :mod:`embedswap.steps.tables` and step 05 in :mod:`embedswap.steps.parity`. Every name the
notebooks and other modules import from ``embedswap.steps`` is still here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.captures import capture_complete
from embedswap.measure.capture import measure_target
from embedswap.steps.context import StepContext, StepError, find_experiment_dir, open_step
from embedswap.steps.parity import not_gated, run_parity
from embedswap.steps.plan import decide_plan, plan_table
from embedswap.steps.tables import (
    contract_table,
    instruction_table,
    long_input_table,
    latency_table,
    parity_table,
    require_captures,
    targets_table,
    vector_table,
)
from embedswap.pipeline.build import environment
from embedswap.measure.tokens import ensure_tokenizer_counts

__all__ = [
    "StepContext", "StepError", "capture_legacy", "contract_table", "decide_plan", "plan_table",
    "find_experiment_dir", "instruction_table", "long_input_table", "latency_table", "measure_or_resume", "measure_target",
    "not_gated", "open_step", "parity_table", "require_captures", "restore_legacy", "run_parity", "swap_deploy",
    "targets_table", "vector_table",
]


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


def _restore_latency(ctx: StepContext, target: Any, name: str) -> dict[str, Any]:
    """The restored legacy server's latency at the article's two points (A-B-A: the host's drift across the
    candidates), ``sequencing.restore_repeats`` times, into ``<legacy>/restore/``; a failed request is recorded,
    never fatal."""
    from embedswap.measure.errors import StepFailed
    from embedswap.measure.latency import capture_latency

    latency = ctx.experiment.latency.model_copy(
        update={"sweep": [], "repeats": ctx.experiment.sequencing.restore_repeats})
    experiment = ctx.experiment.model_copy(update={"latency": latency})
    try:
        capture_latency(target, experiment, ctx.workload, ctx.attempt, f"{name}/restore")
    except StepFailed as exc:
        return {"latency_capture": f"{name}/restore/latency_stats.json", "latency_error": str(exc)[:1000]}
    return {"latency_capture": f"{name}/restore/latency_stats.json"}


def restore_legacy(ctx: StepContext) -> dict[str, Any]:
    """Start the legacy server again after the swap and check it answers the first batch as it did in step 01."""
    from embedswap.wire.client import EmbeddingClient
    from embedswap.targets import build_target
    from embedswap.stats.vectors import rowwise_cosine

    name = ctx.experiment.legacy
    relative = f"{name}/restore.json"
    if ctx.attempt.has(relative):
        return ctx.attempt.read_json(relative)
    batch = ctx.workload.batches()[0]
    record: dict[str, Any] = {"target": name}
    try:
        with build_target(ctx.experiment, name, ctx.attempt.logs) as target:
            with EmbeddingClient(target.base_url, ctx.experiment.model.served_name, ctx.experiment.latency.timeout_s,
                                 target.headers(), target.verify_tls(), embeddings_path=target.embeddings_path(),
                                 api_shape=target.api_shape()) as client:
                answer = client.embed([d.text for d in batch])
            record.update(start_seconds=round(target.start_seconds or 0, 2), status=answer.status, error=answer.error)
            if answer.ok and ctx.attempt.has(f"{name}/doc_vectors.npy"):
                before = np.asarray(ctx.attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0][: len(batch)])
                record["cosine_to_step01_min"] = float(np.min(rowwise_cosine(before, answer.as_array())))
            if answer.ok and ctx.experiment.sequencing.restore_latency:
                record.update(_restore_latency(ctx, target, name))
        record["restored"] = record.get("status") == 200
    except Exception as exc:  # recorded, never fatal: the measurements are already captured
        record.update(restored=False, error=f"{type(exc).__name__}: {exc}"[:1000])
    ctx.attempt.write_json(relative, record)
    return record
