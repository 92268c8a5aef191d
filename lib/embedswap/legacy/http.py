"""The legacy server's HTTP surface: the OpenAI embeddings request and answer shapes, the error answers, and the
two pure-ASGI middlewares (body size limit, one log line per request)."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any, Literal

from fastapi.responses import Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StringConstraints
from starlette.types import ASGIApp, Message, Receive, Scope, Send

OWNED_BY = "embedswap-legacy"


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
        await self.app(scope, replay_body(receive, b"".join(chunks)), send)

    async def _reject(self, scope: Scope, send: Send) -> None:
        response = _error_response(413, f"request body exceeds {self.max_body_bytes} bytes", code="body_too_large")
        await response(scope, _never_receive, send)


def replay_body(receive: Receive, body: bytes) -> Receive:
    """A ``receive`` that hands the already-read ``body`` once, then defers to the real one (a middleware that
    read the request passes it on unchanged)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


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
