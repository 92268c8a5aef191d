"""experiment.yaml's other sections: model, workload, sequencing, latency, contract, parity, report."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from embedswap.models import EMBEDDED_DEFAULT
from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE, _Strict
from embedswap.config.open_loop import OpenLoopConfig


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




class SequencingConfig(_Strict):
    # The article's same-hardware swap: the legacy server is stopped before a candidate starts.
    stop_legacy_before_candidates: bool = True
    # As the article did at the end: bring the legacy server back, and check it answers as it did before. On by
    # default: with restore_latency it is the A-B-A design that bounds the host's drift across the candidates.
    restore_legacy: bool = True
    # With restore_legacy: measure the restored legacy server's latency again (the article's two points, no sweep);
    # the change between its two measurements (A-B-A), beyond its interval, widens every latency ratio's interval.
    restore_latency: bool = True
    # Repeats of that second measurement. It is a gauge of the host's drift, not a result: one repeat of the
    # article's two points (30 + 40 requests) gives the A-B-A ratio its bootstrap interval (stratified by repeat,
    # so one is enough), and the three of `latency.repeats` cost a lean demo 80 s more on 2 cores (issue 61).
    restore_repeats: int = Field(1, ge=1)
    # Servers that can answer at once (stop_legacy_before_candidates: false): each candidate's article points are
    # measured in blocks alternating with the legacy server's (one repeat a block, a seeded order), so the host's
    # drift reaches both sides of a ratio alike and cancels instead of being bounded.
    interleave: bool = False

    @model_validator(mode="after")
    def _interleave_needs_both_up(self) -> SequencingConfig:
        if self.interleave and self.stop_legacy_before_candidates:
            raise ValueError("sequencing.interleave needs sequencing.stop_legacy_before_candidates: false (both "
                             "servers answer at once, in alternating blocks)")
        return self


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
    # Documents the latency requests are cut from: a seeded sample of the corpus in file order, so
    # a 100k corpus does not build 100k request bodies for 30 + 40 requests; None: the whole corpus.
    sample: int | None = Field(None, ge=1)
    # Open-loop rate sweep after the closed-loop points (embedswap.config.open_loop); absent: not run.
    open_loop: OpenLoopConfig | None = None
    traffic: float | None = Field(None, gt=0)  # peak requests/s the swap must carry: replicas are sized for it
    retry_after: Literal["honour", "count"] = "count"  # a 429: wait as told and retry, or count it as failed


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
    # How many times the identical request is sent (None: contract.repeats): answers that differ between them are
    # the verdict `nondeterministic`.
    repeats: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one_body(self) -> ProbeSpec:
        if self.body is not None and self.raw_body is not None:
            raise ValueError("give either 'body' or 'raw_body', not both")
        if not self.path.startswith("/") or any(c.isspace() for c in self.path):
            raise ValueError(f"path must be a URL path starting with '/', got {self.path!r}")
        return self


class ContractConfig(_Strict):
    # Names from the built-in catalogue (embedswap.measure.contract.CATALOGUE); "all" means every built-in probe.
    probes: list[str] | Literal["all"] = "all"
    custom: list[ProbeSpec] = Field(default_factory=list)
    # Each probe is sent this many times (identical requests): answers that differ among themselves are an
    # intermittent fault of the server (verdict `nondeterministic`), told apart from a systematic difference.
    repeats: int = Field(3, ge=1)
    # probes sent once whatever `repeats` says: long to answer (512 inputs, an input far over the token limit)
    not_repeated: list[str] = Field(default_factory=lambda: ["large_batch", "over_long_input"])


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
    """Article 003's parity matrix in step 05 (embedswap.parity.checks); each check on unless set false.

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


class ParityMultimodal(_Strict):
    """Multimodal parity in step 05 (embedswap.parity.multimodal_step): a CLIP model served by vLLM (and by the
    legacy server, which takes images in vLLM's request shape), captions through ``input`` and images through
    ``messages`` (``data:image/png;base64``), each gated against transformers fp32 ``get_text_features`` /
    ``get_image_features`` at ``parity.multimodal_threshold``.

    ``model``: ``build:tiny-clip`` (built offline, deterministic) or a CLIP folder / HF id in the local cache.
    ``images``: ``generated`` draws the image set with Pillow at run time from a fixed recipe (4 colours x 4 shapes,
    32 px; byte-identical everywhere, so nothing binary is committed).
    """

    model: str = "build:tiny-clip"
    images: Literal["generated"] = "generated"
    servers: list[Literal["vllm", "legacy"]] = Field(default_factory=lambda: ["vllm", "legacy"], min_length=1)
    timeout_s: float = Field(900.0, gt=0)  # per server start


class ParityConfig(_Strict):
    text_threshold: float = Field(0.999, gt=0, le=1)
    multimodal_threshold: float = Field(0.995, gt=0, le=1)
    # Multimodal parity (a CLIP model's text and image features); absent: not measured (the reason says why).
    multimodal: ParityMultimodal | None = None
    # The matrix (long context, chunked prefill, batch invariance per dtype, TP, cold start); absent: not run.
    checks: ParityChecks | None = None

    @field_validator("multimodal", "checks", mode="before")
    @classmethod
    def _switch(cls, value: Any) -> Any:
        """``true`` runs the part with its defaults (``multimodal``: the tiny CLIP; ``checks``: every default
        check), ``false`` nothing."""
        if value is True:
            return {}
        if value is False:
            return None
        return value
    # Extra offline backends (e.g. a dtype sweep), each one more row of the gate; none by default.
    backends: list[ParityBackendSpec] = Field(default_factory=list)
    # The fp32 reference embeds a sample of the documents, stratified by language (~17 docs/s on
    # this CPU, 20 minutes for 20k documents); a corpus this size or smaller is used whole.
    sample: int = Field(512, ge=1)
    # vLLM's transformers implementation as one more witness of the reference (parity/witnesses.py): ``auto``
    # runs it when a target is served by vLLM or Dynamo (the engine environment is there, and it is the engine
    # the gate judges); one engine start, ~15-20 s on 2 CPU cores for MiniLM.
    engine_witness: bool | Literal["auto"] = "auto"

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
