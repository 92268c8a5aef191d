"""One open-loop run's figures from its captured requests, and whether it meets the latency target.

Latency percentiles are read over the answered requests (status 200, a usable body), from the scheduled send; the
errors are counted by status beside them (:func:`embedswap.stats.latency_equivalence.classify_status`), so a
server that sheds load cannot look fast on the few requests it answered. Goodput counts the requests answered
within the target whose vectors pass the gate against the legacy capture of the same documents.

A run split across workers (``worker`` on each request) keeps each worker's lag against its own part of the
schedule; when the run is invalid the worker that fell furthest behind is named, or the worker that was lost.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from embedswap.stats.latency_equivalence import classify_status
from embedswap.wire.answer_faults import fault_kind
from embedswap.measure.load_stats import percentile  # not measure.load: that imports aiohttp

# A rate is carried only when the answers come back at least at half the rate the client sent them: a short run
# above the knee ends before its queue has grown enough to push the p99 past the target, and only the answered rate
# shows that the server fell behind (half, not a tighter share: a run of a few Poisson arrivals drains its last
# answers after the schedule ends, which lowers the answered rate of a server that keeps up by a few tens of %).
CARRIED_SHARE = 0.5
LAG_QUANTILE = 90  # the client's lag is read at its p90: an OS stall of a few sends does not void a run, a backlog does


def _status_class(record: dict[str, Any]) -> str:
    """``ok``, the status class of a refusal (``429``, ``5xx``, another 4xx by code), or the fault's kind."""
    status = int(record.get("status") or 0)
    if status == 200 or status == 0:
        return fault_kind(status, record.get("error")) or "ok"
    return classify_status(status)


def wrong_vector(record: dict[str, Any], gate: float) -> bool:
    """A 200 whose vectors fail the gate: fewer or more than asked, other dimensions, or a cosine below it."""
    cosine = record.get("cosine_min")
    if cosine is not None:
        return float(cosine) < gate
    why = str(record.get("vector_error") or "")
    return bool(why) and not why.startswith("no legacy")


def worker_lags(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each worker's lag p90 against its own part of the schedule (empty for a run one process sent)."""
    by_worker: dict[int, list[float]] = {}
    for r in records:
        if r.get("worker") is not None and r.get("lag_ms") is not None:
            by_worker.setdefault(int(r["worker"]), []).append(float(r["lag_ms"]))
    return {str(k): float(percentile(v, LAG_QUANTILE) or 0.0) for k, v in sorted(by_worker.items())}


def run_figures(records: Sequence[dict[str, Any]], rate: float, *, slo_p99_ms: float, gate: float,
                max_lag_ms: float, lost: dict[str, str] | None = None) -> dict[str, Any]:
    """The figures of one run (one rate, one repeat), as the summary stores them. ``lost``: the workers of a
    split run that returned nothing (worker -> why); any makes the run invalid."""
    n = len(records)
    classes = Counter(_status_class(r) for r in records)
    answered = [r for r in records if _status_class(r) == "ok"]
    latencies = [float(r["latency_ms"]) for r in answered if r.get("latency_ms") is not None]
    service = [float(r["service_ms"]) for r in answered if r.get("service_ms") is not None]
    lags = [float(r["lag_ms"]) for r in records if r.get("lag_ms") is not None]
    sent = sorted(float(r["sent_s"]) for r in records if r.get("sent_s") is not None)
    done = [float(r["done_s"]) for r in records if r.get("done_s") is not None]
    span = (max(done) - sent[0]) if sent and done else None
    wrong = [r for r in answered if wrong_vector(r, gate)]
    unchecked = sum(1 for r in answered if str(r.get("vector_error") or "").startswith("no legacy"))
    late = [r for r in answered if r.get("latency_ms") is not None and float(r["latency_ms"]) > slo_p99_ms]
    good = sum(1 for r in answered if not wrong_vector(r, gate) and r.get("latency_ms") is not None
               and float(r["latency_ms"]) <= slo_p99_ms)
    shed = sum(1 for r in records if int(r.get("status") or 0) == 429 or int(r.get("retries") or 0) > 0)
    retried = [r for r in records if int(r.get("retries") or 0) > 0]
    waits = [float(r["retry_after_s"]) for r in records if r.get("retry_after_s") is not None]
    lag_p = percentile(lags, LAG_QUANTILE)
    by_worker = worker_lags(records)
    valid = lag_p is not None and lag_p <= max_lag_ms and not lost
    named = None
    if lost:
        named = int(sorted(lost, key=int)[0])
    elif not valid and by_worker:
        named = int(max(by_worker, key=lambda k: by_worker[k]))
    return {
        "rate": rate,
        "requests": n,
        "answered": len(answered),
        "statuses": dict(sorted(classes.items())),
        "sent_rate": (len(sent) - 1) / (sent[-1] - sent[0]) if len(sent) >= 2 and sent[-1] > sent[0] else None,
        "throughput": len(answered) / span if span else None,
        "goodput": good / span if span else None,
        "good": good,
        "late": len(late),
        "wrong_vectors": len(wrong),
        "unchecked_vectors": unchecked,
        "p50_ms": percentile(latencies, 50),
        "p90_ms": percentile(latencies, 90),
        "p99_ms": percentile(latencies, 99),
        "service_p50_ms": percentile(service, 50),
        "service_p99_ms": percentile(service, 99),
        "lag_p90_ms": lag_p,
        "valid": valid,
        "worker_lag_p90_ms": by_worker,
        "lost_workers": dict(lost or {}),
        "invalid_worker": named,
        "shed": shed,
        "shed_share": shed / n if n else 0.0,
        "retried": len(retried),
        "retry_wait_ms": statistics.fmean(float(r["retry_wait_ms"]) for r in retried) if retried else None,
        "retry_after_s": max(waits) if waits else None,
    }


def misses(figures: dict[str, Any], slo_p99_ms: float, slo_p50_ms: float | None, error_margin: float) -> list[str]:
    """Why a run does not meet the target (empty: it does): ``invalid`` (the client fell behind), ``errors``
    (failed requests above the error margin), ``wrong_vectors`` (likewise, for 200s that fail the gate),
    ``p99``, ``p50``, ``saturated`` (answered at under :data:`CARRIED_SHARE` of the rate sent), or
    ``no_answers``."""
    if not figures["valid"]:
        return ["invalid"]
    n = figures["requests"] or 1
    out = []
    if (n - figures["answered"]) / n > error_margin:
        out.append("errors")
    if figures["wrong_vectors"] / n > error_margin:
        out.append("wrong_vectors")
    if figures["p99_ms"] is None:
        return out + ["no_answers"]
    if figures["p99_ms"] > slo_p99_ms:
        out.append("p99")
    if slo_p50_ms is not None and figures["p50_ms"] is not None and figures["p50_ms"] > slo_p50_ms:
        out.append("p50")
    sent, answered = figures.get("sent_rate"), figures.get("throughput")
    if sent and answered is not None and answered < CARRIED_SHARE * sent:
        out.append("saturated")
    return out
