"""The typed shape of summary.json (schema version 4), as pydantic models.

Every section and every object inside it is typed and closed (``extra="forbid"``): a renamed or unknown key fails
at load with its path, rather than being read wrongly. Only data that is genuinely open stays a dict (a user's
configuration, a request body as sent, a reason's parameters); each such field says why. The section models live
in ``embedswap.summary.types_*``; :func:`validate_summary` runs before a summary is written and after one is loaded
(through :func:`embedswap.analysis.upgrade.load_summary`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from embedswap.summary.types_capacity import Capacity
from embedswap.summary.types_common import ABSENT, Number, Reason, Section, Strict
from embedswap.summary.types_decisions import Decisions, RatioFigure, RatioInterval
from embedswap.summary.types_faults import Faults
from embedswap.summary.types_index import Index
from embedswap.summary.types_latency import Ablation, Latency, Timing
from embedswap.summary.types_long_input import LongInput
from embedswap.summary.types_parity import Parity, ParitySample
from embedswap.summary.types_plan import Plan
from embedswap.summary.types_sections import Diagnosis, Instruction, Matryoshka, Ranking, Restore, Shim
from embedswap.summary.types_vectors import ProbeRow, Vectors


class SummaryError(ValueError):
    """summary.json cannot be read (not JSON, made by a newer kit, or not of the summary's shape)."""


class ExperimentInfo(Strict):
    """Which experiment and attempt the summary is of."""
    name: str
    date: str
    description: str = ""
    folder: str
    attempt: str
    config: dict[str, Any] = {}  # open: experiment.yaml as the user wrote it (its own model validates it)


class ModelInfo(Strict):
    """The embedding model: as configured, as served, and its fingerprint."""
    spec: str
    served_name: str | None = None
    path: str | None = None
    fingerprint: str | None = None
    revision: str | None = None


class WorkloadSamples(Strict):
    """The documents the latency runs and the parity reference used."""
    latency: ParitySample
    parity: ParitySample


class WorkloadInfo(Strict):
    """What was sent: documents (per language), queries, batch size, repeats."""
    documents: int
    languages: dict[str, int] = {}
    queries: int = 0
    batch_size: int | None = None
    repeats: int | None = None
    samples: WorkloadSamples | None = None  # which documents the latency runs and the parity reference used


class Roles(Strict):
    """Which server is the legacy one, the primary candidate, and every candidate."""
    legacy: str
    candidate: str | None = None
    candidates: list[str] = []


class Environment(Strict):
    """The machine the attempt ran on."""
    python: str | None = None
    platform: str | None = None
    processor: str | None = None
    cpu_count: int | None = None
    memory_gib: Number | None = None
    gpu: str | dict[str, Any] | None = None  # filled by the parity GPU script, in its own words
    embedswap: str | None = None


class Step(Strict):
    """One step's entry in steps.json: its status, when, and what it recorded."""
    status: Literal["running", "complete", "partial", "failed", "skipped", "pending", "resumed"]
    updated: str | None = None
    detail: str | None = None
    problems: list[str] = []
    target: str | None = None
    seconds: Number | None = None
    error: str | None = None  # the exception that failed the step
    previous: dict[str, Any] | None = None  # a resumed run: the entry it replaced
    superseded: dict[str, Any] | None = None  # a step measured again: the captures moved aside (open: per step)


class TargetSettings(BaseModel):
    """A target's configuration as the user wrote it (experiment.yaml's ``targets.<name>``): the keys the report
    reads are typed; the rest stay as written (``extra="allow"``), since each kind of server has its own keys
    (routes, manifests, ports), and a key this version does not type still loads."""
    model_config = ConfigDict(extra="allow")
    kind: str | None = None
    url: str | None = None
    note: str | None = None
    lock: bool | None = None  # legacy servers only: the global lock around the model
    dtype: str | None = None


class ServerIdentity(Strict):
    """What a server said about itself during its capture (measure.identity); None where it did not say."""
    served_models: list[str] | None = None
    model: str | None = None  # echoed in an embeddings answer
    system_fingerprint: str | None = None
    headers: dict[str, str] = {}  # the headers naming its software, version or build
    routes: dict[str, Any] = {}  # open: what each version route (/version, /info, /props) answered, as it answered
    # how it was asked, not what it said: the model list's route and the embeddings request's status
    models_path: str | None = None
    status: int | None = None


class Target(Section):
    """One server: its configuration and what its target.json recorded of its start and run.

    Open (``extra="allow"``): each kind of server describes itself with its own keys (an external server its API
    shape and routes, a Kubernetes one its manifests, Dynamo its frontend and worker); the fields below are the
    ones every kind writes and the report reads."""
    model_config = ConfigDict(extra="allow")
    config: TargetSettings = TargetSettings()
    error: str | None = None
    name: str | None = None
    kind: str | None = None
    base_url: str | None = None
    discovery: str | None = None
    version: str | None = None
    commands: list[str] = []
    logs: list[str] = []
    problems: list[str] = []
    alive_at_end: bool | None = None
    start_seconds: Number | None = None
    measured_seconds: Number | None = None
    part_seconds: dict[str, Number | None] = {}
    rss_bytes: int | None = None
    rss_bytes_end: int | None = None
    rss_bytes_by_process: dict[str, int] = {}  # per process (frontend, worker)
    host_available_bytes_before_start: int | None = None
    host_available_bytes_after_start: int | None = None
    identity: ServerIdentity | None = None  # None: the server's capture holds no identity (it was not asked)
    # where ``version`` came from: the kit's launcher (``targets/*.py``), or what the server said about itself
    # (``identity``, read by measure.identity.stated_version) where the kit has none (an external server); None
    # where neither says
    version_source: Literal["kit", "server"] | None = None
    said: dict[str, str] = {}  # what the server says about itself, as the guard reads it (identity_parts, as text)
    statement: str | None = None  # the same in short: its version's part ("/version 0.32.0"), else its telling one


class SummaryBody(Strict):
    """summary.json without its ``decisions``: what :func:`embedswap.analysis.decide` reads to compute them."""
    schema_version: Literal[4]
    generated: str
    experiment: ExperimentInfo
    model: ModelInfo
    workload: WorkloadInfo
    roles: Roles
    environment: Environment | None = None
    steps: dict[str, Step] = {}
    targets: dict[str, Target] = {}
    vectors: Vectors
    contract: list[ProbeRow] | Section  # the probe rows, or why there are none
    instruction: Instruction
    long_input: LongInput = Field(default_factory=lambda: LongInput(measured=False, reason=Reason(code=ABSENT)))
    latency: Latency
    ablation: Ablation
    matryoshka: Matryoshka | None = None
    restore: Restore | None = None
    parity: Parity
    diagnosis: Diagnosis = Field(default_factory=lambda: Diagnosis(measured=False, reason=Reason(code=ABSENT)))
    ranking: Ranking
    shim: Shim
    timing: Timing = Field(default_factory=lambda: Timing(measured=False, reason=Reason(code=ABSENT)))
    capacity: Capacity | None = None  # the open-loop sweep; absent unless latency.open_loop is configured
    # keep the index or re-embed it
    index: Index = Field(default_factory=lambda: Index(measured=False, reason=Reason(code=ABSENT)))
    # unusable answers per server, by kind; a summary.json without the part reads it absent
    faults: Faults = Field(default_factory=lambda: Faults(measured=False, reason=Reason(code=ABSENT)))
    # per candidate, what its comparison is (same model or another, read against what), decided in step 03 (issue 62)
    plan: Plan = Field(default_factory=lambda: Plan(measured=False))
    # dotted paths of figures that were NaN or infinite and are stored as null (embedswap.summary.finite)
    non_finite: list[str] = []

    def target(self, name: str | None) -> Target | None:
        """One server's configuration and start record (None: not a target of this summary, or no name)."""
        return self.targets.get(name) if name is not None else None


# a ratio's figure -> the shown point's field it divides
_SHOWN_FIELD = {"p50": "p50_ms", "p99": "p99_ms", "docs_per_s": "docs_per_s"}


class Summary(SummaryBody):
    """summary.json, schema version 4."""
    decisions: Decisions

    def latency_ratio(self, name: str | None, run: str, figure: RatioFigure) -> RatioInterval | None:
        """Candidate / legacy of one latency figure (p50, p99, docs_per_s) at one operating point: the one value
        every reader prints. It is the pooled ratio with its 95 % bootstrap interval and n, stored once under
        ``decisions.latency.ratios.<name>.intervals`` (the statistic the verdicts rest on). A summary without
        per-request data has no pooled ratio; its report shows the median of the repeats throughout
        (``decisions.shown.statistic``), and the ratio is that of the two shown medians, value only
        (``statistic: median_of_repeats``), computed here and never stored. None: not paired at that point."""
        stored = self.decisions.latency.ratio(name) if name is not None else None
        entry = stored.figure(run, figure) if stored is not None else None
        shown = self.decisions.shown
        if entry is not None or shown.statistic == "pooled":
            return entry
        own, base = shown.at(name, run), shown.at(self.roles.legacy, run)
        top = getattr(own, _SHOWN_FIELD[figure]) if own is not None else None
        bottom = getattr(base, _SHOWN_FIELD[figure]) if base is not None else None
        if top is None or not bottom:
            return None
        return RatioInterval(value=top / bottom, low=None, high=None, n=[None, None], direction="missing",
                             statistic="median_of_repeats")


def validate_summary(summary: dict[str, Any], source: str = "summary.json") -> Summary:
    """The typed summary; a summary of another shape raises SummaryError naming the first wrong fields."""
    return _validate(Summary, summary, source)


def validate_body(summary: dict[str, Any], source: str = "summary.json") -> SummaryBody:
    """The typed summary without its ``decisions`` (ignored if present), to compute them from; errors as in
    :func:`validate_summary`."""
    return _validate(SummaryBody, {k: v for k, v in summary.items() if k != "decisions"}, source)


def _validate(model: type[SummaryBody], summary: dict[str, Any], source: str) -> Any:
    try:
        return model.model_validate(summary)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise SummaryError(f"{source} does not fit the summary model (schema {summary.get('schema_version')}): "
                           f"{problems}") from None
