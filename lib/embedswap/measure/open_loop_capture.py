"""Step 01/02's open-loop rate sweep against one server (``latency.open_loop``), after its closed-loop points.

Writes ``<target>/open_loop_requests.jsonl`` (every request: schedule, send, answer, status, Retry-After, the
cosine of its vectors to the legacy capture) and ``<target>/open_loop_runs.json`` (the rates as run, each run's
wall time and seed, the configuration). The figures and the capacity are computed from these in the summary.

With ``workers > 1`` each run is split across Ray workers (:mod:`embedswap.measure.open_loop_workers`); each
request records its worker, and a run whose worker was lost records which (``lost_workers``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from tqdm import tqdm

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.load import LoadSpec, run_sync
from embedswap.measure.open_loop import build_requests, plan, records_json, send_planned
from embedswap.measure.open_loop_stats import misses, run_figures
from embedswap.measure.open_loop_workers import SenderPool, SendSettings, run_split
from embedswap.measure.workload import Workload
from embedswap.targets.base import Target


def legacy_reference(experiment: Experiment, attempt: Attempt, workload: Workload,
                     doc_ids: set[str]) -> dict[str, np.ndarray] | None:
    """The legacy server's vectors (first repeat of its workload capture) of these documents; None when the
    legacy server's workload was not captured in this attempt (goodput is then not gated on correctness)."""
    relative = f"{experiment.legacy}/doc_vectors.npy"
    if not attempt.has(relative):
        return None
    stack = attempt.read_array(relative, mmap=True)
    index = workload.doc_index()
    return {i: np.asarray(stack[0, index[i]], dtype=np.float64) for i in doc_ids if i in index}


def _seed(base: int, repeat: int, step: int) -> int:
    return base + 1000 * repeat + step


@contextmanager
def _senders(ol: Any, settings: SendSettings, attempt: Attempt, prefix: str,
             make_pool: Callable[[SendSettings], SenderPool] | None) -> Iterator[SenderPool | None]:
    """None: this process sends (one worker); else the pool ``make_pool`` makes, or Ray workers for the step."""
    if ol.workers == 1:
        yield None
        return
    if make_pool is not None:
        yield make_pool(settings)
        return
    from embedswap.measure.ray_pool import ray_pool

    attempt.logs.mkdir(parents=True, exist_ok=True)
    with ray_pool(ol.workers, ol.ray_address, settings, log=attempt.logs / f"{prefix}.ray.log") as made:
        yield made


def capture_open_loop(target: Target, experiment: Experiment, workload: Workload, attempt: Attempt,
                      prefix: str, make_pool: Callable[[SendSettings], SenderPool] | None = None) -> None:
    """Each rate (a list, or an ``auto`` ramp found in the first repeat), ``repeats`` times; with ``workers > 1``
    split across the pool ``make_pool`` makes (default: Ray workers for the step)."""
    cfg = experiment.latency
    ol = cfg.open_loop
    if ol is None:
        return
    batches = [[(d.id, d.text) for d in batch] for batch in workload.latency_batches(cfg.sample)]
    requests = build_requests(batches, experiment.model.served_name, target.api_shape(), ol.documents)
    spec = LoadSpec(base_url=target.base_url, model=experiment.model.served_name, batches=[], timeout_s=cfg.timeout_s,
                    headers=target.headers(), verify_tls=target.verify_tls(),
                    embeddings_path=target.embeddings_path(), api_shape=target.api_shape())
    reference = legacy_reference(experiment, attempt, workload, {i for r in requests for i in r.doc_ids})
    gate = experiment.parity.text_threshold
    margin = experiment.decisions.margins.error_rate
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    ramp: list[dict[str, Any]] = []

    settings = SendSettings(spec, requests, reference, cfg.retry_after, ol.max_in_flight)

    def one(rate: float, repeat: int, step: int) -> dict[str, Any]:
        n = ol.requests_at(rate)
        seed = _seed(ol.seed, repeat, step)
        pick = _picks(len(requests), n, seed) if ol.documents == "workload" else None
        planned = plan(requests, rate, repeat, n, arrival=ol.arrival, burstiness=ol.burstiness, seed=seed, pick=pick)
        lost: dict[str, str] = {}
        if senders is None:
            wall = run_sync(send_planned(spec, requests, planned, retry_after=cfg.retry_after,
                                         max_in_flight=ol.max_in_flight, reference=reference))
            records = [record for record, _ in planned]
        else:
            merged = run_split(senders, planned)
            records, wall, lost = merged.records, merged.wall_s, merged.lost
        stored = records_json(records)
        rows.extend(stored)
        run = {"rate": rate, "repeat": repeat, "requests": n, "seed": seed, "wall_s": round(wall, 6)}
        if senders is not None:
            run.update(workers=senders.workers, lost_workers=lost)
        runs.append(run)
        return run_figures(stored, rate, slo_p99_ms=ol.slo.p99_ms, gate=gate, max_lag_ms=ol.max_lag_ms, lost=lost)

    with _senders(ol, settings, attempt, prefix, make_pool) as senders:
        rates = _rates(ol, one, ramp, margin) if ol.rates == "auto" else sorted(ol.rates)
        first = 0 if ol.rates != "auto" else 1  # the ramp was the first repeat
        total = len(rates) * (ol.repeats - first)
        with tqdm(total=total, desc=f"{prefix}: open loop", leave=False, mininterval=1.0) as progress:
            for repeat in range(first, ol.repeats):
                for step, rate in enumerate(rates):
                    if not target.alive():
                        break
                    one(rate, repeat, step)
                    progress.update(1)
    attempt.write_jsonl(f"{prefix}/open_loop_requests.jsonl", rows)
    attempt.write_json(f"{prefix}/open_loop_runs.json", {
        "rates": rates, "runs": runs, "ramp": ramp, "reference": reference is not None, "gate": gate,
        "retry_after": cfg.retry_after, "config": ol.model_dump(mode="json"),
    })


def _rates(ol: Any, one: Any, ramp: list[dict[str, Any]], margin: float) -> list[float]:
    """``rates: auto`` in the first repeat: ``start``, times ``factor`` while the target is met (at most
    ``max_steps``), then the geometric middle of the last rate met and the first one missed."""
    rate = ol.auto.start
    met: float | None = None
    missed: float | None = None
    tried: list[float] = []
    for step in range(ol.auto.max_steps):
        figures = one(rate, 0, step)
        why = misses(figures, ol.slo.p99_ms, ol.slo.p50_ms, margin)
        ramp.append({"rate": rate, "misses": why})
        tried.append(rate)
        if why:
            missed = rate
            break
        met = rate
        rate = round(rate * ol.auto.factor, 6)
    if met is not None and missed is not None and "invalid" not in (ramp[-1]["misses"] or []):
        middle = round(math.sqrt(met * missed), 6)
        one(middle, 0, len(tried))
        ramp.append({"rate": middle, "misses": None})
        tried.append(middle)
    return sorted(tried)


def _picks(count: int, n: int, seed: int) -> list[int]:
    """``documents: workload``: which batch each request sends, drawn with the run's seed."""
    return [int(i) for i in np.random.default_rng(seed).integers(0, count, size=n)]
