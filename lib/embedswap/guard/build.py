"""``embedswap guard init``: a guard made from an accepted attempt's captures, never from a new measurement.

Accepted: the target's capture step finished complete and every capture file still matches the attempt's manifest.
The reference vectors are the ones the attempt captured (the first repeat of the workload, the queries plain and
client-prefixed, the first vector of each probe's answer); the tolerances come from the experiment's margins and
from how much the server's own answers moved inside the attempt (repeats, a document alone and in a batch).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from embedswap import __version__
from embedswap.stats.vectors import UNIT_NORM_TOLERANCE
from embedswap.captures import Attempt, capture_complete, open_attempt, verify_attempt
from embedswap.config.experiment import Experiment, load_experiment
from embedswap.guard.canaries import select
from embedswap.guard.guard_file import (
    Canary,
    ContractCanary,
    Guard,
    Latency,
    Server,
    Source,
    Tolerance,
    Tolerances,
    pack_arrays,
)
from embedswap.wire.api_shapes import EMBEDDINGS_PATHS, HEALTH_PATHS, shaped_request
from embedswap.measure.contract import (
    ProbeContext,
    build_request,
    describe_body,
    select_probes,
)
from embedswap.measure.tokens import query_with_instruction
from embedswap.measure.workload import Workload, load_workload

# Below this, a worst-canary 1 - cosine is numeric noise of fp32 kernels (a batch of 1 against a batch of 8 on the
# same server: 1e-7..1e-6 here); bf16 and fp16 weights move the worst canary by 1e-5..1e-3, a pooling change by 1e-2+.
DIRECTION_FLOOR = 1e-5
# the relative norm change below which a length is the same (a scaling proxy or a dropped normalisation is >= 1e-2)
LENGTH_FLOOR = 1e-4
# how far above the noise the attempt saw in the server's own repeated answers a canary may move
NOISE_FACTOR = 10.0
# probes resent by every guard when the attempt ran them: what a migration's clients depend on
PROBE_REASONS = {"plain": "the reference request", "input_type_query": "the query instruction",
                 "instruction_field": "the query instruction", "dimensions_native": "dimensions",
                 "dimensions_reduced": "dimensions", "over_long_input": "the longest input",
                 "batch8_member": "a document inside a batch"}
# never resent: 512 inputs cost seconds; token ids need the tokenizer, which the check does not load
SKIPPED_PROBES = {"large_batch", "token_ids"}


class GuardBuildError(ValueError):
    """The attempt cannot give a guard (not accepted, the target not captured, the workload changed)."""


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denominator = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, np.sum(a * b, axis=-1) / denominator, np.nan)


def accepted_attempt(folder: Path, name: str, target: str) -> Attempt:
    attempt = open_attempt(folder, name or "latest")
    if not capture_complete(attempt, target):
        status = attempt.step_status(f"capture:{target}") or "absent"
        raise GuardBuildError(f"attempt {attempt.name}: target '{target}' was not captured completely "
                              f"(capture:{target} is {status}); a guard is made from an accepted attempt")
    problems = verify_attempt(attempt)
    if problems:
        raise GuardBuildError(f"attempt {attempt.name}: captures changed since they were written ({problems[0]}"
                              f"{f' and {len(problems) - 1} more' if len(problems) > 1 else ''}); "
                              "`embedswap verify` lists them")
    return attempt


def _check_rows(attempt: Attempt, target: str, workload: Workload) -> None:
    """The captured rows are the workload's documents in file order; a workload edited since would misalign them."""
    records = [r for r in attempt.read_jsonl(f"{target}/workload_requests.jsonl") if r.get("repeat") == 0]
    captured = [d for r in sorted(records, key=lambda r: r["batch"]) for d in r["doc_ids"]]
    if captured != [d.id for d in workload.documents]:
        raise GuardBuildError(f"attempt {attempt.name}: the workload's documents are not the ones captured (edited "
                              "since the attempt?); make the guard from an attempt of the current workload")


def _probe_bodies(experiment: Experiment, workload: Workload, dim: int,
                  server: Server) -> dict[str, tuple[bytes, dict | None, dict[str, Any]]]:
    """Each probe's request rebuilt from the catalogue (the capture keeps a shortened copy of long inputs), with the
    description the capture recorded of it in the target's shape, to check that the rebuild is what was sent."""
    ctx = ProbeContext(doc=workload.documents[0].text, docs8=[d.text for d in workload.documents[:8]],
                       query=workload.queries[0].text if workload.queries else workload.documents[1].text,
                       task=experiment.model.query_task, model=experiment.model.served_name, native_dim=dim)
    out = {}
    for spec in select_probes(experiment.contract.probes, experiment.contract.custom):
        raw, body = build_request(spec, ctx)
        sent, _, why_not = shaped_request(spec, raw, body, server.api_shape, server.embeddings_path,
                                          experiment.model.served_name)
        if why_not is None:
            out[spec.name] = (raw, body, describe_body(json.loads(sent) if body is not None else None, sent))
    return out


def _contract(attempt: Attempt, experiment: Experiment, workload: Workload, target: str, dim: int,
              margin: float) -> tuple[list[ContractCanary], list[np.ndarray], list[float]]:
    """The probes that mattered in the attempt, with their answers; and the noise the probes show (1 - cosine of a
    document alone against the same document in a batch)."""
    records = attempt.read_jsonl(f"{target}/probes.jsonl") if attempt.has(f"{target}/probes.jsonl") else []
    legacy_name = experiment.legacy
    legacy = {}
    if legacy_name != target and attempt.has(f"{legacy_name}/probes.jsonl"):
        legacy = {r["probe"]: r for r in attempt.read_jsonl(f"{legacy_name}/probes.jsonl")}
    bodies = _probe_bodies(experiment, workload, dim, _server(experiment, attempt, target))
    canaries: list[ContractCanary] = []
    rows: list[np.ndarray] = []
    for record in records:
        name = record["probe"]
        if record.get("not_applicable") or name in SKIPPED_PROBES or name not in bodies:
            continue
        raw, body, described = bodies[name]
        if described != record.get("sent"):
            continue  # the catalogue says something else than was sent then (a custom probe changed): not resent
        why = PROBE_REASONS.get(name)
        theirs = legacy.get(name)
        if why is None and theirs is not None:
            if theirs.get("status") != record.get("status"):
                why = f"answered {record.get('status')} where {legacy_name} answered {theirs.get('status')}"
            elif record.get("vector") and theirs.get("vector") and \
                    1 - float(_cosines(np.array(record["vector"]), np.array(theirs["vector"]))) > margin:
                why = f"a vector other than {legacy_name}'s"
        if why is None:
            continue
        vector = record.get("vector")
        row = None
        if vector is not None:
            row = len(rows)
            rows.append(np.asarray(vector, dtype=np.float32))
        canaries.append(ContractCanary(
            probe=name, why=why, path=record.get("path") or EMBEDDINGS_PATHS["openai"], body=body,
            raw_body=raw.decode("utf-8") if body is None else None, status=int(record.get("status") or 0),
            dim=record.get("dim"), norm=None if vector is None else float(np.linalg.norm(vector)), row=row))
    by_name = {r["probe"]: r for r in records}
    noise = []
    plain, member = by_name.get("plain", {}).get("vector"), by_name.get("batch8_member", {}).get("vector")
    if plain is not None and member is not None:
        noise.append(1 - float(_cosines(np.array(plain), np.array(member))))
    return canaries, rows, noise


def _queries(attempt: Attempt, experiment: Experiment, workload: Workload, target: str,
             size: int) -> list[tuple[Canary, np.ndarray]]:
    if not workload.queries or size <= 0 or not attempt.has(f"{target}/query_vectors_plain.npy"):
        return []
    picks = select([q.text for q in workload.queries], [q.lang for q in workload.queries], size)
    variants = [("query", "plain", lambda t: t)]
    prefixed = [query_with_instruction(experiment, q.text) for q in workload.queries]
    if attempt.has(f"{target}/query_vectors_client_prefixed.npy") and prefixed != [q.text for q in workload.queries]:
        variants.append(("query_prefixed", "client_prefixed", lambda t: query_with_instruction(experiment, t)))
    out = []
    for kind, variant, text_of in variants:
        vectors = attempt.read_array(f"{target}/query_vectors_{variant}.npy")
        for pick in picks:
            query = workload.queries[pick.index]
            text = text_of(query.text)
            out.append((Canary(id=f"{kind}:{query.id}", kind=kind, lang=query.lang, text=text,  # type: ignore[arg-type]
                               utf8_bytes=len(text.encode()), why=pick.why, row=0), vectors[pick.index]))
    return out


def _tolerances(experiment: Experiment, direction_noise: float, length_noise: float) -> Tolerances:
    margins = experiment.decisions.margins
    direction = min(margins.cosine, max(DIRECTION_FLOOR, NOISE_FACTOR * direction_noise))
    length = min(UNIT_NORM_TOLERANCE, max(LENGTH_FLOOR, NOISE_FACTOR * length_noise))
    return Tolerances(
        direction=Tolerance(value=direction, derived_from=(
            f"max({DIRECTION_FLOOR:g}, {NOISE_FACTOR:g} x the attempt's own noise {direction_noise:.2e}), "
            f"at most decisions.margins.cosine {margins.cosine:g}")),
        length=Tolerance(value=length, derived_from=(
            f"max({LENGTH_FLOOR:g}, {NOISE_FACTOR:g} x the attempt's own norm noise {length_noise:.2e}), "
            f"at most the kit's unit-norm tolerance {UNIT_NORM_TOLERANCE:g}")),
        latency_p50_ratio=Tolerance(value=margins.latency_p50_ratio,
                                    derived_from="decisions.margins.latency_p50_ratio (a warning only)"))


def _server(experiment: Experiment, attempt: Attempt, target: str) -> Server:
    config = experiment.targets[target]
    shape = getattr(config, "api_shape", "openai")
    described: dict[str, Any] = attempt.read_json(f"{target}/target.json")
    health = getattr(config, "health_path", None) or HEALTH_PATHS[shape]
    return Server(kind=config.kind, version=described.get("version"), served_name=experiment.model.served_name,
                  api_shape=shape, embeddings_path=getattr(config, "embeddings_path", None) or EMBEDDINGS_PATHS[shape],
                  models_path=health if health.endswith("/models") else None, identity=described.get("identity"))


def build_guard(folder: Path, attempt_name: str = "", target: str | None = None, documents: int = 64,
                queries: int = 32) -> Guard:
    experiment = load_experiment(folder)
    target = target or experiment.primary_candidate
    if target not in experiment.targets:
        raise GuardBuildError(f"--target '{target}': not a target of {folder.name} "
                              f"(known: {', '.join(experiment.target_order())})")
    attempt = accepted_attempt(folder, attempt_name, target)
    workload = load_workload(experiment, folder)
    if not attempt.has(f"{target}/doc_vectors.npy"):
        raise GuardBuildError(f"attempt {attempt.name}: target '{target}' has no workload vectors "
                              "(its capture list left out the workload)")
    _check_rows(attempt, target, workload)
    stack = attempt.read_array(f"{target}/doc_vectors.npy")
    reference = stack[0]
    # the server's own noise inside the attempt: every repeat against the first
    direction_noise = max([0.0] + [float(np.nanmax(1 - _cosines(reference, stack[r]))) for r in range(1, len(stack))])
    norms = np.linalg.norm(stack.astype(np.float64), axis=-1)
    length_noise = float(np.max(np.abs(norms / norms[0] - 1))) if len(stack) > 1 else 0.0

    picks = select([d.text for d in workload.documents], [d.lang for d in workload.documents], documents)
    items: list[tuple[Canary, np.ndarray]] = [
        (Canary(id=f"document:{workload.documents[p.index].id}", kind="document",
                lang=workload.documents[p.index].lang, text=workload.documents[p.index].text,
                utf8_bytes=len(workload.documents[p.index].text.encode()), why=p.why, row=0), reference[p.index])
        for p in picks]
    items += _queries(attempt, experiment, workload, target, queries)
    canaries = [c.model_copy(update={"row": i}) for i, (c, _) in enumerate(items)]
    margins = experiment.decisions.margins
    contract, contract_rows, probe_noise = _contract(attempt, experiment, workload, target, reference.shape[1],
                                                     margins.cosine)
    stats = attempt.read_json(f"{target}/latency_stats.json") if attempt.has(f"{target}/latency_stats.json") else {}
    p50 = (stats.get("sequential") or {}).get("p50_ms")
    return Guard(
        source=Source(experiment=folder.name, attempt=attempt.name, target=target,
                      manifest_sha256=hashlib.sha256((attempt.path / "manifest.json").read_bytes()).hexdigest(),
                      kit_version=__version__, created=datetime.now(UTC).isoformat(timespec="seconds")),
        server=_server(experiment, attempt, target),
        tolerances=_tolerances(experiment, max([direction_noise, *probe_noise]), length_noise),
        latency=Latency(p50_ms=p50, requests_of=experiment.workload.batch_size,
                        source=f"{target}/latency_stats.json sequential p50" if p50 is not None else "not measured"),
        batch_size=experiment.workload.batch_size,
        canaries=canaries, contract=contract,
        # a probe's vector may have another size (`dimensions`): one array each
        arrays=pack_arrays(canaries=np.stack([v for _, v in items]).astype(np.float32),
                           **{f"contract_{i}": v for i, v in enumerate(contract_rows)}),
    )
