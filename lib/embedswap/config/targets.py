"""experiment.yaml's ``targets``: one model per kind of server (legacy, vLLM, external, Dynamo, Kubernetes,
llama.cpp)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_serializer, field_validator, model_validator

from embedswap.redact import NOT_SECRET_HEADERS, REDACTED, is_secret_name
from embedswap.config.base import _Strict


CaptureKind = Literal["workload", "queries", "probes", "latency"]
ALL_CAPTURES: list[CaptureKind] = ["workload", "queries", "probes", "latency"]
NO_LOCAL_MODEL = "none"  # targets.<name>.model: the server's weights have no local copy


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
    # The model this server serves when it is not experiment.yaml's ``model`` (a model migration, issue 57): a local
    # folder or ``package:``/hub spec (embedswap.models), the name the server serves it under, or ``none`` for a
    # server whose weights have no local copy. Unset: the experiment's model. Said here, it is evidence of "another
    # model" that needs no measurement; the kit also finds it unsaid, from the vectors (summary.sections.models).
    model: str | None = None
    # `usage` in the client migration shim's answers where this server sends none (TEI's shape has no field for it):
    # "server" leaves it null; "counted" asks the shim to count it with the model's tokenizer, labelled as its own,
    # granted only where that count matches the legacy server's on the probe captures (shim.settings.usage_check)
    shim_usage: Literal["server", "counted"] = "server"

    @field_validator("model")
    @classmethod
    def _model_spec(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name a model (a folder, a package: spec, its served name) or be 'none'")
        return value.strip() if value is not None else None

    def serves_local_copy(self) -> bool:
        """Whether ``model`` names weights this machine can load (``none``: the server's weights are not local)."""
        return self.model is not None and self.model.lower() != NO_LOCAL_MODEL

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
    # any server's routes and API shape (embedswap.wire.api_shapes). `url` may end in /v1 or not; the
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


class LlamaCppTarget(_TargetBase):
    # llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) serving the model converted to GGUF with
    # llama.cpp's own converter at ``gguf_type`` (embedswap.targets.llamacpp)
    kind: Literal["llamacpp"]
    python: str | None = None  # default: $EMBEDSWAP_LLAMACPP_PYTHON, else the project's .venvs/llamacpp
    gguf_type: Literal["f32", "f16", "q8_0"] = "f32"
    n_ctx: int | None = None  # None: the model's own positions (llama.cpp's default for an embedding model)
    extra_args: list[str] = Field(default_factory=list)


class KubernetesTarget(_TargetBase):
    # The article's DynamoGraphDeployment (one Frontend + one embedding worker), rendered into the attempt;
    # applied with kubectl only when a cluster is configured (apply: true), then reached at `url`.
    kind: Literal["kubernetes"]
    model: str | None = None  # model as the worker pod sees it; default: model.path (another one: issue 57)
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
    LegacyTarget | VllmTarget | ExternalTarget | DynamoTarget | KubernetesTarget | LlamaCppTarget,
    Field(discriminator="kind"),
]




_TARGET_KINDS: dict[str, type[BaseModel]] = {
    "legacy": LegacyTarget,
    "vllm": VllmTarget,
    "external": ExternalTarget,
    "dynamo": DynamoTarget,
    "kubernetes": KubernetesTarget,
    "llamacpp": LlamaCppTarget,
}
