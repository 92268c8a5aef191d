"""One httpx client for an embeddings route: raw request/response records and base64 decoding.

Requests are OpenAI-style (``/v1/embeddings``) by default; a target of another API shape (``embedswap.wire.api_shapes``:
cohere-v2, tei, ollama) gets its requests in its own shape at its own route. Answers of every shape are read:
OpenAI's ``data[]``, Cohere's (``{"embeddings": {"float": [[...]]}, "meta": {"billed_units": ...}}``, as vLLM's
``/v2/embed`` writes them), TEI's bare ``[[...]]`` and Ollama's ``{"embeddings": [[...]]}``.

The client never raises on an HTTP error: every answer (or transport failure) becomes an ``EmbeddingResponse``
record, because a status code or an error text is itself a finding of the experiment.
"""

from __future__ import annotations

import base64
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from embedswap.wire.answer_faults import BAD_INDEX, LENGTHS, MALFORMED, NON_FINITE, STALE, stale
from embedswap.wire.api_shapes import EMBEDDINGS_PATHS, NotApplicable, request_body
from embedswap.redact import register_headers, register_secret

ERROR_TEXT_LIMIT = 500


@dataclass
class EmbeddingResponse:
    status: int  # HTTP status; 0 when no answer came (connection refused, timeout)
    latency_ms: float
    vectors: list[list[float]] | None = None
    indices: list[int] | None = None
    prompt_tokens: int | None = None
    encoding: str | None = None  # "float" or "base64": what the server actually returned
    error: str | None = None
    model: str | None = None
    shape: str = "openai"  # openai (data[].embedding), cohere (embeddings.float), tei ([[...]]), ollama (embeddings)
    extra: dict[str, Any] = field(default_factory=dict)
    # the first try of a request sent again after a stale keep-alive connection (status, error, latency_ms)
    stale_retry: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None

    def as_array(self) -> np.ndarray:
        if self.vectors is None:
            raise ValueError(f"no vectors in this response (status {self.status}: {self.error})")
        return np.asarray(self.vectors, dtype=np.float32)

    def record(self, include_vectors: bool = False) -> dict[str, Any]:
        """A JSON-ready record for a capture file."""
        out: dict[str, Any] = {
            "status": self.status,
            "latency_ms": round(self.latency_ms, 3),
            "prompt_tokens": self.prompt_tokens,
            "encoding": self.encoding,
            "n_vectors": None if self.vectors is None else len(self.vectors),
            "dim": None if not self.vectors else len(self.vectors[0]),
            "indices": self.indices,
            # data[] came back in index order 0..n-1 (a reordered answer is re-sorted by index, and flagged here)
            "index_order_ok": None if self.indices is None else self.indices == list(range(len(self.indices))),
            "error": self.error,
            "model": self.model,  # as echoed: checked against the model asked for (measure.request_checks)
        }
        if self.shape != "openai":
            out["shape"] = self.shape
        if self.stale_retry is not None:
            out["stale_retry"] = self.stale_retry
        if include_vectors:
            out["vectors"] = self.vectors
        return out


def not_applicable_response(exc: NotApplicable) -> EmbeddingResponse:
    """The record of a request the target's API shape cannot express: nothing was sent."""
    answer = EmbeddingResponse(status=0, latency_ms=0.0, error=f"not applicable: {exc}", shape=exc.shape)
    answer.extra["not_applicable"] = {"shape": exc.shape, "field": exc.field}
    return answer


def decode_base64_embedding(text: str) -> list[float]:
    """OpenAI-style base64: little-endian float32 (vLLM writes native order, little-endian on x86/ARM)."""
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float64).tolist()


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:ERROR_TEXT_LIMIT]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or json.dumps(error, ensure_ascii=False)
            return str(message)[:ERROR_TEXT_LIMIT]
        return str(error)[:ERROR_TEXT_LIMIT]
    return json.dumps(body, ensure_ascii=False)[:ERROR_TEXT_LIMIT]


def parse_response(response: httpx.Response, latency_ms: float) -> EmbeddingResponse:
    """Turn an HTTP answer into a record; malformed 200s are recorded as errors, not trusted."""
    if response.status_code != 200:
        return EmbeddingResponse(status=response.status_code, latency_ms=latency_ms, error=_error_text(response))
    try:
        body = response.json()
        if isinstance(body, dict) and "data" not in body and isinstance(body.get("embeddings"), dict):
            return _parse_cohere(body, latency_ms)
        if isinstance(body, list) or (isinstance(body, dict) and "data" not in body
                                      and isinstance(body.get("embeddings"), list)):
            return _parse_bare(body, latency_ms)
        items = sorted(body["data"], key=lambda item: item["index"])
        raw_indices = [int(item["index"]) for item in body["data"]]
        vectors: list[list[float]] = []
        encoding = "float"
        for item in items:
            embedding = item["embedding"]
            if isinstance(embedding, str):
                encoding = "base64"
                vectors.append(decode_base64_embedding(embedding))
            else:
                vectors.append([float(x) for x in embedding])
        usage = body.get("usage") or {}
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        return EmbeddingResponse(
            status=200, latency_ms=latency_ms, error=f"{MALFORMED}: {type(exc).__name__}: {exc}"[:300]
        )
    result = EmbeddingResponse(
        status=200,
        latency_ms=latency_ms,
        vectors=vectors,
        indices=raw_indices,
        prompt_tokens=usage.get("prompt_tokens"),
        encoding=encoding,
        model=body.get("model"),
    )
    problems = validate_vectors(vectors)
    if sorted(raw_indices) != list(range(len(raw_indices))):  # duplicated or missing: cannot be re-sorted
        problems.append(f"{BAD_INDEX} of 0..{len(raw_indices) - 1}: {raw_indices[:20]}")
    if problems:
        result.error = "; ".join(problems)
    return result


def _parse_cohere(body: dict[str, Any], latency_ms: float) -> EmbeddingResponse:
    """Cohere's embed shape: vectors by type, in input order (there is no index field to re-sort by)."""
    try:
        by_type = body["embeddings"]
        if by_type.get("float") is not None:
            encoding, vectors = "float", [[float(x) for x in v] for v in by_type["float"]]
        elif by_type.get("base64") is not None:
            encoding, vectors = "base64", [decode_base64_embedding(v) for v in by_type["base64"]]
        else:
            raise KeyError(f"no float or base64 embeddings among {sorted(by_type)}")
        billed = (body.get("meta") or {}).get("billed_units") or {}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return EmbeddingResponse(status=200, latency_ms=latency_ms, shape="cohere",
                                 error=f"{MALFORMED}: {type(exc).__name__}: {exc}"[:300])
    result = EmbeddingResponse(status=200, latency_ms=latency_ms, vectors=vectors,
                               indices=list(range(len(vectors))), prompt_tokens=billed.get("input_tokens"),
                               encoding=encoding, model=body.get("model"), shape="cohere")
    problems = validate_vectors(vectors)
    if problems:
        result.error = "; ".join(problems)
    return result


def _parse_bare(body: list[Any] | dict[str, Any], latency_ms: float) -> EmbeddingResponse:
    """TEI's ``[[...]]`` and Ollama's ``{"embeddings": [[...]], "prompt_eval_count": n}``: vectors in input order,
    no index (nothing to re-sort by); only Ollama counts tokens."""
    shape = "tei" if isinstance(body, list) else "ollama"
    try:
        rows = body if isinstance(body, list) else body["embeddings"]
        vectors = [[float(x) for x in v] for v in rows]
    except (KeyError, TypeError, ValueError) as exc:
        return EmbeddingResponse(status=200, latency_ms=latency_ms, shape=shape,
                                 error=f"{MALFORMED}: {type(exc).__name__}: {exc}"[:300])
    tokens = None if isinstance(body, list) else body.get("prompt_eval_count")
    result = EmbeddingResponse(status=200, latency_ms=latency_ms, vectors=vectors, indices=list(range(len(vectors))),
                               prompt_tokens=tokens if isinstance(tokens, int) else None, encoding="float",
                               model=None if isinstance(body, list) else body.get("model"), shape=shape)
    problems = validate_vectors(vectors)
    if problems:
        result.error = "; ".join(problems)
    return result


def validate_vectors(vectors: list[list[float]]) -> list[str]:
    """What makes a 200 answer unusable: NaN/inf values or vectors of different lengths."""
    problems = []
    lengths = {len(v) for v in vectors}
    if len(lengths) > 1:
        problems.append(f"{LENGTHS} {sorted(lengths)}")
    if any(not math.isfinite(x) for v in vectors for x in v):
        problems.append(NON_FINITE)
    return problems


def _no_status_line(exc: httpx.HTTPError) -> bool:
    """The server closed or reset the connection before any status line (h11: "Server disconnected without
    sending a response."); a body cut after the status line says "peer closed connection without sending
    complete message body"."""
    return (isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError))
            and "complete message body" not in str(exc))


def auth_headers(api_key_env: str | None, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Headers for a target; the API key is read from the named environment variable, never from a file. Every
    value of ``headers`` (a target's ``headers:``, which may carry a key of its own) is registered as a secret."""
    out = dict(headers or {})
    register_headers(out)
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise RuntimeError(f"environment variable {api_key_env} (api_key_env) is not set")
        register_secret(key)  # never written: captures, steps, logs and notebooks are redacted
        out["Authorization"] = f"Bearer {key}"
    return out


class EmbeddingClient:
    """Synchronous client for one server (captures and probes; the load harness has its own async path)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        timeout_s: float = 60.0,
        headers: dict[str, str] | None = None,
        verify_tls: bool = True,
        *,
        embeddings_path: str | None = None,
        api_shape: str = "openai",
        models_path: str | None = "/v1/models",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_shape = api_shape
        self.embeddings_path = embeddings_path or EMBEDDINGS_PATHS[api_shape]
        self.models_path = models_path
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s, headers=headers, verify=verify_tls)

    def __enter__(self) -> EmbeddingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def embed(self, inputs: str | list[Any], **fields: Any) -> EmbeddingResponse:
        """Embed ``inputs`` (fields in OpenAI's names), said in the target's API shape. A field the shape cannot
        express is not sent: the answer is a status-0 record that says so (``extra["not_applicable"]``)."""
        try:
            body = request_body(self.api_shape, self.model, inputs, **fields)
        except NotApplicable as exc:
            return not_applicable_response(exc)
        return self.post_raw(json.dumps(body, ensure_ascii=False).encode())

    def post_raw(self, content: bytes, content_type: str = "application/json",
                 path: str | None = None) -> EmbeddingResponse:
        """One embeddings request; one that got no answer on a kept-alive connection the server had closed is
        sent once more (embeddings are idempotent; the OpenAI SDK and most clients do the same), and the answer
        keeps the first try in ``stale_retry``. Latency runs do not come here (measure.load: no silent retry)."""
        answer = self._post_once(content, content_type, path)
        if answer.status == 0 and (answer.error or "").startswith(STALE):
            again = self._post_once(content, content_type, path)
            again.stale_retry = {"status": 0, "error": answer.error, "latency_ms": round(answer.latency_ms, 3)}
            return again
        return answer

    def _post_once(self, content: bytes, content_type: str, path: str | None) -> EmbeddingResponse:
        connected: list[str] = []  # httpcore's trace names a new connection; none means a pooled one was reused

        def trace(name: str, info: dict[str, Any]) -> None:
            if name.startswith(("connection.connect_tcp", "connection.connect_unix_socket")):
                connected.append(name)

        started = time.perf_counter()
        try:
            response = self._http.post(path or self.embeddings_path, content=content,
                                       headers={"Content-Type": content_type}, extensions={"trace": trace})
        except httpx.HTTPError as exc:
            elapsed = (time.perf_counter() - started) * 1000
            error = f"{type(exc).__name__}: {exc}"[:300]
            if not connected and _no_status_line(exc):
                error = stale(error)
            return EmbeddingResponse(status=0, latency_ms=elapsed, error=error)
        elapsed = (time.perf_counter() - started) * 1000
        return parse_response(response, elapsed)

    def raw(self, method: str, path: str, content: bytes | None = None, timeout_s: float | None = None
            ) -> httpx.Response:
        """One exchange as httpx answers it (headers included); transport errors raise (``httpx.HTTPError``)."""
        headers = {"Content-Type": "application/json"} if content is not None else None
        return self._http.request(method, path, content=content, headers=headers,
                                  timeout=timeout_s if timeout_s is not None else self._http.timeout)

    def models(self) -> list[str]:
        if self.models_path is None:
            raise RuntimeError("this target has no models route (health_check: false)")
        response = self._http.get(self.models_path)
        response.raise_for_status()
        return [item["id"] for item in response.json().get("data", [])]
