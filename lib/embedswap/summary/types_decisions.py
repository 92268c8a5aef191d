"""The ``decisions`` of summary.json: what the report states, computed from the measured sections
(embedswap.analysis)."""

from __future__ import annotations

from typing import Any, Literal

from embedswap.summary.types_capacity import CapacityDecisions
from embedswap.summary.types_common import Finding, Strict
from embedswap.summary.types_faults import FaultDecisions
from embedswap.summary.types_equivalence import (Verdict, HostDrift, PointVerdicts, SlicedVerdicts)
from embedswap.summary.types_index_options import IndexOptionsDecision
from embedswap.summary.types_index import IndexDecision
from embedswap.summary.types_post import LatencyShown, PostDecision


class DiagnosisDecision(Strict):
    """Why one server's vectors differ, as the report states it: its codes (first = ``code``), from the step whose
    finding counts (``parity``: the gate failed it against the golden reference; ``vectors``: step 03)."""
    code: str
    codes: list[str]
    step: Literal["vectors", "parity", "queries"]
    reasons: list[Finding] = []


class ChangeHit(Strict):
    probe: str
    candidate: str
    verdict: str
    aspects: list[str] = []  # what differs on that probe (contract.classify), for the advice's wording


class ShimLeft(Strict):
    probe: str
    candidate: str
    verdict: str
    legacy_status: int | None = None


class ShimStatus(Strict):
    probed: bool
    done: bool
    left: list[ShimLeft] = []


class ClientChange(Strict):
    """One change the client needs before the swap (rule codes: embedswap.analysis.client_changes)."""
    rule: str
    probes: list[ChangeHit]
    params: dict[str, Any] = {}
    shim: ShimStatus


class PairedTest(Strict):
    """Per-query deltas of one metric (variant - legacy): mean, 95 % interval, paired randomization p-value,
    n queries, verdict, and the mean difference n queries would detect (80 % power)."""
    delta: float | None
    low: float | None
    high: float | None
    p_value: float | None
    n: int
    verdict: Literal["differs", "no_difference", "missing"]
    detectable: float | None
    sd: float | None


class RankingVariant(Strict):
    # True: acceptable (equivalent / non-inferior); for another model, not worse than the legacy ranking (a model
    # change is meant to move it); False: different (worse for another model); None: inconclusive or not measured
    unchanged: bool | None
    changed_queries: int | None = None
    queries: int | None = None
    tests: dict[str, PairedTest] = {}
    # the combined verdict and one per metric (None and empty: the variant was not measured)
    equivalence: Verdict | None = None
    metrics: dict[str, Verdict] = {}
    # per metric, its verdict per query language (Holm-corrected across the languages); empty where not measured
    slices: dict[str, SlicedVerdicts] = {}

    def test(self, metric: str) -> PairedTest | None:
        """The paired test of one metric's delta (ndcg_at_10, recall_at_5, mrr_at_10), or None: not tested."""
        return self.tests.get(metric)

    def speaking(self, question: str) -> Verdict | None:
        """The verdict the variant's words follow, one rule for the report and the post: the combined one for the same
        model (``equivalence``); nDCG@10's for another model (``non_inferiority``, the plan's question: what the
        judgements say decides a model change, issue 57), the combined one where nDCG@10 has none."""
        if question == "non_inferiority" and "ndcg_at_10" in self.metrics:
            return self.metrics["ndcg_at_10"]
        return self.equivalence


class RankingCandidate(Strict):
    naive: RankingVariant
    shim: RankingVariant
    # another_model: a candidate serving another model, whose verdicts are superiority / non-inferiority (issue 57)
    decision: Literal["reindex", "client", "shim_only", "none", "shim_missing", "undecided", "another_model"]
    n_needed: int | None = None  # undecided: the queries that would decide it (None when no practical n would)


class RankingTolerance(Strict):
    """The tolerances the ranking verdicts state (embedswap.analysis.ranking_verdict); ``float`` as before, so a
    stored 1 reads as 1.0."""
    top5_overlap_min: float | None = None
    ndcg_margin: float | None = None
    recall_margin: float | None = None
    mrr_margin: float | None = None
    alpha: float = 0.05  # the significance level the verdicts were decided at (the kit's default)
    power: float | None = None


class RankingDecision(Strict):
    meaningful: bool
    tolerance: RankingTolerance
    by_candidate: dict[str, RankingCandidate] = {}
    margins: dict[str, float] | None = None  # the margins the verdicts used (decisions.margins or the defaults)

    def of(self, name: str) -> RankingCandidate | None:
        """One candidate's verdicts and decision (None: not decided)."""
        return self.by_candidate.get(name)


class Interval(Strict):
    """One figure of one operating point: the value, its 95 % interval (None when n is below ``n_min``), n."""
    value: float | None
    low: float | None
    high: float | None
    n: int
    n_min: int
    estimable: bool
    near_max: bool


class PointIntervals(Strict):
    """p50/p90/p99 (answered requests pooled over repeats) and docs/s of one point (analysis.intervals)."""
    n: int
    requests: int
    repeats: int
    per_repeat: dict[str, list[float]] = {}
    p50: Interval
    p90: Interval
    p99: Interval
    docs_per_s: Interval


# where a ratio's 95 % interval lies against 1: a label of the interval, not a decision (the verdict against the
# margins is LatencyRatio.verdicts / verdict)
RatioDirection = Literal["faster", "slower", "no_difference", "too_few", "missing"]
RatioFigure = Literal["p50", "p99", "docs_per_s"]


class RatioInterval(Strict):
    """Candidate / reference with its 95 % interval, n per side, and where the interval lies (``no_difference``:
    it covers 1). ``statistic``: ``pooled`` for every stored ratio (requests of all repeats pooled, bootstrapped);
    ``median_of_repeats`` only for the value-only ratio :meth:`embedswap.summary.model.Summary.latency_ratio`
    computes for a summary without per-request data (never stored)."""
    # in the order analysis.intervals.ratio writes them (summary.json keeps that order)
    value: float | None
    low: float | None
    high: float | None
    n: list[int | None]
    repeats_overlap: bool | None = None
    direction: RatioDirection
    statistic: Literal["pooled", "median_of_repeats"] = "pooled"
    # interleaved runs: the 95 % interval of the per-block ratios, which low/high cover (analysis.intervals)
    blocks: list[float] | None = None


class PointRatio(Strict):
    p50: RatioInterval
    p99: RatioInterval
    docs_per_s: RatioInterval


class WidenedInterval(Strict):
    """A stored 95 % ratio interval widened by the host drift bound: the interval its verdict was decided on, at the
    stored interval's confidence (:func:`embedswap.analysis.latency_verdicts.widened`), so always wider than it."""
    low: float | None
    high: float | None


class WidenedPoint(Strict):
    p50: WidenedInterval
    p99: WidenedInterval
    docs_per_s: WidenedInterval


class LatencyRatio(Strict):
    """One candidate over the legacy server: per operating point the pooled ratio of each figure with its 95 %
    bootstrap interval and n (``intervals``, the one stored value every reader prints), and the verdicts against
    the margins decided on it."""
    intervals: dict[str, PointRatio] = {}
    # the verdicts against decisions.margins per point (error gate, ratios, host drift), one per interval
    verdicts: dict[str, PointVerdicts] = {}
    verdict: Verdict | None = None  # the article's two points combined: the latency headline
    drift: HostDrift | None = None
    # only where the drift bound exceeds 1: per point, each figure's interval widened by it (what the post prints
    # under the drift label); the verdicts' own low/high are the same interval at their (1 - 2 alpha) confidence
    widened: dict[str, WidenedPoint] = {}

    def verdicts_at(self, run: str) -> PointVerdicts | None:
        """The verdicts of one operating point (sequential, concurrent, sweep_c<n>), or None: not decided."""
        return self.verdicts.get(run)

    def at(self, run: str) -> PointRatio | None:
        """The ratio's intervals at one operating point (sequential, concurrent, c<n>), or None: not paired there."""
        return self.intervals.get(run)

    def figure(self, run: str, key: RatioFigure) -> RatioInterval | None:
        """One figure's ratio (p50, p99, docs_per_s) at one operating point, or None: not paired there."""
        point = self.intervals.get(run)
        return getattr(point, key) if point is not None else None


class LockShare(Strict):
    candidate: str
    case: Literal["missing", "no_advantage", "all", "part", "none"]
    share: float | None


class LockVariant(Strict):
    variant: str
    rate_ratio: float | None
    p50_ratio: float | None
    shares: list[LockShare]
    intervals: dict[str, PointRatio] = {}

    def at(self, run: str) -> PointRatio | None:
        """The variant-over-lock ratio's intervals at one operating point, or None: not paired there."""
        return self.intervals.get(run)


class LockReading(Strict):
    """Measured (the lock ablation ran) with per-variant shares, or the article's estimate (``factor``)."""
    measured: bool
    factor: float | None = None
    variants: list[LockVariant] = []


class PairRatio(Strict):
    """One candidate over another (``second`` / ``first``), decided as a candidate over the legacy server is: the
    pooled ratios with their intervals, the verdicts against the same margins, and the host drift between the two
    candidates' phases. The only latency comparison between candidates a reader may state."""
    first: str
    second: str
    ratio: LatencyRatio


ConcurrencyCode = Literal["gained", "no_gain", "inconclusive", "not_measured"]


class ConcurrencyGain(Strict):
    """What concurrency gained one server: its throughput at the concurrent point over its own sequential
    throughput (:mod:`embedswap.analysis.concurrency_gain`). ``gain``: the pooled ratio with its 95 % bootstrap
    interval (each point's requests resampled in blocks within their repeats, as every latency interval; no
    interval without per-request data); ``code`` against ``margin``: ``gained`` (the interval above it),
    ``no_gain`` (below it), ``inconclusive`` (across it, or no interval: ``reason``), ``not_measured`` (a point
    or its throughput absent)."""
    code: ConcurrencyCode
    margin: float
    concurrency: int | None = None
    gain: RatioInterval | None = None
    reason: str = ""  # inconclusive / not_measured: spans_margin, no_interval, no_points


class LatencyDecisions(Strict):
    ratios: dict[str, LatencyRatio] = {}
    points: dict[str, dict[str, PointIntervals]] = {}
    lock: LockReading | None = None
    pairs: list[PairRatio] = []  # every two candidates measured in their own phases (absent: fewer than two)
    # per server (the legacy one included), what concurrency gained it (absent: decided before it was stored)
    concurrency: dict[str, ConcurrencyGain] = {}

    def pair(self, a: str, b: str) -> PairRatio | None:
        """The stored comparison of two candidates, in either order (None: none stored)."""
        return next((p for p in self.pairs if {p.first, p.second} == {a, b}), None)

    def ratio(self, name: str) -> LatencyRatio | None:
        """One candidate's latency ratios to the legacy server (None: not computed)."""
        return self.ratios.get(name)

    def intervals(self, name: str, run: str) -> PointIntervals | None:
        """The stored intervals of one server's operating point (``run``: sequential, concurrent, c<n>), or None."""
        return self.points.get(name, {}).get(run)


class ShimClosed(Strict):
    probe: str
    before: str


class ShimRemaining(Strict):
    probe: str
    verdict: str
    legacy_status: int | None = None  # set when only the legacy server's failure makes the difference


class ShimOutcome(Strict):
    compared: int
    differ_before: int
    differ_after: int
    closed: list[ShimClosed] = []
    remaining: list[ShimRemaining] = []
    opened: list[str] = []


class MatrixFinding(Strict):
    """What the parity matrix found per check (embedswap.analysis.parity_matrix)."""
    check: str
    rows: int
    measured: int
    failed: int
    not_run: int
    # the largest 1 - cos_min of the measured rows, and where (backend, setting); None when nothing was measured
    worst_drift: float | None = None
    worst_backend: str | None = None
    worst_setting: str | None = None
    worst_setting_code: str | None = None
    worst_setting_params: dict[str, Any] = {}
    # batch invariance: '<backend> <dtype>' whose vectors were bit-identical alone and in every batch
    invariant: list[str] = []


class MultimodalFinding(Strict):
    """What the multimodal part found (embedswap.analysis.parity_multimodal): its code, the lowest cosine per part
    (text, image) and the status of the text+image request CLIP cannot embed."""
    code: Literal["multimodal_passed", "multimodal_failed", "multimodal_not_measured"]
    worst: dict[str, float | None] = {}
    mixed_status: int | None = None

    def worst_of(self, part: str) -> float | None:
        """The lowest cosine of one part (text, image), or None: the part had no measured row."""
        return self.worst.get(part)


class Decisions(Strict):
    client_changes: list[ClientChange] = []
    ranking: RankingDecision
    latency: LatencyDecisions
    shim: dict[str, ShimOutcome] = {}
    parity_matrix: list[MatrixFinding] = []
    parity_multimodal: MultimodalFinding | None = None  # None: no multimodal part in step 05
    diagnosis: dict[str, DiagnosisDecision] = {}
    diagnosis_queries: dict[str, DiagnosisDecision] = {}  # the same for the query vectors (step 03)
    # per candidate, the per-document cosine to legacy against decisions.margins.cosine, per document language
    vectors: dict[str, SlicedVerdicts] = {}
    capacity: CapacityDecisions | None = None  # the open-loop sweep's capacity (absent: not configured)
    index: dict[str, IndexDecision] = {}  # keep the index or re-embed it, per candidate (analysis.index_decision)
    # the cheapest index option within the margins, per candidate (analysis.index_options; issue 57)
    index_options: dict[str, IndexOptionsDecision] = {}
    shown: LatencyShown = LatencyShown()  # the one latency statistic every part of the report shows
    post: PostDecision = PostDecision()  # the post's conclusions
    faults: FaultDecisions | None = None  # unusable answers judged by kind and rate (absent: no faults section)

    def shim_of(self, name: str) -> ShimOutcome | None:
        """What the shim closed, left and opened for one candidate (None: not probed through the shim)."""
        return self.shim.get(name)

    def diagnosis_of(self, name: str) -> DiagnosisDecision | None:
        """The diagnosis' decided cause of one server's failed document vectors (None: none decided)."""
        return self.diagnosis.get(name)
