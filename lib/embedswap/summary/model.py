"""The typed shape of summary.json (schema version 2), as pydantic models.

The models name what every reader relies on (a section's ``measured`` flag and reason, the roles, the workload,
the decisions with their codes) and allow the figures inside sections to grow (``extra="allow"``), so a capture
format that gains a field does not break old readers. :func:`validate_summary` runs before a summary is written
and after one is loaded (through :func:`embedswap.summary.upgrade.load_summary`), so a file that does not fit is
refused with the field's path rather than read wrongly.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Reason(BaseModel):
    """Why a part was not measured: a code the report catalogues word, and its parameters."""
    code: str
    params: dict[str, Any] = {}


class Section(_Open):
    """A part of the summary: measured, or not measured with a reason (``why`` is the English sentence)."""
    measured: bool
    why: str | None = None
    reason: Reason | None = None


class ExperimentInfo(_Open):
    name: str
    date: str
    description: str = ""
    folder: str
    attempt: str
    config: dict[str, Any] = {}


class ModelInfo(_Open):
    spec: str
    served_name: str | None = None
    fingerprint: str | None = None
    revision: str | None = None


class WorkloadInfo(_Open):
    documents: int
    languages: dict[str, int] = {}
    queries: int = 0
    batch_size: int | None = None
    repeats: int | None = None


class Roles(_Open):
    legacy: str
    candidate: str | None = None
    candidates: list[str] = []


class Target(Section):
    config: dict[str, Any] = {}
    error: str | None = None


class Vectors(Section):
    by_target: dict[str, Section] = {}
    comparisons: dict[str, Section] = {}


class ProbeRow(_Open):
    probe: str
    by_target: dict[str, dict[str, Any]] = {}
    verdicts: dict[str, dict[str, Any] | None] = {}


class Latency(_Open):
    by_target: dict[str, Section] = {}
    config: dict[str, Any] = {}


class NotRun(_Open):
    backend: str
    why: str
    reason: Reason | None = None


class MatrixRow(_Open):
    """One row of article 003's parity matrix (embedswap.parity.matrix.MatrixRow): figures, or a reason code."""
    check: Literal["batch_invariance", "long_context", "tensor_parallel", "cold_start"]
    backend: str
    setting: str  # English text; the report words ``setting_code`` + ``setting_params`` (absent before round 3)
    setting_code: str | None = None
    setting_params: dict[str, Any] = {}
    platform: str
    n: int
    cos_min: float | None
    cos_median: float | None
    gate: float | None
    passed: bool | None
    reason: Reason | None = None
    why: str | None = None
    figures: dict[str, Any] = {}


class ParityMatrix(Section):
    rows: list[MatrixRow] = []
    settings: dict[str, Any] = {}


class MultimodalParity(Section):
    """Step 05's multimodal part: a CLIP model's caption (``part: text``) and image (``part: image``) rows, or why
    it was not measured (embedswap.parity.multimodal_step)."""
    rows: list[dict[str, Any]] = []
    passed: bool | None = Field(default=None, alias="pass")
    records: int = 0
    threshold: float | None = None


class Parity(Section):
    rows: list[dict[str, Any]] = []
    passed: bool | None = Field(default=None, alias="pass")
    not_run: list[NotRun] = []
    matrix: ParityMatrix | None = None  # absent in summaries from before issue 18
    multimodal: MultimodalParity | None = None


class DiagnosisFinding(_Open):
    """One server's diagnosis (embedswap.diagnosis.hypotheses): the first cause's code (None: the model's own pipeline
    reproduces its vectors), every reason with its fix, the hypothesis that matched, or the diagnosis' own error."""
    cause: str | None = None
    reasons: list[dict[str, Any]] = []
    hypothesis: dict[str, Any] | None = None
    error: str | None = None


class QueryDiagnosis(Section):
    """Step 03's diagnosis of every server's query vectors (input_type "query") against the model with its query
    prompt; absent in summaries from before it."""
    prompt: str | None = None
    texts: int | None = None
    by_target: dict[str, DiagnosisFinding] = {}


class Diagnosis(Section):
    """Step 03's diagnosis of every server's document vectors (captures/diagnosis/vectors.json)."""
    by_target: dict[str, DiagnosisFinding] = {}
    limits: list[int] = []
    queries: QueryDiagnosis | None = None


class DiagnosisDecision(BaseModel):
    """Why one server's vectors differ, as the report states it: its codes (first = ``code``), from the step whose
    finding counts (``parity``: the gate failed it against the golden reference; ``vectors``: step 03)."""
    code: str
    codes: list[str]
    step: Literal["vectors", "parity", "queries"]
    reasons: list[dict[str, Any]] = []


class ChangeHit(BaseModel):
    probe: str
    candidate: str
    verdict: str
    aspects: list[str] = []  # what differs on that probe (contract.classify), for the advice's wording


class ShimLeft(BaseModel):
    probe: str
    candidate: str
    verdict: str
    legacy_status: int | None = None


class ShimStatus(BaseModel):
    probed: bool
    done: bool
    left: list[ShimLeft] = []


class ClientChange(BaseModel):
    """One change the client needs before the swap (rule codes: embedswap.analysis.client_changes)."""
    rule: str
    probes: list[ChangeHit]
    params: dict[str, Any] = {}
    shim: ShimStatus


class PairedTest(BaseModel):
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


class RankingVariant(BaseModel):
    unchanged: bool | None
    changed_queries: int | None = None
    queries: int | None = None
    tests: dict[str, PairedTest] = {}


class RankingCandidate(BaseModel):
    naive: RankingVariant
    shim: RankingVariant
    decision: Literal["reindex", "client", "shim_only", "none", "shim_missing"]


class RankingDecision(BaseModel):
    meaningful: bool
    tolerance: dict[str, float]
    by_candidate: dict[str, RankingCandidate] = {}


class Interval(BaseModel):
    """One figure of one operating point: the value, its 95 % interval (None when n is below ``n_min``), n."""
    value: float | None
    low: float | None
    high: float | None
    n: int
    n_min: int
    estimable: bool
    near_max: bool


class PointIntervals(BaseModel):
    """p50/p90/p99 (answered requests pooled over repeats) and docs/s of one point (analysis.intervals)."""
    n: int
    requests: int
    repeats: int
    per_repeat: dict[str, list[float]] = {}
    p50: Interval
    p90: Interval
    p99: Interval
    docs_per_s: Interval


Verdict = Literal["faster", "slower", "no_difference", "too_few", "missing"]


class RatioInterval(BaseModel):
    """Candidate / reference with its 95 % interval and the verdict (``no_difference``: the interval covers 1)."""
    value: float | None
    low: float | None
    high: float | None
    verdict: Verdict
    n: list[int | None]
    repeats_overlap: bool | None = None


class PointRatio(BaseModel):
    p50: RatioInterval
    p99: RatioInterval
    docs_per_s: RatioInterval


class LatencyRatio(BaseModel):
    seq_p50: float | None
    conc_docs_per_s: float | None
    conc_p50: float | None
    complete: bool
    intervals: dict[str, PointRatio] = {}


class LockShare(BaseModel):
    candidate: str
    case: Literal["missing", "no_advantage", "all", "part", "none"]
    share: float | None


class LockVariant(BaseModel):
    variant: str
    rate_ratio: float | None
    p50_ratio: float | None
    shares: list[LockShare]
    intervals: dict[str, PointRatio] = {}


class LockReading(BaseModel):
    """Measured (the lock ablation ran) with per-variant shares, or the article's estimate (``factor``)."""
    measured: bool
    factor: float | None = None
    variants: list[LockVariant] = []


class LatencyDecisions(BaseModel):
    ratios: dict[str, LatencyRatio] = {}
    points: dict[str, dict[str, PointIntervals]] = {}
    lock: LockReading | None = None


class ShimClosed(BaseModel):
    probe: str
    before: str


class ShimRemaining(BaseModel):
    probe: str
    verdict: str
    legacy_status: int | None = None  # set when only the legacy server's failure makes the difference


class ShimOutcome(BaseModel):
    compared: int
    differ_before: int
    differ_after: int
    closed: list[ShimClosed] = []
    remaining: list[ShimRemaining] = []
    opened: list[str] = []


class MatrixFinding(BaseModel):
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


class MultimodalFinding(BaseModel):
    """What the multimodal part found (embedswap.analysis.parity_multimodal): its code, the lowest cosine per part
    (text, image) and the status of the text+image request CLIP cannot embed."""
    code: Literal["multimodal_passed", "multimodal_failed", "multimodal_not_measured"]
    worst: dict[str, float | None] = {}
    mixed_status: int | None = None


class Decisions(BaseModel):
    client_changes: list[ClientChange] = []
    ranking: RankingDecision
    latency: LatencyDecisions
    shim: dict[str, ShimOutcome] = {}
    parity_matrix: list[MatrixFinding] = []
    parity_multimodal: MultimodalFinding | None = None  # absent in summaries from before issue 18's third round
    diagnosis: dict[str, DiagnosisDecision] = {}
    diagnosis_queries: dict[str, DiagnosisDecision] = {}  # the same for the query vectors (step 03)


class Summary(_Open):
    """summary.json, schema version 2."""
    schema_version: Literal[2]
    generated: str
    experiment: ExperimentInfo
    model: ModelInfo
    workload: WorkloadInfo
    roles: Roles
    environment: dict[str, Any] = {}
    steps: dict[str, dict[str, Any]] = {}
    targets: dict[str, Target] = {}
    vectors: Vectors
    contract: list[ProbeRow] | Section
    instruction: Section
    latency: Latency
    ablation: Section
    matryoshka: Section | None = None
    restore: Section | None = None
    parity: Parity
    diagnosis: Diagnosis | None = None
    ranking: Section
    shim: Section
    decisions: Decisions
    # dotted paths of figures that were NaN or infinite and are stored as null (embedswap.summary.finite)
    non_finite: list[str] = []


def validate_summary(summary: dict[str, Any], source: str = "summary.json") -> Summary:
    """The typed summary; a summary of another shape raises SummaryError naming the first wrong fields."""
    from embedswap.summary.upgrade import SummaryError

    try:
        return Summary.model_validate(summary)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise SummaryError(f"{source} does not fit the summary model (schema {summary.get('schema_version')}): "
                           f"{problems}") from None
