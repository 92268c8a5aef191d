"""One open-loop run split across senders, and their records merged back into one run.

One client process on a small host sends a few thousand requests a second; past that its own lag voids the run.
Here the seeded schedule of a run is drawn once (:func:`embedswap.measure.open_loop.plan`) and dealt out: worker
``k`` of ``N`` gets arrivals ``k, k + N, k + 2N, ...`` (every N-th arrival of a Poisson stream is a stream at rate/N
with the same mean and less burstiness per worker; the merged stream is the one a single process would send). Each
worker sends its part from a start time shared by all (a wall-clock instant a little ahead, :data:`LEAD_S`), checks
each answer's vectors against the legacy capture, and returns its records, each marked with its worker. The merged
records are what one process would have captured, so the figures and the capacity analysis are unchanged.

A worker that is lost mid-run (its process killed, its node gone) returns nothing: the run keeps the other workers'
records and names the lost worker, and its figures mark it invalid (:func:`embedswap.measure.open_loop_stats.
run_figures`): a run with a hole in its schedule says nothing about the server.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from embedswap.measure.load import LoadSpec, run_sync
from embedswap.measure.open_loop import OpenRecord, Request, send_planned

# the shared start is this long after the parts are handed out: every worker has its part and its connection pool
# by then on one host (a worker that has not is late on its first sends, which its lag shows)
LEAD_S = 2.0


@dataclass
class Part:
    """One worker's share of a run: its planned records (each with the index of the body it sends)."""

    worker: int
    planned: list[tuple[OpenRecord, int]]


@dataclass
class PartResult:
    """What came back from one worker: its records and wall time, or why it was lost (``records`` is None)."""

    worker: int
    records: list[OpenRecord] | None = None
    wall_s: float | None = None
    error: str | None = None


@dataclass
class SendSettings:
    """What every worker needs to send its part; handed to each worker once, not per run."""

    spec: LoadSpec
    requests: Sequence[Request]
    reference: dict[str, np.ndarray] | None = None
    retry_after: str = "count"
    max_in_flight: int = 256


@dataclass
class Merged:
    """A split run put back together: the records of the workers that answered, in schedule order."""

    records: list[OpenRecord]
    wall_s: float
    lost: dict[str, str] = field(default_factory=dict)  # worker -> why it returned nothing


class SenderPool(Protocol):
    """Runs parts on its workers (one part per worker) and returns one result per part, lost ones included."""

    workers: int

    def run(self, parts: list[Part], start_at: float) -> list[PartResult]: ...


def split(planned: Sequence[tuple[OpenRecord, int]], workers: int) -> list[Part]:
    """Deal the planned records out: worker ``k`` gets every ``workers``-th arrival from ``k`` on."""
    if workers < 1:
        raise ValueError("workers must be >= 1")
    parts = [Part(k, list(planned[k::workers])) for k in range(workers)]
    for part in parts:
        for record, _ in part.planned:
            record.worker = part.worker
    return parts


def merge(results: Sequence[PartResult]) -> Merged:
    """The records of every worker that answered, in schedule order; the lost ones by worker."""
    records = [r for result in results if result.records is not None for r in result.records]
    records.sort(key=lambda r: r.seq)
    walls = [result.wall_s for result in results if result.wall_s is not None]
    lost = {str(result.worker): result.error or "no records" for result in results if result.records is None}
    return Merged(records, max(walls) if walls else 0.0, lost)


def send_part(settings: SendSettings, part: Part, start_at: float) -> PartResult:
    """One worker's part, sent from ``start_at`` (a ``time.time()`` instant): the body of every worker."""
    wall = run_sync(send_planned(settings.spec, settings.requests, part.planned, retry_after=settings.retry_after,
                                 max_in_flight=settings.max_in_flight, reference=settings.reference,
                                 start_at=start_at))
    return PartResult(part.worker, [record for record, _ in part.planned], wall)


def run_split(pool: SenderPool, planned: Sequence[tuple[OpenRecord, int]]) -> Merged:
    """Split one run across the pool's workers, send from a shared start, merge what comes back."""
    parts = split(planned, pool.workers)
    return merge(pool.run(parts, time.time() + LEAD_S))
