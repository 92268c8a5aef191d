"""In-process fake embedding servers for unit tests (issue 16): a reference server and candidates that each break
one aspect of the contract (vector length, usage, order), in every API shape the kit reads (openai, cohere-v2,
tei, ollama). Vectors are a deterministic function of the text (a seeded hash), so two servers agree exactly
where they should. The servers bind 127.0.0.1 and run in a daemon thread."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

import numpy as np

from realkit import JsonHandler
from ports import free_ports

DIM = 16


def unit_vector(text: str, dim: int = DIM) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dim)
    return v / np.linalg.norm(v)


class Behaviour:
    """What a fake server does. ``scale``: every vector multiplied by it; ``slice_renormalise``: whether
    ``dimensions`` is answered by slicing + re-normalising (the reference) or slicing only (Infinity 0.0.78);
    ``usage``: "words" (words + 2, the reference), "chars" (characters, as Infinity counts), a function of one text
    (e.g. the model tokenizer's count, as a real server of the model counts), or None (omitted);
    ``reverse``: data[] in reverse index order; ``shape``: openai | cohere-v2 | tei | ollama; ``prefix``: route
    prefix of the OpenAI routes ("/v1" or ""); ``model``: the model name echoed (None: the one asked for);
    ``ignore_encoding``: floats whatever ``encoding_format`` asks; ``error_200``: inputs (exact texts) answered
    200 with an error object and no data, as a hosted service answers an empty string; ``service_ms``: a seeded
    lognormal sleep (sigma 0.1) around it per embeddings request, a server of known speed (``seed``);
    ``states_model``: a TEI or Ollama server states its model (``model``, else "embedder") on its own shape's route
    (TEI ``/info`` ``model_id``, Ollama ``/api/tags``), as the real ones do; False: it states none."""

    def __init__(self, *, scale: float = 1.0, slice_renormalise: bool = True,
                 usage: str | Callable[[str], int] | None = "words",
                 reverse: bool = False, shape: str = "openai", prefix: str = "/v1", model: str | None = None,
                 ignore_encoding: bool = True, error_200: tuple[str, ...] = (), service_ms: float = 0.0,
                 seed: int = 0, states_model: bool = True) -> None:
        self.states_model = states_model
        self.scale, self.slice_renormalise, self.usage = scale, slice_renormalise, usage
        self.model, self.ignore_encoding, self.error_200 = model, ignore_encoding, error_200
        self.reverse, self.shape, self.prefix = reverse, shape, prefix
        self.requests: list[tuple[str, str, Any]] = []
        self.service_ms, self._rng, self._lock = service_ms, np.random.default_rng(seed), threading.Lock()

    def serve_time(self) -> None:
        """Sleep the service time of one request (nothing without ``service_ms``)."""
        if self.service_ms > 0:
            with self._lock:
                seconds = float(self._rng.lognormal(np.log(self.service_ms / 1000), 0.1))
            time.sleep(seconds)


def _embed(texts: list[Any], behaviour: Behaviour, dimensions: Any) -> list[list[float]]:
    out = []
    for text in texts:
        v = unit_vector(json.dumps(text) if not isinstance(text, str) else text)
        if isinstance(dimensions, int) and 0 < dimensions < len(v):
            v = v[:dimensions]
            if behaviour.slice_renormalise:
                v = v / np.linalg.norm(v)
        out.append((v * behaviour.scale).tolist())
    return out


def _tokens(texts: list[Any], how: str | Callable[[str], int] | None) -> int | None:
    if how is None:
        return None
    if callable(how):
        return sum(how(t) if isinstance(t, str) else len(t) for t in texts)
    if how == "chars":
        return sum(len(t) if isinstance(t, str) else len(t) for t in texts)
    return sum(len(t.split()) + 2 if isinstance(t, str) else len(t) for t in texts)


def handler(behaviour: Behaviour) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:  # noqa: N802
            behaviour.requests.append(("GET", self.path, None))
            name = behaviour.model or "embedder"
            if behaviour.shape == "tei" and self.path == "/info":
                self.answer(200, {"version": "fake", **({"model_id": name} if behaviour.states_model else {})})
            elif behaviour.shape == "ollama" and self.path == "/api/tags":
                self.answer(200, {"models": [{"name": name, "model": name}] if behaviour.states_model else []})
            elif self.path in (f"{behaviour.prefix}/models", "/health", "/api/tags", "/info"):
                self.answer(200, {"object": "list", "data": [{"id": "embedder", "object": "model"}]})
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                self.answer(400, {"error": {"message": "body is not JSON"}})
                return
            behaviour.requests.append(("POST", self.path, body))
            if not isinstance(body, dict):
                self.answer(422, {"error": {"message": "body must be an object"}})
                return
            route = {"openai": f"{behaviour.prefix}/embeddings", "cohere-v2": "/v2/embed", "tei": "/embed",
                     "ollama": "/api/embed"}[behaviour.shape]
            if self.path != route:
                self.answer(404, {"error": {"message": f"no route {self.path}"}})
                return
            key = {"openai": "input", "cohere-v2": "texts", "tei": "inputs", "ollama": "input"}[behaviour.shape]
            texts = body.get(key)
            if isinstance(texts, str):
                texts = [texts]
            if isinstance(texts, list) and any(t in behaviour.error_200 for t in texts):
                self.answer(200, {"error": {"message": "input is empty", "type": "invalid_request_error"}})
                return
            if not isinstance(texts, list) or not texts or any(t == "" for t in texts):
                self.answer(400, {"error": {"message": f"{key} must be a non-empty list of non-empty texts"}})
                return
            behaviour.serve_time()
            dimensions = body.get("output_dimension" if behaviour.shape == "cohere-v2" else "dimensions")
            vectors = _embed(texts, behaviour, dimensions)
            tokens = _tokens(texts, behaviour.usage)
            if behaviour.shape == "tei":
                self.answer(200, vectors)
            elif behaviour.shape == "ollama":
                self.answer(200, {"model": body.get("model"), "embeddings": vectors,
                                  **({} if tokens is None else {"prompt_eval_count": tokens})})
            elif behaviour.shape == "cohere-v2":
                self.answer(200, {"id": "x", "embeddings": {"float": vectors}, "texts": texts,
                                  **({} if tokens is None else {"meta": {"billed_units": {"input_tokens": tokens}}})})
            else:
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                if behaviour.reverse:
                    data.reverse()
                if not behaviour.ignore_encoding and body.get("encoding_format") == "base64":
                    for item in data:
                        item["embedding"] = base64.b64encode(np.asarray(item["embedding"], "<f4").tobytes()).decode()
                answer: dict[str, Any] = {"object": "list", "data": data,
                                          "model": behaviour.model or body.get("model") or "embedder"}
                if tokens is not None:
                    answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
                self.answer(200, answer)

    return Handler


@contextmanager
def serve(behaviour: Behaviour) -> Iterator[int]:
    """A fake server on a free loopback port; yields the port."""
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(behaviour))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()
