"""The latency, ablation and timing sections of summary.json (embedswap.measure.load's statistics per run)."""

from __future__ import annotations

from typing import Any

from embedswap.summary.types_common import Number, Reason, Section, Strict


class RunRequests(Strict):
    """Per-request data of one run, grouped by repeat (what the intervals resample)."""
    latency_ms: list[list[Number]] = []
    docs: list[list[int]] = []  # documents answered per request, 0 for a failed one
    wall_s: list[Number] = []  # per repeat: when its last answer arrived


class PointSpread(Strict):
    """Each figure of a point per repeat (None where a repeat had no answered request)."""
    p50_ms: list[Number | None] = []
    p90_ms: list[Number | None] = []
    p99_ms: list[Number | None] = []
    mean_ms: list[Number | None] = []
    docs_per_s: list[Number | None] = []
    tokens_per_s: list[Number | None] = []


class LatencyPoint(Strict):
    """One operating point (a run at one concurrency): latency percentiles over answered requests, throughput,
    errors, pooled over repeats."""
    run: str  # sequential | concurrent | sweep_c<N>
    concurrency: int
    repeats: int
    requests_per_repeat: int | None = None
    p50_ms: Number | None = None
    p90_ms: Number | None = None
    p99_ms: Number | None = None
    mean_ms: Number | None = None
    docs_per_s: Number | None = None
    tokens_per_s: Number | None = None
    errors: int = 0
    error_rate: Number = 0
    # failed requests by class (429, 5xx, timeout, other) and the Retry-After values the refusals sent
    error_classes: dict[str, int] = {}
    retry_after: list[str] = []
    spread: PointSpread | None = None
    requests: RunRequests | None = None


class HostReading(Strict):
    """One reading of the host (embedswap.measure.host_state): None where /proc did not say."""
    time: Number | None = None
    load_1m: Number | None = None
    load_5m: Number | None = None
    cpus: int | None = None
    cpu_mhz: Number | None = None
    steal_jiffies: int | None = None
    total_jiffies: int | None = None
    calibration_ms: Number | None = None  # the fixed calibration workload's time (mean of its samples)
    calibration_samples_ms: list[Number] = []  # each sample's time; empty in older captures


class HostPhase(Strict):
    """The host around one server's latency phase: before, after, the stolen CPU share between them, the
    phase's calibration time (mean of before and after) and all its calibration readings."""
    before: HostReading | None = None
    after: HostReading | None = None
    steal_share: Number | None = None
    calibration_ms: Number | None = None
    # every calibration time of the phase in order (before's samples, between runs, after's); empty in older captures;
    # an interleaved phase (sequencing.interleave) has before and after only: nothing reads its between readings
    readings_ms: list[Number] = []
    # per segment of the phase (between two runs), the cores' worth of CPU used by other jobs than the server
    # and the kit (measure.host_state.ForeignCpu); empty in older captures and for a server the kit did not start
    foreign_cores: list[Number] = []


class LatencyTarget(Section):
    """One server's latency_stats.json with its per-request data, or why it has none."""
    client: str | None = None  # the HTTP client that measured it
    sequential: LatencyPoint | None = None
    concurrent: LatencyPoint | None = None
    sweep: list[LatencyPoint] = []
    sweep_note: str | None = None  # why the sweep was skipped (English); sweep_reason is its code
    sweep_reason: Reason | None = None
    rss_peak_bytes: int | None = None
    rss_samples: int | None = None
    host: HostPhase | None = None  # None: the capture recorded no host readings
    source: str | None = None
    lock: bool | None = None  # ablation only: whether the legacy variant holds its global lock
    interleaved_with: str | None = None  # legacy runs in blocks alternating with this candidate's (interleave)


class Latency(Strict):
    """Latency per server (``legacy`` and ``candidate`` repeat the role's entry of ``by_target``)."""
    legacy: LatencyTarget | None = None
    candidate: LatencyTarget | None = None
    by_target: dict[str, LatencyTarget] = {}
    # per candidate measured under sequencing.interleave: the legacy server's runs alternating with its own
    paired_legacy: dict[str, LatencyTarget] = {}
    config: dict[str, Any] = {}  # open: the experiment's latency configuration as the user wrote it

    def of(self, name: str | None) -> LatencyTarget | None:
        """One server's latency figures (None: not in the section, or no name)."""
        return self.by_target.get(name) if name is not None else None

    def reference_for(self, candidate: str, legacy: str) -> LatencyTarget | None:
        """What a candidate's ratios divide by: the legacy runs interleaved with it, else legacy's own phase."""
        return self.paired_legacy.get(candidate) or self.by_target.get(legacy)


class Ablation(Section):
    """The legacy server against its variants (e.g. without the global lock)."""
    by_target: dict[str, LatencyTarget] = {}

    def of(self, name: str | None) -> LatencyTarget | None:
        """One server's (the legacy one or a variant of it) latency entry, or None: not measured, or no name."""
        return self.by_target.get(name) if name is not None else None


class StepTime(Strict):
    """How long one notebook took, and its share of the total."""
    step: str
    status: str | None = None
    seconds: Number
    share: Number | None = None


class ServerTime(Strict):
    """How long one server took to start and each capture part took (None: not recorded)."""
    start_seconds: Number | None = None
    parts: dict[str, Number | None] = {}  # workload, queries, probes, latency
    measured_seconds: Number | None = None


class Timing(Section):
    """How long each step of the attempt and each part of each server's capture took."""
    steps: list[StepTime] = []
    total_seconds: Number | None = None
    servers: dict[str, ServerTime] = {}
    source: str | None = None
