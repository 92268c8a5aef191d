"""summary.json's ``capacity`` section (the open-loop rate sweep per server) and ``decisions.capacity`` (the
largest rate meeting the latency target, the candidate/legacy ratio, replicas for the stated traffic)."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Section, Strict
from embedswap.summary.types_equivalence import Verdict


class OpenRun(Strict):
    """One run: one offered rate, one repeat (embedswap.measure.open_loop_stats.run_figures)."""
    rate: Number
    repeat: int
    requests: int
    answered: int
    statuses: dict[str, int] = {}  # ok, 429, 5xx, timeout, connection, malformed, another 4xx by its code
    sent_rate: Number | None = None  # requests/s the client actually sent
    throughput: Number | None = None  # answered requests/s
    goodput: Number | None = None  # requests/s answered within the target with vectors that pass the gate
    good: int = 0
    late: int = 0  # answered, but later than the p99 target
    wrong_vectors: int = 0  # answered, but the vectors fail the gate against the legacy capture
    unchecked_vectors: int = 0  # answered, no legacy vectors to compare with
    p50_ms: Number | None = None  # from the scheduled send
    p90_ms: Number | None = None
    p99_ms: Number | None = None
    service_p50_ms: Number | None = None  # from the actual send
    service_p99_ms: Number | None = None
    lag_p90_ms: Number | None = None  # the client's own lateness against its schedule
    valid: bool = True  # False: the client fell behind its schedule; the run says nothing of the server
    worker_lag_p90_ms: dict[str, Number] = {}  # a run split across workers: each one's lag against its own part
    lost_workers: dict[str, str] = {}  # workers that returned nothing (killed mid-run): worker -> why
    invalid_worker: int | None = None  # an invalid split run: the worker lost, or the one furthest behind
    shed: int = 0  # requests that got a 429 (answered after a retry or not)
    shed_share: Number = 0
    retried: int = 0
    retry_wait_ms: Number | None = None  # honour: mean wait added per retried request
    retry_after_s: Number | None = None  # the longest Retry-After the server sent
    wall_s: Number | None = None
    misses: list[str] = []  # why the run misses the target (empty: it meets it): invalid, errors, wrong_vectors,
    # p99, p50, saturated (answered at under half the rate sent), no_answers


class CapacityTarget(Section):
    """One server's open-loop runs, in rate order then repeat order."""
    runs: list[OpenRun] = []
    rates: list[Number] = []
    reference: bool = False  # whether vectors were compared with the legacy capture (goodput gated)
    retry_after: Literal["honour", "count"] = "count"
    source: str | None = None


class Capacity(Section):
    """The open-loop sweep: the target (slo), the traffic to size for, each server's runs."""
    slo_p99_ms: Number | None = None
    slo_p50_ms: Number | None = None
    traffic: Number | None = None
    arrival: str | None = None
    gate: Number | None = None  # the cosine a vector must reach against the legacy one
    error_margin: Number | None = None
    by_target: dict[str, CapacityTarget] = {}

    def of(self, name: str | None) -> CapacityTarget | None:
        return self.by_target.get(name) if name is not None else None


class RatePoint(Strict):
    """One rate over its repeats (the figure's points): medians and min..max of the valid repeats."""
    rate: Number
    repeats: int
    valid: int  # repeats whose client kept its schedule
    p99_ms: Number | None = None
    p99_low: Number | None = None
    p99_high: Number | None = None
    p50_ms: Number | None = None
    throughput: Number | None = None
    goodput: Number | None = None
    shed_share: Number = 0
    meets: bool = False  # every valid repeat meets the target


class ServerCapacity(Strict):
    """The largest rate meeting the target on one server, its interval over repeats, and what limits it."""
    capacity: Number | None = None  # requests/s; geometric mean over repeats
    low: Number | None = None  # (1 - 2 alpha) t interval of the repeats' log capacities; None with one repeat
    high: Number | None = None
    per_repeat: list[Number | None] = []
    censored: Literal["none", "above", "below"] = "none"  # above: every rate met; below: none did
    limit: str | None = None  # why the next rate missed: p99, p50, saturated, errors, wrong_vectors, invalid
    met_rate: Number | None = None  # the grid's bracket of the knee: the highest rate met, the lowest missed
    missed_rate: Number | None = None
    replicas: int | None = None  # for the stated traffic
    replicas_low: int | None = None
    replicas_high: int | None = None
    sheds_from: Number | None = None  # the lowest rate at which it answered 429
    shed_share: Number | None = None  # the share of 429s at that rate
    shed_share_max: Number | None = None
    goodput_gap: Literal["wrong_vectors", "late", "errors"] | None = None  # why goodput is below throughput
    goodput_gap_share: Number | None = None  # of the answered requests at the rates that were valid
    invalid_rates: list[Number] = []
    points: list[RatePoint] = []


class CapacityDecisions(Strict):
    """``decisions.capacity``: per server, and each candidate's capacity against the legacy server's."""
    slo_p99_ms: Number | None = None
    slo_p50_ms: Number | None = None
    traffic: Number | None = None
    servers: dict[str, ServerCapacity] = {}
    ratios: dict[str, Verdict] = {}  # candidate/legacy capacity (higher is better)

    def of(self, name: str | None) -> ServerCapacity | None:
        return self.servers.get(name) if name is not None else None
