"""What the latency harness records per request and the statistics of a run and of an operating point (its
repeats): percentiles by numpy's ``linear`` method, throughput as documents over the run's wall time. Split from
:mod:`embedswap.measure.load`, which sends the requests and re-exports these names."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from embedswap.wire.answer_faults import fault_kind

PERCENTILE_METHOD = "linear"  # numpy's default; stated in the report so figures can be reproduced


@dataclass
class RequestRecord:
    run: str  # e.g. "sequential", "concurrent"
    repeat: int
    seq: int
    send_offset_s: float  # when it was sent (open loop: scheduled), from the run's start
    latency_ms: float
    status: int  # 0: no answer (connection error, timeout)
    docs: int
    prompt_tokens: int | None
    error: str | None = None
    retry_after: str | None = None  # the Retry-After header of a non-200 answer (a 429's wait), as sent

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


def status_class(status: int | None, error: str | None) -> str:
    """A request's outcome class: ``ok``, ``429``, ``5xx``, or the kind of its fault
    (:func:`embedswap.wire.answer_faults.fault_kind`: ``timeout``, ``cut_body``, ``wrong_length``, ...)."""
    if status == 200 and not error:
        return "ok"
    if status == 429:
        return "429"
    if isinstance(status, int) and 500 <= status <= 599:
        return "5xx"
    return fault_kind(status, error) or "ok"


@dataclass
class RunStats:
    """One run (one repeat at one operating point)."""

    requests: int
    errors: int
    error_rate: float
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    docs_per_s: float | None
    tokens_per_s: float | None
    wall_s: float


@dataclass
class PointStats:
    """One operating point over its repeats: medians of the per-repeat figures, and their spread."""

    run: str
    concurrency: int
    requests_per_repeat: int
    repeats: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    docs_per_s: float | None
    tokens_per_s: float | None
    errors: int
    error_rate: float
    spread: dict[str, list[float | None]] = field(default_factory=dict)  # per-repeat values, in repeat order

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q, method=PERCENTILE_METHOD)) if values else None


def run_stats(records: Sequence[RequestRecord], wall_s: float) -> RunStats:
    ok = [r for r in records if r.ok]
    latencies = [r.latency_ms for r in ok]
    errors = len(records) - len(ok)
    tokens = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    return RunStats(
        requests=len(records),
        errors=errors,
        error_rate=errors / len(records) if records else 0.0,
        p50_ms=percentile(latencies, 50),
        p90_ms=percentile(latencies, 90),
        p99_ms=percentile(latencies, 99),
        mean_ms=statistics.fmean(latencies) if latencies else None,
        docs_per_s=sum(r.docs for r in ok) / wall_s if wall_s > 0 and ok else None,
        tokens_per_s=sum(tokens) / wall_s if wall_s > 0 and tokens else None,
        wall_s=wall_s,
    )


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def point_stats(run: str, concurrency: int, repeats: Sequence[RunStats]) -> PointStats:
    keys = ["p50_ms", "p90_ms", "p99_ms", "mean_ms", "docs_per_s", "tokens_per_s"]
    per_key = {k: [getattr(r, k) for r in repeats] for k in keys}
    errors = sum(r.errors for r in repeats)
    total = sum(r.requests for r in repeats)
    return PointStats(
        run=run,
        concurrency=concurrency,
        requests_per_repeat=repeats[0].requests if repeats else 0,
        repeats=len(repeats),
        errors=errors,
        error_rate=errors / total if total else 0.0,
        spread={k: [None if v is None else round(v, 3) for v in vals] for k, vals in per_key.items()},
        **{k: _median(v) for k, v in per_key.items()},
    )


# --- sending -----------------------------------------------------------------------------------------------------
