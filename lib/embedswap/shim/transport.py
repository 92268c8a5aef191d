"""``ShimTransport``: the shim as an httpx transport, so the official ``openai`` client (or any httpx-based client)
goes through it without code changes (see ``embedswap.shim``'s docstring for why a transport)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from embedswap.shim.client import EmbeddingShim
from embedswap.shim.settings import ShimConfig
from embedswap.shim.shapes import USAGE_COUNTED, USAGE_HEADER
from embedswap.shim.text import encode_base64
from embedswap.wire.api_shapes import ApiShape

_HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})


def _json_response(status: int, payload: Any, extra_headers: dict[str, str] | None = None) -> httpx.Response:
    headers = {"content-type": "application/json", "x-should-retry": "false", **(extra_headers or {})}
    return httpx.Response(status, headers=headers, content=json.dumps(payload, ensure_ascii=False).encode())


def _error_payload(message: str, status: int, param: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if 400 <= status < 500 else "api_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


class ShimTransport(httpx.BaseTransport):
    """An httpx transport that sends ``POST .../embeddings`` through an ``EmbeddingShim`` to ``upstream_base_url``.

    Other requests (``GET /v1/models``, ...) are forwarded unchanged. The request's own headers (the SDK's
    ``Authorization``) travel upstream. Every answer carries ``x-should-retry: false``: the shim has already
    retried what may be retried (see the module docstring). ``api_shape``/``embeddings_path``: the upstream's shape
    and route (a TEI server: ``"tei"``, ``/embed``); the caller keeps calling ``POST /v1/embeddings`` and gets
    OpenAI's answer, with ``usage`` counted by the shim where the config says so (labelled by ``USAGE_HEADER``).
    """

    def __init__(self, config: ShimConfig, upstream_base_url: str, *, model: str = "embedder",
                 headers: dict[str, str] | None = None, verify_tls: bool = True,
                 inner: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep,
                 api_shape: ApiShape = "openai", embeddings_path: str | None = None) -> None:
        self.shim = EmbeddingShim(upstream_base_url, config, model, headers=headers, verify_tls=verify_tls,
                                  transport=inner, sleep=sleep, api_shape=api_shape, embeddings_path=embeddings_path)

    def close(self) -> None:
        self.shim.close()

    @staticmethod
    def _forward_headers(request: httpx.Request) -> dict[str, str]:
        return {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS | {"content-type"}}

    def _upstream_path(self, path: str) -> str:
        index = path.find("/v1/")
        return path[index:] if index >= 0 else path

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()
        headers = self._forward_headers(request)
        if request.method == "POST" and request.url.path.rstrip("/").endswith("/embeddings"):
            try:
                body = json.loads(content)
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = None
            if isinstance(body, dict):
                return self._embeddings(body, headers)
        upstream = self.shim._http.request(
            request.method, self._upstream_path(request.url.path), params=request.url.params, content=content or None,
            headers={**headers, **({"content-type": request.headers["content-type"]}
                                   if "content-type" in request.headers else {})})
        upstream.read()
        headers = {**_passthrough_headers(upstream), "x-should-retry": "false"}
        return httpx.Response(upstream.status_code, headers=headers, content=upstream.content)

    def _embeddings(self, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        answer, upstream = self.shim.exchange(body, headers)
        if isinstance(upstream, Exception):
            raise upstream  # the SDK reports a connection error, as without the shim
        if answer.status == 200 and answer.ok and answer.vectors is not None:
            as_base64 = answer.extra["shim"].get("requested_encoding") == "base64"
            payload = {
                "object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": encode_base64(v) if as_base64 else v}
                         for i, v in enumerate(answer.vectors)],
                "model": answer.model or body.get("model"),
                # the server's own count, or null where it sent none; the model tokenizer's count only where the
                # config says usage "counted" (and then labelled by the header): never an unlabelled made-up number
                "usage": (None if answer.prompt_tokens is None else
                          {"prompt_tokens": answer.prompt_tokens, "total_tokens": answer.prompt_tokens}),
            }
            counted = answer.extra["shim"].get("usage") == "counted"
            return _json_response(200, payload, {USAGE_HEADER: USAGE_COUNTED} if counted else None)
        if upstream is None or answer.extra["shim"].get("local"):  # answered by the shim itself
            return _json_response(answer.status, _error_payload(answer.error or "invalid request", answer.status,
                                                                answer.extra["shim"].get("param")))
        if upstream.status_code == 200:  # a 200 whose body is unusable (malformed, NaN, ragged)
            return _json_response(502, _error_payload(f"upstream answered 200 with an unusable body: {answer.error}",
                                                      502))
        return httpx.Response(upstream.status_code, headers={**_passthrough_headers(upstream),
                                                             "x-should-retry": "false"}, content=upstream.content)


def _passthrough_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items()
            if k.lower() not in _HOP_HEADERS | {"content-encoding", "x-should-retry"}}
