"""Measuring one server while it is up: workload vectors, queries, contract probes, latency runs.

Because the swap happens on the same hardware (the legacy server is stopped before the candidate starts), every
measurement of a server is taken during its one up-time, and written as raw captures under
``captures/<target>/``. Steps 03-05 then only read captures, so any of them can be rerun alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm  # text bars: they show both in JupyterLab and in the papermill console log

from embedswap.captures import ArrayStream, Attempt
from embedswap.wire.client import EmbeddingClient, EmbeddingResponse
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import build_request, run_context, describe_body, select_probes
from embedswap.targets import build_target
from embedswap.wire.api_shapes import shaped_request
from embedswap.measure.tokens import probe_token_counter, query_with_instruction
from embedswap.measure.workload import Workload, load_workload
# the failure, the latency runs and the shim probes live in their own modules; `embedswap.measure.capture.X` stays
from embedswap.measure.errors import StepFailed
from embedswap.model_limits import token_limit
from embedswap.measure.identity import server_identity
from embedswap.answers.repeats import probe_times, repeat_answer
from embedswap.measure.shim_probes import capture_shim_probes
from embedswap.measure.server_tokens import capture_server_tokens
from embedswap.measure.server_metrics import cache_use, read_prefix_cache
from embedswap.measure.long_input import capture_long_input, probed


def capture_workload(client: EmbeddingClient, workload: Workload, attempt: Attempt, prefix: str, repeats: int) -> None:
    """The documents in their batches, ``repeats`` times: vectors (repeat, doc, dim) and per-request records.

    The vectors stream into a memory-mapped .npy beside the capture as the answers come (``Attempt.array_stream``),
    so memory stays bounded at any corpus size; only complete repeats are kept, and the file appears whole or not
    at all."""
    records: list[dict[str, Any]] = []
    n = len(workload.documents)
    stream: ArrayStream | None = None
    kept = 0  # complete repeats written so far (a failed repeat's slot is reused by the next one)
    failures = 0
    try:
        for repeat in tqdm(range(repeats), desc=f"{prefix}: workload", leave=False, mininterval=1.0):
            filled, complete = 0, True
            for batch_index, batch in enumerate(workload.batches()):
                answer = client.embed([d.text for d in batch])
                record = {"repeat": repeat, "batch": batch_index, "doc_ids": [d.id for d in batch], **answer.record()}
                records.append(record)
                rows = _rows(answer, len(batch))
                if rows is not None and stream is None:
                    stream = attempt.array_stream(f"{prefix}/doc_vectors.npy", (repeats, n, rows.shape[1]))
                if rows is None or stream is None or rows.shape[1] != stream.array.shape[2]:  # type: ignore[union-attr]
                    failures += 1
                    complete = False
                    continue
                if complete:
                    stream[kept, filled : filled + len(batch)] = rows
                filled += len(batch)
            if complete and filled == n:
                kept += 1
        attempt.write_jsonl(f"{prefix}/workload_requests.jsonl", records)
        if stream is not None and kept == repeats:
            stream.commit()
        elif stream is not None and kept:  # some repeats failed: a smaller stack of the complete ones
            with attempt.array_stream(f"{prefix}/doc_vectors.npy", (kept, *stream.array.shape[1:])) as smaller:
                for r in range(kept):
                    smaller[r] = stream[r]
                smaller.commit()
    finally:
        if stream is not None and stream.array is not None:  # not committed: the temp file goes
            stream.abort()
    reordered = sum(1 for r in records if r.get("index_order_ok") is False)
    if failures or reordered:
        found = [f"{failures} workload request(s) failed"] if failures else []
        if reordered:  # the vectors are right (re-sorted by index); a client reading data[] by position is not
            found.append(f"data[].index out of order in {reordered} of {len(records)} answers")
        raise StepFailed(f"{'; '.join(found)}; see {prefix}/workload_requests.jsonl")


def _rows(answer: EmbeddingResponse, expected: int) -> np.ndarray | None:
    """The answer's vectors as float32 rows, or None when it failed or has not one vector per input."""
    if not answer.ok or answer.vectors is None or len(answer.vectors) != expected or expected == 0:
        return None
    try:
        rows = np.asarray(answer.vectors, dtype=np.float32)
    except ValueError:  # vectors of different lengths in one answer
        return None
    return rows if rows.ndim == 2 else None


QUERY_BATCH = 256  # queries per request: the demo's query set stays one request, thousands are cut in batches


def capture_queries(client: EmbeddingClient, experiment: Experiment, workload: Workload, attempt: Attempt,
                    prefix: str) -> None:
    """Queries embedded three ways: plain, with the server-side instruction field, and client-prefixed.

    Sent in requests of up to :data:`QUERY_BATCH` queries (a corpus-scale query set is thousands), streamed to
    ``query_vectors_<variant>.npy``; one record per variant sums the requests (``requests``: how many)."""
    if not workload.queries:
        return
    texts = [q.text for q in workload.queries]
    variants = {
        "plain": (texts, {}),
        "server_instruction": (texts, {"input_type": "query"}),
        "client_prefixed": ([query_with_instruction(experiment, t) for t in texts], {}),
    }
    records = []
    for variant, (inputs, fields) in variants.items():
        answers: list[dict[str, Any]] = []
        stream: ArrayStream | None = None
        ok = True
        try:
            for start in range(0, len(inputs), QUERY_BATCH):
                chunk = inputs[start : start + QUERY_BATCH]
                answer = client.embed(chunk, **fields)
                answers.append(answer.record())
                rows = _rows(answer, len(chunk))
                if rows is not None and stream is None:
                    stream = attempt.array_stream(f"{prefix}/query_vectors_{variant}.npy", (len(inputs), rows.shape[1]))
                if rows is None or stream is None or rows.shape[1] != stream.array.shape[1]:  # type: ignore[union-attr]
                    ok = False
                    break  # the variant failed: its vectors are not kept, the failing answer is recorded
                stream[start : start + len(chunk)] = rows
            if ok and stream is not None:
                stream.commit()
        finally:
            if stream is not None and stream.array is not None:
                stream.abort()
        records.append({"variant": variant, "fields": fields, **_combined(answers)})
    attempt.write_jsonl(f"{prefix}/query_requests.jsonl", records)


def _combined(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """One record for a variant's requests: the first failing answer (else the last) with the summed figures."""
    if len(answers) == 1:
        return answers[0]
    failed = [a for a in answers if a.get("status") != 200 or a.get("error")]
    out = dict(failed[0] if failed else answers[-1])
    tokens = [a.get("prompt_tokens") for a in answers]
    out.update(prompt_tokens=None if None in tokens else sum(tokens),  # type: ignore[arg-type]
               latency_ms=round(sum(a.get("latency_ms") or 0 for a in answers), 3),
               n_vectors=sum(a.get("n_vectors") or 0 for a in answers), requests=len(answers),
               indices=None, index_order_ok=all(a.get("index_order_ok") is not False for a in answers))
    return out


def capture_probes(client: EmbeddingClient, experiment: Experiment, workload: Workload, attempt: Attempt,
                   prefix: str, model_path: str) -> None:
    limit = token_limit(model_path)  # the model's own, from its configuration
    ctx = run_context(experiment, workload, client.embed([workload.documents[0].text]), model_path)
    count = probe_token_counter(experiment, model_path)
    count_whole = probe_token_counter(experiment, model_path, whole=True)
    records = []
    for spec in tqdm(select_probes(experiment.contract.probes, experiment.contract.custom),
                     desc=f"{prefix}: probes", leave=False, mininterval=1.0):
        raw, body = build_request(spec, ctx)
        sent, route, why_not = shaped_request(spec, raw, body, client.api_shape, client.embeddings_path,
                                              experiment.model.served_name)
        if why_not is not None:  # the target's API shape cannot say this probe: nothing sent, not a failure
            records.append({"probe": spec.name, "description": spec.description, "path": spec.path,
                            **({"compare_to": spec.compare_to} if spec.compare_to else {}),
                            "sent": describe_body(body, raw), "status": None, "not_applicable": True,
                            "api_shape": client.api_shape, "not_applicable_field": why_not, "vector": None})
            continue
        # a probe that is about repeating itself (same_text_twice) reads the prefix cache's counters around it
        cache_before = read_prefix_cache(client) if spec.repeats else None
        answer = client.post_raw(sent, path=route)
        vector = answer.vectors[0] if answer.ok and answer.vectors else None
        times = probe_times(spec, experiment.contract)
        repeats = [repeat_answer(again.record(), again.vectors[0] if again.ok and again.vectors else None)
                   for again in (client.post_raw(sent, path=route) for _ in range(times - 1))]
        cache = cache_use(cache_before, read_prefix_cache(client)) if cache_before is not None else None
        records.append({
            "probe": spec.name,
            "description": spec.description,
            "path": spec.path,
            **({"sent_path": route} if route != spec.path else {}),
            **({"compare_to": spec.compare_to} if spec.compare_to else {}),
            "sent": describe_body(json.loads(sent) if body is not None else None, sent),
            **answer.record(),
            "tokenizer_tokens": count(body),
            # the input uncut, and the model's limit: usage is checked against truncation (measure.request_checks)
            "input_tokens": count_whole(body),
            "token_limit": limit,
            "vector": vector,
            **({"repeats": repeats} if repeats else {}),  # the same request again (measure.repeats)
            **({"prefix_cache": cache} if cache is not None else {}),  # tokens served from the server's cache
        })
    attempt.write_jsonl(f"{prefix}/probes.jsonl", records)


def capture_target_latency(target: Any, experiment: Experiment, workload: Workload, attempt: Attempt,
                           prefix: str) -> None:
    """A server's latency phase; a candidate under ``sequencing.interleave`` is measured in blocks alternating
    with the legacy server, started beside it for the phase (its runs under ``<candidate>/paired_legacy``)."""
    # imported where a latency phase runs: the harness loads aiohttp (~0.1 s), and every notebook's kernel imported
    # this module (embedswap.steps) where only steps 01 and 02 measure (issue 61)
    from embedswap.measure.latency import capture_latency

    if not experiment.sequencing.interleave or prefix not in experiment.candidates:
        capture_latency(target, experiment, workload, attempt, prefix)
        return
    with build_target(experiment, experiment.legacy, attempt.logs) as legacy:
        capture_latency(target, experiment, workload, attempt, prefix, paired=legacy)


def measure_target(experiment: Experiment, experiment_dir: Path, attempt: Attempt, name: str,
                   step: str) -> dict[str, Any]:
    """Start one target, capture everything about it, stop it. Returns its description (also captured)."""
    from embedswap.measure.open_loop_capture import capture_open_loop  # aiohttp: see capture_target_latency

    workload = load_workload(experiment, experiment_dir)
    prefix = name
    if attempt.has(f"{prefix}/target.json"):
        raise StepFailed(f"attempt {attempt.name} already has captures for '{name}'; captures are never "
                         "overwritten: run with attempt='new'")
    target = build_target(experiment, name, attempt.logs)
    attempt.mark_step(step, "running", target=name)
    problems: list[str] = []
    description: dict[str, Any] = {}
    part_seconds: dict[str, float] = {}
    started = time.time()
    try:
        with target:
            description = target.describe()
            with EmbeddingClient(target.base_url, experiment.model.served_name, experiment.latency.timeout_s,
                                 target.headers(), target.verify_tls(), embeddings_path=target.embeddings_path(),
                                 api_shape=target.api_shape(), models_path=target.models_path()) as client:
                parts = [
                    ("workload", lambda: capture_workload(client, workload, attempt, prefix,
                                                          experiment.workload.repeats)),
                    ("queries", lambda: capture_queries(client, experiment, workload, attempt, prefix)),
                    ("probes", lambda: capture_probes(client, experiment, workload, attempt, prefix,
                                                      target.model_path)),
                    # the same probes through the client migration shim (candidates only; it learns from the above)
                    ("probes", lambda: capture_shim_probes(target.base_url, experiment, workload, attempt, prefix,
                                                           target.model_path, headers=target.headers(),
                                                           verify_tls=target.verify_tls(),
                                                           embeddings_path=target.embeddings_path(),
                                                           api_shape=target.api_shape())),
                    # how the server tokenizes the documents (its tokenize route, else one-text usage): diagnosis
                    ("probes", lambda: capture_server_tokens(client, workload, attempt, prefix, target.headers(),
                                                             target.verify_tls())),
                    # an input over the model's limit: refused, truncated or averaged over pieces (with the probes)
                    ("probes", lambda: capture_long_input(client, workload, attempt, prefix, target.model_path)
                     if probed(experiment) else None),
                    ("latency", lambda: capture_target_latency(target, experiment, workload, attempt, prefix)),
                    # after the closed-loop points: the open-loop rate sweep (latency.open_loop; off unless set)
                    ("latency", lambda: capture_open_loop(target, experiment, workload, attempt, prefix)),
                ]
                for part, run in parts:
                    if part not in target.config.capture:
                        continue
                    if not target.alive():
                        problems.append(f"{part}: skipped, the server process had exited")
                        continue
                    part_started = time.monotonic()
                    try:
                        run()
                    except StepFailed as exc:
                        problems.append(f"{part}: {exc}")
                    finally:  # the report's time table: how long each part of the capture took on this server
                        spent = part_seconds.get(part, 0.0) + time.monotonic() - part_started
                        part_seconds[part] = round(spent, 3)
                # what it says about itself, asked last so its one request does not shift the measured sequence
                # (a server that fails from its Nth request fails at the same request with or without it); only an
                # external target can say it has no GET routes (health_check)
                if "probes" in target.config.capture and target.alive():
                    description["identity"] = server_identity(client, workload.documents[0].text,
                                                              get_routes=getattr(target.config, "health_check", True))
            if not target.alive():  # crashed or killed mid-run: say so, not only "requests failed"
                codes = {p.name: p.exit_code() for p in target.processes}
                problems.append(f"server: the process exited during the measurement (exit code {codes}); "
                                f"see logs/{name}.log")
            description["rss_bytes_end"] = target.rss_bytes()
            description["alive_at_end"] = target.alive()
    except BaseException as exc:
        attempt.mark_step(step, "failed", target=name, error=f"{type(exc).__name__}: {exc}"[:2000])
        attempt.write_json(f"{prefix}/target.json", {**(description or {"name": name}), "error": str(exc)[:2000]})
        raise
    description["measured_seconds"] = round(time.time() - started, 1)
    description["part_seconds"] = part_seconds
    description["problems"] = problems
    attempt.write_json(f"{prefix}/target.json", description)
    attempt.mark_step(step, "partial" if problems else "complete", target=name, problems=problems)
    return description
