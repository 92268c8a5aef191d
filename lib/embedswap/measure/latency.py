"""Step 01/02's latency runs against one server: sequential, concurrent, the sweep, its resident memory."""

from __future__ import annotations

import random
import threading
from dataclasses import asdict
from typing import Any

from tqdm import tqdm  # text bars: they show both in JupyterLab and in the papermill console log

from embedswap.captures import PAIRED_LEGACY, Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure import host_state
from embedswap.measure.load import LoadSpec, client_name, closed_loop, point_stats, run_stats, run_sync
from embedswap.targets.base import Target
from embedswap.measure.workload import Workload

from embedswap.measure.errors import StepFailed


class _RssSampler:
    """The server's resident memory (all its processes), sampled in a thread while the latency runs go.

    ``target.rss_bytes()`` reads /proc through psutil: well under a millisecond, once a second, so the sampling
    does not disturb the runs. It is also sampled at the start, after every run and at the end.
    """

    def __init__(self, target: Target, interval_s: float = 1.0) -> None:
        self.target = target
        self.interval_s = interval_s
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def sample(self) -> None:
        try:
            value = self.target.rss_bytes()
        except Exception:  # a dying server must not break the latency capture
            value = None
        if value:
            self.samples.append(int(value))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    @property
    def peak(self) -> int | None:
        return max(self.samples) if self.samples else None

    def __enter__(self) -> _RssSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()


def _spec(target: Target, experiment: Experiment, workload: Workload) -> LoadSpec:
    cfg = experiment.latency
    return LoadSpec(
        base_url=target.base_url,
        model=experiment.model.served_name,
        batches=[[d.text for d in batch] for batch in workload.latency_batches(cfg.sample)],
        timeout_s=cfg.timeout_s,
        headers=target.headers(),
        verify_tls=target.verify_tls(),
        embeddings_path=target.embeddings_path(),
        api_shape=target.api_shape(),
    )


def block_order(seed: str, run: str, repeat: int) -> tuple[str, str]:
    """Which side goes first in one interleaved block (``target``, ``paired``): counterbalanced, the order alternating
    from one repeat to the next from a side drawn per (seed, run), so over an even number of repeats each side goes
    first as often as the other, and a rerun alternates the same way. A coin per repeat let one side go second in
    every block: with the A/A runs' candidate name, all four concurrent blocks of every A/A, and the Infinity A/A
    read that position as its server being 1.26x slower than itself on a loaded host."""
    start = random.Random(f"{seed}/{run}").random() < 0.5
    first = start == (repeat % 2 == 0)
    return ("target", "paired") if first else ("paired", "target")


class _Side:
    """One server's records and per-repeat statistics as the runs of a phase accumulate."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self.records: list[dict[str, Any]] = []
        self.stats: dict[str, Any] = {}
        self.per_repeat: list[Any] = []
        self.errors = 0

    def add(self, recs: list[Any], wall: float) -> None:
        self.records.extend(asdict(r) for r in recs)
        self.per_repeat.append(run_stats(recs, wall))
        self.errors += sum(1 for r in recs if not r.ok)

    def close_point(self, run: str, concurrency: int) -> None:
        self.stats[run] = point_stats(run, concurrency, self.per_repeat).as_dict()
        self.per_repeat = []


def capture_latency(target: Target, experiment: Experiment, workload: Workload, attempt: Attempt,
                    prefix: str, paired: Target | None = None) -> None:
    """The article's two operating points: N sequential, and M at concurrency C; each repeated. Then the
    concurrency sweep (``latency.sweep``; run names ``sweep_c<C>``), and the server's peak resident memory.

    The two article points are written as before (``latency_requests.jsonl``, ``sequential`` / ``concurrent`` in
    ``latency_stats.json``); the sweep's requests go to ``latency_sweep_requests.jsonl`` and its points to the list
    ``sweep`` in ``latency_stats.json``, with ``rss_peak_bytes`` (None where the server's memory cannot be read,
    e.g. an external target). The sweep is skipped when the server is gone or answered none of the article
    points' requests: it would only measure the failure again. ``host`` records the host's state and a fixed
    calibration workload's time (three samples a reading) before and after the phase and after each run, while the server
    idles (``measure.host_state``: the drift between phases, with the gauge's own spread); ``foreign_cores`` per run.

    With ``paired`` (a second server up at the same time: ``sequencing.interleave``) each repeat of an article
    point is a block run on both servers back to back, in the order :func:`block_order` draws; the paired
    server's runs are written under ``<prefix>/paired_legacy`` in the same files and shapes, with the same host readings
    (both sides of the ratio saw the same host). The sweep runs on ``target`` alone, after the blocks. The calibration
    is then read before and after the phase only, not after each run: both sides share every reading, so their ratio
    is 1 whatever the host did, and a trend within the phase is no bound for an interleaved ratio
    (:func:`embedswap.analysis.host_drift.host_drift`); the foreign CPU is still read per run.
    """
    cfg = experiment.latency
    sides = {"target": _Side(_spec(target, experiment, workload))}
    if paired is not None:
        sides["paired"] = _Side(_spec(paired, experiment, workload))
    points = [("sequential", cfg.sequential_requests, 1), ("concurrent", cfg.concurrent_requests, cfg.concurrency)]
    sweep = [(f"sweep_c{c}", cfg.sweep_requests, c) for c in dict.fromkeys(cfg.sweep)]  # duplicates dropped
    sweep_note = None
    total = (sum(n for _, n, _ in points) * cfg.repeats * len(sides)
             + sum(n for _, n, _ in sweep) * cfg.sweep_repeats)
    # other jobs' CPU per segment, read from /proc (drift); both servers' processes are the servers', not the host's
    foreign = host_state.ForeignCpu(lambda: target.pids() + (paired.pids() if paired is not None else []))
    foreign.mark()
    host_before = host_state.reading()  # the host's state and calibration time around the phase (drift)
    between: list[float] = []

    def read_host() -> None:  # the server idles: the gauges' spread within the phase
        # Interleaved, both sides' ratios divide the same readings (1) and the trend within the phase reached both
        # alike (analysis.host_drift reads neither): a reading (~0.65 s on the 2-core CI host) would decide nothing,
        # 26 of them were 17 s of the legacy A/A's 57 s latency phase (issue 61). The foreign-CPU segments stay:
        # cheap, and foreign_interval reads them.
        if paired is None:
            between.append(host_state.calibration_reading())
        foreign.mark()

    with tqdm(total=total, desc=f"{prefix}: latency", leave=False, mininterval=1.0) as progress, \
            _RssSampler(target) as rss:
        for run, requests, concurrency in points:
            for repeat in range(cfg.repeats):
                order = block_order(prefix, run, repeat) if paired is not None else ("target",)
                for side in order:
                    recs, wall = run_sync(closed_loop(sides[side].spec, run, repeat, requests, concurrency,
                                                      cfg.warmup_requests, progress))
                    rss.sample()
                    sides[side].add(recs, wall)
                    read_host()
            for side in sides.values():
                side.close_point(run, concurrency)
        own = sides["target"]
        stats = own.stats
        swept = _Side(own.spec)  # the sweep: this server alone, its requests in a file of their own
        if sweep:
            answered = len(own.records) - own.errors
            if not target.alive():
                sweep_note = "skipped: the server process had exited"
            elif answered == 0:
                sweep_note = "skipped: the server answered none of the article points' requests"
            else:
                for run, requests, concurrency in sweep:
                    for repeat in range(cfg.sweep_repeats):
                        recs, wall = run_sync(closed_loop(own.spec, run, repeat, requests, concurrency,
                                                          cfg.warmup_requests, progress))
                        rss.sample()
                        swept.add(recs, wall)
                        read_host()
                    swept.close_point(run, concurrency)
                stats["sweep"] = list(swept.stats.values())
    host_after = host_state.reading()
    foreign.mark()
    host = host_state.phase(host_before, host_after, between, foreign.cores)
    stats["host"] = host
    if sweep_note:
        stats["sweep_note"] = sweep_note
    stats["client"] = client_name(own.spec.base_url)
    stats["rss_peak_bytes"] = rss.peak
    stats["rss_samples"] = len(rss.samples)
    problems = []
    if paired is not None:
        other, paired_prefix = sides["paired"], f"{prefix}/{PAIRED_LEGACY}"
        attempt.write_jsonl(f"{paired_prefix}/latency_requests.jsonl", other.records)
        attempt.write_json(f"{paired_prefix}/latency_stats.json",
                           {**other.stats, "host": host, "client": client_name(other.spec.base_url),
                            "rss_peak_bytes": None, "rss_samples": 0, "interleaved_with": prefix})
        if other.errors:
            problems.append(f"{other.errors} latency request(s) to the paired legacy server failed; see "
                            f"{paired_prefix}/latency_requests.jsonl")
    attempt.write_jsonl(f"{prefix}/latency_requests.jsonl", own.records)
    if swept.records:
        attempt.write_jsonl(f"{prefix}/latency_sweep_requests.jsonl", swept.records)
    attempt.write_json(f"{prefix}/latency_stats.json", stats)
    if own.errors:
        problems.insert(0, f"{own.errors} latency request(s) failed; see {prefix}/latency_requests.jsonl")
    if swept.errors:
        problems.append(f"sweep: {swept.errors} of {len(swept.records)} latency request(s) failed; see "
                        f"{prefix}/latency_sweep_requests.jsonl")
    if problems:
        raise StepFailed("; ".join(problems))
