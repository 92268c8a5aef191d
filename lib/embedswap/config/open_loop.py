"""``latency.open_loop`` in experiment.yaml: open-loop rate sweeps and the latency target they are read against.

A closed loop measures a server while the client waits for it; production traffic does not wait. Open loop sends
on a schedule fixed before the run (requests per second, with Poisson, constant or gamma arrivals) and counts
latency from each request's *scheduled* send time, so queueing behind a saturated server is not hidden. Off unless
configured: a sweep costs minutes per server.

Example::

    latency:
      traffic: 40            # peak requests/s the swap must carry (replicas are sized for it)
      retry_after: count     # or honour: wait as a 429's Retry-After says, and report the added latency
      open_loop:
        rates: [2, 4, 8]     # or `auto`: a ramp that brackets the knee
        seconds: 10          # per rate (or `requests: N`)
        arrival: poisson     # constant | gamma (with `burstiness`)
        documents: 8         # per request; `workload`: the workload's own batches, drawn at random
        slo: {p99_ms: 500, p50_ms: 200}
        repeats: 2
        workers: 4           # senders: 1 (default) is this process; more run on Ray (pip install embedswap[scale])
        ray_address: auto    # absent: a local Ray started for the step; `auto` or `ray://host:10001`: a cluster
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from embedswap.config.base import _Strict


DEFAULT_REQUESTS = 40


class SloConfig(_Strict):
    """The latency target a rate must meet: p99 (required) and optionally p50, from the scheduled send."""

    p99_ms: float = Field(..., gt=0)
    p50_ms: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _p50_below_p99(self) -> SloConfig:
        if self.p50_ms is not None and self.p50_ms > self.p99_ms:
            raise ValueError("slo.p50_ms is above slo.p99_ms: a median cannot be allowed more than the tail")
        return self


class AutoRamp(_Strict):
    """``rates: auto``: start, multiply by ``factor`` until a rate misses the target (or ``max_steps``), then one
    rate between the last one met and the first one missed, so the knee is bracketed."""

    start: float = Field(1.0, gt=0)
    factor: float = Field(2.0, gt=1)
    max_steps: int = Field(6, ge=2, le=20)


class OpenLoopConfig(_Strict):
    rates: list[Annotated[float, Field(gt=0)]] | Literal["auto"] = "auto"
    auto: AutoRamp = Field(default_factory=AutoRamp)
    # how long each rate runs: a number of requests, or seconds (requests = rate x seconds); neither: 40 requests
    requests: int | None = Field(None, ge=1)
    seconds: float | None = Field(None, gt=0)
    arrival: Literal["poisson", "constant", "gamma"] = "poisson"
    # gamma arrivals only: < 1 burstier than Poisson, 1 is Poisson, > 1 more regular (vLLM's `--burstiness`)
    burstiness: float = Field(1.0, gt=0)
    # documents per request: a fixed number cut from the latency sample, or `workload`: the workload's batches
    documents: int | Literal["workload"] = Field(8)
    slo: SloConfig
    seed: int = 0
    repeats: int = Field(2, ge=1)
    # the client falls behind its own schedule by more than this (p90 of send lag): the point is invalid, the
    # figures are the client's, not the server's
    max_lag_ms: float = Field(50.0, gt=0)
    # connections the client may open at once; a request waiting for one still counts from its scheduled time
    max_in_flight: int = Field(256, ge=1)
    # senders sharing each rate's schedule (each sends every `workers`-th arrival from a shared start time): 1 is
    # this process; more are Ray workers (embedswap.measure.open_loop_workers), whose lag is kept per worker.
    # max_in_flight applies to each worker
    workers: int = Field(1, ge=1, le=4096)
    # where those workers run: absent, a local Ray the kit starts for the step (its own process group, stopped
    # after); `auto` (the cluster this process runs in: a RayJob's entrypoint) or `ray://host:port` (Ray Client)
    ray_address: str | None = Field(None, pattern=r"^(auto|ray://[^\s/]+(:[0-9]+)?)$")

    @model_validator(mode="after")
    def _one_length(self) -> OpenLoopConfig:
        if self.requests is not None and self.seconds is not None:
            raise ValueError("give either 'requests' or 'seconds' per rate, not both")
        if isinstance(self.documents, int) and self.documents < 1:
            raise ValueError("documents must be >= 1 or 'workload'")
        if self.rates != "auto" and len(set(self.rates)) != len(self.rates):
            raise ValueError("rates: a rate appears twice")
        return self

    def requests_at(self, rate: float) -> int:
        """How many requests one run at ``rate`` sends (at least 2, so a percentile has something to read)."""
        if self.seconds is None:
            return self.requests or DEFAULT_REQUESTS
        return max(2, round(rate * self.seconds))
