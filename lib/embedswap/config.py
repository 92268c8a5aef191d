"""The experiment model: everything one run needs, loaded from ``experiment.yaml`` and validated.

A wrong key is reported as one error that names the key's full path (``targets.vllm.prot``) and, where it can,
what was probably meant. Relative paths in the file are relative to the file's own folder.
"""

from __future__ import annotations

import difflib
import re
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator,
                      model_validator)

from embedswap.models import EMBEDDED_DEFAULT
from embedswap.redact import NOT_SECRET_HEADERS, REDACTED, is_secret_name

CONFIG_FILENAME = "experiment.yaml"
DEFAULT_QUERY_TASK = "Given a web search query, retrieve relevant passages that answer the query"
DEFAULT_QUERY_TEMPLATE = "Instruct: {task}\nQuery:{query}"


class ConfigError(ValueError):
    """experiment.yaml is missing, unreadable, or has a wrong key or value. The message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Strict):
    # package:MODULE (a model shipped in a PyPI package), a local folder, or an HF id in the offline cache.
    path: str = EMBEDDED_DEFAULT
    served_name: str = "embedder"
    query_task: str = DEFAULT_QUERY_TASK
    query_prompt_template: str = DEFAULT_QUERY_TEMPLATE
    # The legacy server truncates longer inputs to this many tokens (capped by the model's own maximum).
    max_input_tokens: int = Field(1024, ge=1)

    @field_validator("query_prompt_template")
    @classmethod
    def _template_has_fields(cls, value: str) -> str:
        if "{query}" not in value:
            raise ValueError("must contain '{query}' (and usually '{task}')")
        return value


class WorkloadConfig(_Strict):
    documents: str
    queries: str | None = None
    qrels: str | None = None
    batch_size: int = Field(8, ge=1)
    repeats: int = Field(3, ge=1)


CaptureKind = Literal["workload", "queries", "probes", "latency"]
ALL_CAPTURES: list[CaptureKind] = ["workload", "queries", "probes", "latency"]


class _TargetBase(_Strict):
    host: str = "127.0.0.1"
    # What to capture while this server is up. A variant used only for parity (another dtype) needs
    # ["workload"]; one for a lock ablation needs ["latency"].
    capture: list[CaptureKind] = Field(default_factory=lambda: list(ALL_CAPTURES), min_length=1)
    port: int = Field(..., ge=1, le=65535)
    startup_timeout_s: float = Field(600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    # Free-form note that ends up in the report's setup section.
    note: str | None = None

    @field_serializer("env")
    def _env_without_secrets(self, env: dict[str, str]) -> dict[str, str]:
        # what summary.json and the report record of the config: HF_TOKEN and the like as [redacted]
        return {k: REDACTED if is_secret_name(k) else v for k, v in env.items()}


class LegacyTarget(_TargetBase):
    kind: Literal["legacy"]
    python: str | None = None  # interpreter for the server; default: the kit's own
    lock: bool = True
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    extra_args: list[str] = Field(default_factory=list)


class VllmTarget(_TargetBase):
    kind: Literal["vllm"]
    python: str | None = None  # default: $EMBEDSWAP_ENGINE_PYTHON, else the project's .venvs/engine
    dtype: str | None = None  # None: vLLM's default (fp16 for fp32 pooling checkpoints on CPU)
    max_model_len: int | None = None
    extra_args: list[str] = Field(default_factory=list)


class ExternalTarget(_TargetBase):
    kind: Literal["external"]
    url: str
    port: int | None = None  # type: ignore[assignment]  # part of the URL instead
    api_key_env: str | None = None  # name of the environment variable holding the key (never the key itself)
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    # issue 16: any server's routes and API shape (embedswap.api_shapes). `url` may end in /v1 or not; the
    # paths are from the server's root (default: the shape's own, e.g. /v1/embeddings, /embed, /api/embed).
    api_shape: Literal["openai", "cohere-v2", "tei", "ollama"] = "openai"
    embeddings_path: str | None = None
    health_path: str | None = None  # a GET that answers 200 once the server is up (default: the shape's)
    health_check: bool = True  # false: the server has no such route; it is taken as up, the first request tells

    @field_validator("embeddings_path", "health_path")
    @classmethod
    def _route(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "://" in value or any(c.isspace() for c in value)):
            raise ValueError(f"must be a URL path from the server's root, starting with '/' (e.g. /embed), "
                             f"got {value!r}")
        return value

    @model_validator(mode="after")
    def _health_path_needs_check(self) -> ExternalTarget:
        if self.health_path is not None and not self.health_check:
            raise ValueError("'health_path' is set but 'health_check' is false: drop one of them")
        return self

    @field_serializer("headers")
    def _headers_without_values(self, headers: dict[str, str]) -> dict[str, str]:
        # every value of headers: may be a credential (embedswap.redact registers them all, too)
        return {k: v if k.lower() in NOT_SECRET_HEADERS else REDACTED for k, v in headers.items()}


class DynamoTarget(_TargetBase):
    # NVIDIA Dynamo: an OpenAI frontend (port) + a vLLM embedding worker, found through file discovery.
    kind: Literal["dynamo"]
    python: str | None = None  # default: $EMBEDSWAP_ENGINE_PYTHON, else the project's .venvs/engine
    dtype: str | None = None  # None: vLLM's default (fp16 for fp32 pooling checkpoints on CPU)
    max_model_len: int | None = None
    extra_args: list[str] = Field(default_factory=list)  # appended to the worker's command
    frontend_args: list[str] = Field(default_factory=list)  # appended to the frontend's command


class KubernetesTarget(_TargetBase):
    # The article's DynamoGraphDeployment (one Frontend + one embedding worker), rendered into the attempt;
    # applied with kubectl only when a cluster is configured (apply: true), then reached at `url`.
    kind: Literal["kubernetes"]
    model: str | None = None  # model as the worker pod sees it; default: model.path
    image: str = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.2"
    namespace: str = "default"
    deployment_name: str | None = None  # metadata.name; default: derived from the target's name
    max_model_len: int = Field(1024, ge=1)
    gpu_memory_utilization: float = Field(0.4, gt=0, le=1)
    gpus: int = Field(1, ge=0)
    extra_args: list[str] = Field(default_factory=list)  # appended to the worker's args
    apply: bool = False
    url: str | None = None  # the frontend as reachable from here (port-forward, ingress), e.g. http://127.0.0.1:8000
    port: int | None = None  # type: ignore[assignment]  # part of the URL instead
    startup_timeout_s: float = Field(900.0, gt=0)

    @model_validator(mode="after")
    def _url_when_applied(self) -> KubernetesTarget:
        if self.apply and not self.url:
            raise ValueError("'apply: true' needs 'url' (where the frontend is reachable from this machine)")
        return self


Target = Annotated[
    LegacyTarget | VllmTarget | ExternalTarget | DynamoTarget | KubernetesTarget, Field(discriminator="kind")
]


class SequencingConfig(_Strict):
    # The article's same-hardware swap: the legacy server is stopped before a candidate starts.
    stop_legacy_before_candidates: bool = True
    # As the article did at the end: bring the legacy server back, and check it answers as it did before.
    restore_legacy: bool = False


class MatryoshkaConfig(_Strict):
    # `dimensions` with and without vLLM's override: `variant` is `base` started with
    # --hf-overrides '{"is_matryoshka": true}' (the article named it, untested: 미실측).
    base: str
    variant: str


class LatencyConfig(_Strict):
    sequential_requests: int = Field(30, ge=1)
    concurrent_requests: int = Field(40, ge=1)
    concurrency: int = Field(4, ge=1)
    repeats: int = Field(3, ge=1)
    warmup_requests: int = Field(3, ge=0)
    timeout_s: float = Field(60.0, gt=0)
    # Concurrency sweep, run after the two article points (run names sweep_c<C>); an empty list disables it.
    sweep: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1, 2, 4, 8, 16])
    sweep_requests: int = Field(24, ge=1)  # requests per sweep point and repeat
    sweep_repeats: int = Field(1, ge=1)
    # Documents the latency requests are cut from (issue 20): a seeded sample of the corpus in file order, so
    # a 100k corpus does not build 100k request bodies for 30 + 40 requests; None: the whole corpus.
    sample: int | None = Field(None, ge=1)


class ProbeSpec(_Strict):
    name: str
    description: str = ""
    # Fields merged into the plain request body (JSON); or a raw body sent as is.
    body: dict[str, Any] | None = None
    raw_body: str | None = None
    query: bool = False  # the probe's text is a workload query rather than a document
    # The route it is sent to. Answers in the OpenAI shape (`data[].embedding`) or Cohere's
    # (`embeddings.float`, as vLLM's `/v2/embed`) are both read.
    path: str = "/v1/embeddings"
    # Compare the candidate's answer with the legacy server's answer to this other probe instead of its own:
    # for a route the legacy server does not have (e.g. `/v2/embed` compared with `input_type_query`).
    compare_to: str | None = None

    @model_validator(mode="after")
    def _one_body(self) -> ProbeSpec:
        if self.body is not None and self.raw_body is not None:
            raise ValueError("give either 'body' or 'raw_body', not both")
        if not self.path.startswith("/") or any(c.isspace() for c in self.path):
            raise ValueError(f"path must be a URL path starting with '/', got {self.path!r}")
        return self


class ContractConfig(_Strict):
    # Names from the built-in catalogue (embedswap.contract.CATALOGUE); "all" means every built-in probe.
    probes: list[str] | Literal["all"] = "all"
    custom: list[ProbeSpec] = Field(default_factory=list)


class ParityBackendSpec(_Strict):
    """An extra backend step 05 runs itself (offline, no server), gated against the golden reference.

    transformers: plain transformers with the model's own pooling, in ``dtype`` on ``device`` (cpu, cuda, ...).
    vllm-offline: vLLM's offline pooling runner in the engine environment; ``dtype: auto`` is vLLM's own
    default (fp16 for fp32 checkpoints). vLLM picks its platform itself: the row records the device it used.
    """

    kind: Literal["transformers", "vllm-offline"]
    dtype: Literal["float32", "bfloat16", "float16", "auto"]
    device: str = "cpu"
    name: str | None = None  # the row's backend name; default "<kind>-<dtype>" (plus "-<device>" unless cpu)
    timeout_s: float = Field(1800.0, gt=0)

    @model_validator(mode="after")
    def _auto_for_vllm_only(self) -> ParityBackendSpec:
        if self.kind == "transformers" and self.dtype == "auto":
            raise ValueError("dtype 'auto' is vLLM's default; for transformers give float32, bfloat16 or float16")
        return self

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return f"{self.kind}-{self.dtype}" + ("" if self.device == "cpu" else f"-{self.device}")


class ParityChecks(_Strict):
    """Article 003's parity matrix in step 05 (embedswap.parity_checks); each check on unless set false.

    A check the model does not allow (chunked prefill for mean/CLS pooling or an encoder) still gives its row, with
    the reason instead of figures. ``tensor_parallel`` is opt-in: two engine workers on a 2-core CPU are slow.
    """

    batch_invariance: bool = True  # each text alone vs in batches of 8 and 32: legacy padding and the engine
    dtypes: list[Literal["float32", "bfloat16"]] = Field(default_factory=lambda: ["float32", "bfloat16"],
                                                          min_length=1)
    texts: int = Field(32, ge=1)  # the first N workload documents
    engine: bool = True  # the engine rows (vLLM's offline runner in the engine environment)
    long_context: bool = True  # inputs near max_model_len, chunked prefill off and on
    max_model_len: int | None = Field(None, gt=0)  # default: the model's limit, at most 8192
    chunk_tokens: int = Field(512, gt=0)  # max_num_batched_tokens with chunked prefill on
    tensor_parallel: bool = False
    cold_start: bool = True  # start-to-healthy and first request vs steady, from each server's captures
    timeout_s: float = Field(1800.0, gt=0)  # per engine start


class ParityConfig(_Strict):
    text_threshold: float = Field(0.999, gt=0, le=1)
    multimodal_threshold: float = Field(0.995, gt=0, le=1)
    # The matrix (long context, chunked prefill, batch invariance per dtype, TP, cold start); absent: not run.
    checks: ParityChecks | None = None

    @field_validator("checks", mode="before")
    @classmethod
    def _checks_switch(cls, value: Any) -> Any:
        """``checks: true`` runs every default check, ``checks: false`` none."""
        if value is True:
            return {}
        if value is False:
            return None
        return value
    # Extra offline backends (e.g. a dtype sweep), each one more row of the gate; none by default.
    backends: list[ParityBackendSpec] = Field(default_factory=list)
    # The fp32 reference embeds a sample of the documents, stratified by language (issue 20: ~17 docs/s on
    # this CPU, 20 minutes for 20k documents); a corpus this size or smaller is used whole.
    sample: int = Field(512, ge=1)

    @field_validator("backends")
    @classmethod
    def _unique_names(cls, value: list[ParityBackendSpec]) -> list[ParityBackendSpec]:
        labels = [spec.label for spec in value]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"backend name {duplicates[0]!r} appears twice: give each one a distinct 'name'")
        return value


class PublishConfig(_Strict):
    # the blog series the post belongs to (the article is one post of a numbered series) and its part number
    series: str | None = None
    part: int | None = Field(None, ge=1)
    # extra tags beside the ones the summary gives (embedswap, the engines)
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _part_needs_series(self) -> "PublishConfig":
        if self.part is not None and not self.series:
            raise ValueError("report.publish.part is set but report.publish.series is not: a part number "
                             "belongs to a series (set report.publish.series: NAME)")
        return self


class ReportConfig(_Strict):
    # ko (the article's language), en, ja, zh (the article's Japanese and Chinese versions); the first one is
    # also written as report.md / report.html
    languages: list[Literal["ko", "en", "ja", "zh"]] = Field(default_factory=lambda: ["ko", "en"], min_length=1)
    title: str | None = None
    # front matter of the blog draft (report/front_matter.py): series name and part, extra tags
    publish: PublishConfig = Field(default_factory=PublishConfig)


class Experiment(_Strict):
    name: str
    date: date
    description: str = ""
    model: ModelConfig = Field(default_factory=ModelConfig)
    workload: WorkloadConfig
    # "packaged" (the notebooks shipped with the kit) or a folder of your own copies, relative to this file
    notebooks: str = "packaged"
    targets: dict[str, Target]
    legacy: str = "legacy"
    candidates: list[str] = Field(..., min_length=1)
    # Variants of the legacy server measured right after it in step 01 (e.g. without its global lock), to test
    # the article's unmeasured explanation of the latency gap.
    ablations: list[str] = Field(default_factory=list)
    matryoshka: MatryoshkaConfig | None = None
    sequencing: SequencingConfig = Field(default_factory=SequencingConfig)
    latency: LatencyConfig = Field(default_factory=LatencyConfig)
    contract: ContractConfig = Field(default_factory=ContractConfig)
    parity: ParityConfig = Field(default_factory=ParityConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)

    @field_validator("workload", mode="before")
    @classmethod
    def _sample_workload(cls, value: Any) -> Any:
        """`workload: sample`: the sample workload shipped with the kit (documents, queries, judgements)."""
        if value == "sample":
            return {kind: f"sample:{kind}.jsonl" for kind in ("documents", "queries", "qrels")}
        if isinstance(value, str):
            raise ValueError(f"'{value}' is not a workload: write 'sample' (the packaged one) or a mapping with "
                             "documents, queries, qrels")
        return value

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", value):
            raise ValueError("must be a slug: lowercase letters, digits and '-'")
        return value

    @model_validator(mode="after")
    def _roles_exist(self) -> Experiment:
        roles = [("legacy", self.legacy)] + [("candidates", c) for c in self.candidates]
        if self.matryoshka:
            roles += [("matryoshka.base", self.matryoshka.base), ("matryoshka.variant", self.matryoshka.variant)]
        for role, name in roles + [("ablations", a) for a in self.ablations]:
            if name not in self.targets:
                raise ValueError(f"{role}: '{name}' is not one of targets ({', '.join(self.targets)})")
        if self.legacy in self.candidates:
            raise ValueError(f"candidates: '{self.legacy}' is the legacy target")
        return self

    @property
    def primary_candidate(self) -> str:
        return self.candidates[0]

    def target_order(self) -> list[str]:
        """The servers compared in the report (ablation variants are reported apart)."""
        return [self.legacy, *self.candidates]


_TARGET_KINDS: dict[str, type[BaseModel]] = {
    "legacy": LegacyTarget,
    "vllm": VllmTarget,
    "external": ExternalTarget,
    "dynamo": DynamoTarget,
    "kubernetes": KubernetesTarget,
}


def _clean_location(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """pydantic puts a discriminated union's tag in the path (targets.vllm.vllm.port): drop it."""
    if len(loc) >= 3 and loc[0] == "targets" and loc[2] in _TARGET_KINDS:
        return loc[:2] + loc[3:]
    return loc


def _known_fields(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The field names allowed where ``loc`` points (used to suggest a correction for an unknown key)."""
    current: Any = Experiment
    for i, part in enumerate(loc):
        if current is None or isinstance(part, int):
            return []
        if current is Experiment and part == "targets" and i + 1 < len(loc):
            kind = ((data.get("targets") or {}).get(loc[i + 1]) or {}).get("kind") if isinstance(data, dict) else None
            if i + 2 == len(loc):
                return list(_TARGET_KINDS[kind].model_fields) if kind in _TARGET_KINDS else []
            current = _TARGET_KINDS.get(kind)
            continue
        if i > 0 and loc[i - 1] == "targets":
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        annotation = field.annotation
        current = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return list(getattr(current, "model_fields", {})) if current is not None else []


def _format_error(error: dict[str, Any], data: Any) -> str:
    loc = _clean_location(tuple(error["loc"]))
    key = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _known_fields(loc[:-1], data), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown key '{key}'{hint}"
    if error["type"] == "missing":
        return f"missing key '{key}'"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:  # a rule across keys (e.g. candidates must name targets): its message names them
        return message
    return f"key '{key}': {message}"


def parse_experiment(data: Any, source: str = CONFIG_FILENAME) -> Experiment:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys at the top level")
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = _format_error(errors[0], data)
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {first}{more}") from None


def load_experiment(experiment_dir: str | Path) -> Experiment:
    path = Path(experiment_dir) / CONFIG_FILENAME
    if not path.exists():
        raise ConfigError(f"{path}: not found (create one with `embedswap new SLUG`)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_experiment(data, source=str(path))


def resolve_path(experiment_dir: str | Path, value: str) -> Path:
    """Relative paths in experiment.yaml are relative to the folder holding it; ``sample:NAME`` is a file of the
    packaged sample workload."""
    from embedswap.paths import resolve_sample

    sample = resolve_sample(value)
    if sample is not None:
        return sample
    path = Path(value).expanduser()
    return path if path.is_absolute() else (Path(experiment_dir) / path).resolve()
