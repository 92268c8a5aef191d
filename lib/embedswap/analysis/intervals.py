"""95 % intervals for latency percentiles and throughput, and candidate/legacy ratios with where their interval lies.

Method: a **circular block bootstrap over requests, stratified by repeat**. Each repeat's requests are resampled
in runs of consecutive requests (:func:`block_indices`, length ``n ** (1/3)``: 3 at 30 requests) inside that repeat
(``B`` = :data:`RESAMPLES` times), so every replicate keeps the run's repeat structure and the serial correlation
of a closed loop (a queue, a cache, a slow second) within a block; a percentile is taken over the pooled
requests of all repeats (``n`` = every answered request of the point), and docs/s is the pooled ``docs / wall``. The interval is the 2.5 and 97.5 percentiles of the
replicates, widened for small samples (:func:`expanded_tail`). scipy's ``stats.bootstrap`` has no strata, hence
the few lines of numpy here; ``tests/analysis/test_intervals.py`` measures the coverage on seeded synthetic data with a
known answer (identical lognormal servers: p50 ``no difference detected`` in >= 95 % of trials, docs/s >= 93 %;
a 30 % slower one detected).

Throughput replicate of one repeat: ``docs* / (wall * sum(latency*) / sum(latency))``. In a closed loop the
wall time is the request time divided by the loop's effective concurrency (``sum(latency) / wall``, measured
per repeat); a resample keeps that concurrency and changes the request time.

A percentile is **estimable** only when ``n`` reaches :func:`min_n`: the smallest sample whose extreme order
statistics bracket the quantile with 95 % confidence without any distribution assumption
(``1 - q**n >= 0.975``): p50 needs 6, p90 36, p99 368. Below that no interval is given, and the value is
flagged; when the linear method puts more than half its weight on the largest request (:func:`near_max`) it is
the maximum, not a p99 (at n = 30, 71 % of the weight).

What the interval does **not** cover: drift between runs of the same server (about 10 % on the shared 2-core
host, README), since the servers are measured one after the other; :mod:`embedswap.analysis.host_drift` bounds it
and widens the interval by that bound before a verdict is read.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Sequence
import numpy as np

from embedswap.summary.types_decisions import Interval, PointIntervals, PointRatio, RatioDirection, RatioInterval
from embedswap.summary.types_latency import RunRequests

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 17
QUANTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}
LOWER_IS_BETTER = {"p50": True, "p90": True, "p99": True, "docs_per_s": False}
DIRECTIONS = ("faster", "slower", "no_difference", "too_few", "missing")  # labels of an interval, not verdicts


def min_n(q: float, confidence: float = CONFIDENCE) -> int:
    """Smallest n whose sample extremes bracket the q-quantile with ``confidence`` (distribution-free)."""
    tail = (1 - confidence) / 2
    p = max(q, 1 - q)
    return math.ceil(math.log(tail) / math.log(p))


def near_max(n: int, q: float) -> bool:
    """Whether numpy's linear q-percentile of n values puts more than half its weight on the largest one."""
    return n > 0 and (n - 1) * q > n - 1.5


def seed_for(*names: str) -> int:
    """A stable seed per (target, point): the same summary always gives the same intervals."""
    return SEED + zlib.crc32("/".join(names).encode())


class Requests:
    """One operating point's requests, grouped by repeat: latency (ms) of every request, docs answered (0 for a
    failed request) and each repeat's wall time (s)."""

    def __init__(self, latency_ms: Sequence[Sequence[float]], docs: Sequence[Sequence[float]],
                 wall_s: Sequence[float]) -> None:
        self.latency = [np.asarray(r, dtype=np.float64) for r in latency_ms]
        self.docs = [np.asarray(r, dtype=np.float64) for r in docs]
        self.wall = [float(w) for w in wall_s]
        keep = [i for i, r in enumerate(self.latency) if len(r) and self.wall[i] > 0]
        self.latency, self.docs = [self.latency[i] for i in keep], [self.docs[i] for i in keep]
        self.wall = [self.wall[i] for i in keep]

    @classmethod
    def of(cls, data: RunRequests | None) -> Requests | None:
        """One point's stored per-request data (None: the summary kept none, or no repeat has a time)."""
        if data is None or not data.latency_ms:
            return None
        out = cls(data.latency_ms, data.docs, data.wall_s)
        return out if out.latency else None

    @property
    def n_ok(self) -> int:
        return int(sum((d > 0).sum() for d in self.docs))

    def pooled_ok(self) -> np.ndarray:
        return np.concatenate([lat[d > 0] for lat, d in zip(self.latency, self.docs)])

    def replicates(self, seed: int, resamples: int = RESAMPLES, block: int | None = None) -> dict[str, np.ndarray]:
        """(resamples,) replicate values of p50/p90/p99 (answered requests) and docs/s; ``block``: the block
        length (None: :func:`block_length`; 1: the plain bootstrap of single requests)."""
        rng = np.random.default_rng(seed)
        lat_parts, docs_sum, wall_sum = [], np.zeros(resamples), np.zeros(resamples)
        for lat, docs, wall in zip(self.latency, self.docs, self.wall):
            idx = block_indices(rng, len(lat), resamples, block)
            rl, rd = lat[idx], docs[idx]
            lat_parts.append(np.where(rd > 0, rl, np.nan))
            docs_sum += rd.sum(axis=1)
            wall_sum += wall * rl.sum(axis=1) / lat.sum()
        pooled = np.concatenate(lat_parts, axis=1)
        # nanpercentile costs ~10x percentile; it is only needed when a request failed
        take = np.nanpercentile if np.isnan(pooled).any() else np.percentile
        with warnings.catch_warnings():  # a replicate that drew only failed requests has no percentile (nan)
            warnings.simplefilter("ignore", RuntimeWarning)
            out = {k: take(pooled, q, axis=1, method="linear") for k, q in QUANTILES.items()}
        out["docs_per_s"] = docs_sum / wall_sum
        return out

    def per_repeat(self) -> dict[str, list[float]]:
        """p50 and docs/s of each repeat alone (the run-to-run spread the stratified interval leaves out)."""
        out: dict[str, list[float]] = {"p50": [], "p99": [], "docs_per_s": []}
        for lat, docs, wall in zip(self.latency, self.docs, self.wall):
            ok = lat[docs > 0]
            if len(ok):
                out["p50"].append(float(np.percentile(ok, 50)))
                out["p99"].append(float(np.percentile(ok, 99)))
                out["docs_per_s"].append(float(docs.sum()) / wall)
        return out

    def values(self) -> dict[str, float | None]:
        ok = self.pooled_ok()
        out: dict[str, float | None] = {k: float(np.percentile(ok, q, method="linear")) if len(ok) else None
                                        for k, q in QUANTILES.items()}
        docs = sum(float(d.sum()) for d in self.docs)
        out["docs_per_s"] = docs / sum(self.wall) if docs else None
        return out


def block_length(n: int) -> int:
    """The block length for ``n`` consecutive requests: ``n ** (1/3)`` rounded (Hall, Horowitz and Jing 1995's
    order for a variance; 30 requests -> 3, 40 -> 3, 200 -> 6), at least 1."""
    return max(1, round(n ** (1 / 3))) if n > 0 else 1


def block_indices(rng: np.random.Generator, n: int, resamples: int, length: int | None = None) -> np.ndarray:
    """(resamples, n) indices of a circular block bootstrap of one repeat: runs of ``length`` consecutive requests
    from uniform starts, wrapped at the end, cut to ``n``. Consecutive requests of a closed loop share a queue, a
    cache and a slow second; drawing them one by one treats them as independent and narrows the interval."""
    length = block_length(n) if length is None else max(1, min(length, n))
    blocks = -(-n // length)
    starts = rng.integers(0, n, size=(resamples, blocks))
    idx = (starts[:, :, None] + np.arange(length)) % n
    return idx.reshape(resamples, blocks * length)[:, :n]


def expanded_tail(df: int, confidence: float = CONFIDENCE) -> float:
    """The tail probability of the expanded percentile interval (Hesterberg 2015, "What teachers should know
    about the bootstrap"): the plain percentile interval is too narrow for small samples (it uses z and the
    biased variance); this one takes the replicate quantile whose z equals ``sqrt(n/(n-1)) * t_(n-1)``.
    Measured on seeded pairs of identical lognormal servers (sigma 0.25, 3 repeats): the plain interval's docs/s
    ratio covered 1 in 93 % (3 x 30 requests) and 95 % (3 x 40) of 300 pairs; this one, on 1,000 pairs of 3 x 30,
    in 94.5 % (docs/s) and 96.3 % (p50). tests/analysis/test_intervals.py keeps p50 >= 95 %, docs/s >= 93 %."""
    from scipy import stats

    alpha = 1 - confidence
    if df < 2:
        return alpha / 2
    z = math.sqrt((df + 1) / df) * float(stats.t.ppf(1 - alpha / 2, df))
    return float(stats.norm.sf(z))


def _bounds(replicates: np.ndarray, df: int) -> tuple[float, float]:
    tail = expanded_tail(df) * 100
    finite = replicates[np.isfinite(replicates)]
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def estimate(requests: Requests, seed: int, resamples: int = RESAMPLES, block: int | None = None
             ) -> tuple[PointIntervals, dict[str, np.ndarray]]:
    """Per figure its :class:`Interval` (value, low, high, n, n_min, estimable, near_max), and the replicates
    (for ratios)."""
    reps = requests.replicates(seed, resamples, block) if requests.n_ok else {}
    values = requests.values()
    n = requests.n_ok
    figures: dict[str, Interval] = {}
    for key in (*QUANTILES, "docs_per_s"):
        q = QUANTILES.get(key)
        need = min_n(q / 100) if q else 1
        ok = n >= need and values[key] is not None
        low, high = _bounds(reps[key], n - len(requests.latency)) if ok else (None, None)
        figures[key] = Interval(value=values[key], low=low, high=high, n=n, n_min=need, estimable=ok,
                                near_max=bool(q and near_max(n, q / 100)))
    return PointIntervals(n=n, requests=int(sum(len(r) for r in requests.latency)), repeats=len(requests.latency),
                          per_repeat=requests.per_repeat(), p50=figures["p50"], p90=figures["p90"],
                          p99=figures["p99"], docs_per_s=figures["docs_per_s"]), reps


def direction(low: float | None, high: float | None, lower_is_better: bool) -> RatioDirection:
    """faster / slower / no_difference: where a ratio interval (candidate / reference) lies against 1 (covering 1
    is no difference detected). A label of the interval; the verdict against the margins is
    :mod:`embedswap.analysis.latency_verdicts`."""
    if low is None or high is None:
        return "missing"
    if low <= 1 <= high:
        return "no_difference"
    above = low > 1
    return ("slower" if above else "faster") if lower_is_better else ("faster" if above else "slower")


def repeats_overlap(a: list[float] | None, b: list[float] | None) -> bool | None:
    """Whether two sides' per-repeat values overlap (None with fewer than two repeats on a side). A direction
    (faster, slower) whose repeats overlap rests on within-run noise only: the run-to-run drift could explain it."""
    if not a or not b or len(a) < 2 or len(b) < 2:
        return None
    return max(min(a), min(b)) <= min(max(a), max(b))


def block_interval(candidate: list[float] | None, reference: list[float] | None,
                   confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The 95 % interval of the geometric mean of per-block ratios (candidate block / the reference block run
    beside it), Student's t on their logs; None with fewer than two blocks or a value that is not positive.

    Why: in an interleaved run the request-level interval above is stratified by repeat, so it leaves out how
    much a whole block moves with the host. Measured on the kit's legacy server against itself (A/A, issue 54) with
    another job on the second core: blocks read either ~185 ms or ~350 ms, so 18 + 18 requests gave 1.17x
    [1.13, 1.25] "slower" for one server against itself; its six block ratios (0.55 to 1.96) say [0.69, 1.74]."""
    from scipy import stats

    if not candidate or not reference or len(candidate) != len(reference) or len(candidate) < 2:
        return None
    if not all(v is not None and v > 0 for v in (*candidate, *reference)):
        return None
    logs = np.log(np.asarray(candidate, dtype=np.float64) / np.asarray(reference, dtype=np.float64))
    k = len(logs)
    half = float(stats.t.ppf((1 + confidence) / 2, k - 1)) * float(logs.std(ddof=1)) / math.sqrt(k)
    return math.exp(float(logs.mean()) - half), math.exp(float(logs.mean()) + half)


def ratio(candidate: tuple[PointIntervals, dict[str, np.ndarray]],
          reference: tuple[PointIntervals, dict[str, np.ndarray]], paired: bool = False) -> PointRatio:
    """Candidate / reference for p50, p99 and docs/s, each a :class:`RatioInterval` (value, low, high, n as [cand,
    ref], repeats_overlap, direction). ``paired``: each repeat of the candidate ran in one block beside the
    reference's (``sequencing.interleave``); the interval is then the hull of the request-level one and the
    blocks' (:func:`block_interval`), so that a host moving between blocks widens it instead of deciding it."""
    (cand, cand_reps), (ref, ref_reps) = candidate, reference
    out: dict[str, RatioInterval] = {}
    for key in ("p50", "p99", "docs_per_s"):
        # both sides are estimate()'s output: every figure and its per-repeat values are present
        c, r = getattr(cand, key), getattr(ref, key)
        value = c.value / r.value if c.value is not None and r.value else None
        low: float | None = None
        high: float | None = None
        # per key: a figure too few to estimate has no block interval (unset, it raised UnboundLocalError on p50 and
        # handed p50's blocks to p99 when only p99 was too few: interleaved runs of a few requests a block)
        blocks: tuple[float, float] | None = None
        direction_: RatioDirection
        if value is None:
            direction_ = "missing"
        elif not (c.estimable and r.estimable):
            direction_ = "too_few"
        else:
            df = min(c.n - cand.repeats, r.n - ref.repeats)
            low, high = _bounds(cand_reps[key] / ref_reps[key], df)
            blocks = block_interval(cand.per_repeat.get(key), ref.per_repeat.get(key)) if paired else None
            if blocks is not None:
                low, high = min(low, blocks[0]), max(high, blocks[1])
            direction_ = direction(low, high, LOWER_IS_BETTER[key])
        # statistic stays unset: summary.json never wrote it for a stored ratio
        out[key] = RatioInterval(value=value, low=low, high=high, n=[c.n, r.n],
                                 repeats_overlap=repeats_overlap(cand.per_repeat[key], ref.per_repeat[key]),
                                 direction=direction_)
        if paired and blocks is not None:  # set only here: other ratios keep the fields summary.json always had
            out[key].blocks = [float(blocks[0]), float(blocks[1])]
    return PointRatio(p50=out["p50"], p99=out["p99"], docs_per_s=out["docs_per_s"])
