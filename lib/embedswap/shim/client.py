"""``EmbeddingShim``: an httpx client for the embeddings route that rewrites each request per ``ShimConfig``, retries
only what may be retried, and post-processes the answer (slice + re-normalise, floats)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from embedswap.wire.api_shapes import EMBEDDINGS_PATHS, ApiShape
from embedswap.wire.client import EmbeddingResponse, parse_response
from embedswap.shim.settings import QUERY_FIELDS, ShimConfig, ShimRequestError
from embedswap.shim.shapes import count_tokens, say_in_shape
from embedswap.shim.text import Truncator, l2_renormalise, load_tokenizer, model_token_limit

# --- the rewritten request --------------------------------------------------------------------------------------------
@dataclass
class Rewrite:
    body: dict[str, Any]
    dimensions: int | None = None
    requested_encoding: str | None = None
    notes: list[str] = field(default_factory=list)


def _is_token_ids(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in value))


class EmbeddingShim:
    """An httpx client for ``/v1/embeddings`` that rewrites requests per ``ShimConfig`` and post-processes answers.

    ``base_url``: the server's root (``http://host:port``) or its ``/v1`` URL. ``transport``: an httpx transport
    for the upstream requests (tests pass ``httpx.MockTransport``). ``sleep``: the backoff's sleep function.
    ``api_shape``: the shape the server speaks (the candidate's ``targets.<name>.api_shape``); the caller's
    OpenAI-style request is said in it and its answer read back (``embedswap.shim.shapes``).
    ``embeddings_path``: the server's route (default: the shape's own, e.g. ``/embed`` for TEI).
    """

    def __init__(self, base_url: str, config: ShimConfig | None = None, model: str = "embedder", *,
                 timeout_s: float | None = None, headers: dict[str, str] | None = None, verify_tls: bool = True,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep,
                 embeddings_path: str | None = None, api_shape: ApiShape = "openai") -> None:
        self.config = config or ShimConfig()
        self.api_shape: ApiShape = api_shape
        # the server's own route (e.g. Infinity's /embeddings, TEI's /embed)
        self.embeddings_path = embeddings_path or EMBEDDINGS_PATHS[api_shape]
        self.model = model
        root = base_url.rstrip("/")
        self.base_url = root[: -len("/v1")] if root.endswith("/v1") else root
        self.sleep = sleep
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s or self.config.timeout_s, headers=headers,
                                  verify=verify_tls, transport=transport)
        self._truncator: Truncator | None = None
        self._truncator_lock = threading.Lock()
        self._counter: Any = None  # the tokenizer that counts usage (config.usage "counted"), loaded on first use

    def __enter__(self) -> EmbeddingShim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- public --------------------------------------------------------------------------------------------------
    def embed(self, inputs: str | list[Any], **fields: Any) -> EmbeddingResponse:
        """Like ``EmbeddingClient.embed``: the request is rewritten, the answer post-processed (floats)."""
        return self.embed_body({"model": self.model, "input": inputs, **fields})

    def embed_body(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> EmbeddingResponse:
        answer, _ = self.exchange(body, headers)
        return answer

    def post_raw(self, content: bytes, content_type: str = "application/json",
                 headers: dict[str, str] | None = None) -> EmbeddingResponse:
        """A body the shim cannot read (not a JSON object): sent as is, with the retry policy."""
        started = time.perf_counter()
        response, error, attempts = self._send(content, {**(headers or {}), "Content-Type": content_type})
        elapsed = (time.perf_counter() - started) * 1000
        if response is None:
            answer = EmbeddingResponse(status=0, latency_ms=elapsed, error=f"{type(error).__name__}: {error}"[:300])
        else:
            answer = parse_response(response, elapsed)
        answer.extra.update({"shim": {"attempts": attempts, "rewrites": ["body not a JSON object: sent as is"]}})
        return answer

    # --- request rewriting -------------------------------------------------------------------------------------------
    def truncator(self) -> Truncator | None:
        limit, path = self.config.max_input_tokens, self.config.tokenizer_path
        if limit is None or path is None:
            return None
        with self._truncator_lock:
            if self._truncator is None:
                self._truncator = Truncator(load_tokenizer(path), limit)
        return self._truncator

    def rewrite(self, body: dict[str, Any]) -> Rewrite:
        """The body to send upstream; raises ShimRequestError for what the legacy server answered 400."""
        cfg = self.config
        out = dict(body)
        plan = Rewrite(out, requested_encoding=body.get("encoding_format"))
        if cfg.model_override and out.get("model") != cfg.model_override:
            plan.notes.append(f"model {out.get('model')!r} -> {cfg.model_override!r}")
            out["model"] = cfg.model_override
        for name in cfg.drop_fields:
            if name in out:
                out.pop(name)
                plan.notes.append(f"dropped {name}")

        inputs = out.get("input")
        single = isinstance(inputs, str)
        if cfg.reject_empty_strings and (inputs == "" or (isinstance(inputs, list) and "" in inputs)):
            raise ShimRequestError("input must not contain empty strings", "input")
        if cfg.prepend_query_instruction and any(k in out for k in QUERY_FIELDS):
            input_type = out.pop("input_type", None)
            instruction = out.pop("instruction", None)
            plan.notes.append("dropped " + "/".join(k for k in QUERY_FIELDS if k in body))
            if instruction is not None and input_type in ("document", "passage"):
                raise ShimRequestError(f"instruction makes a query, but input_type is {input_type!r}", "instruction")
            if input_type == "query" or instruction is not None:
                task = cfg.query_task if instruction is None else str(instruction)
                texts = [inputs] if single else inputs
                if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                    if isinstance(texts, list) and texts and (_is_token_ids(texts) or _is_token_ids(texts[0])):
                        raise ShimRequestError("a query prompt cannot be applied to token-id input", "input_type")
                else:
                    prompted = [cfg.query_template.format(task=task, query=t) for t in texts]
                    inputs = prompted[0] if single else prompted
                    out["input"] = inputs
                    plan.notes.append("query prompt prepended in the text")

        if cfg.strip_dimensions and "dimensions" in out:
            dimensions = out.pop("dimensions")
            if dimensions is not None:
                if not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 1:
                    raise ShimRequestError(f"dimensions must be a positive integer, got {dimensions!r}", "dimensions")
                if cfg.native_dim and dimensions > cfg.native_dim:
                    raise ShimRequestError(f"dimensions must be between 1 and {cfg.native_dim}", "dimensions")
                plan.dimensions = dimensions
            plan.notes.append("dropped dimensions (emulated: slice + L2 renormalise)")

        if cfg.force_float and out.get("encoding_format") != "float":
            out["encoding_format"] = "float"
            if plan.requested_encoding is not None:
                plan.notes.append(f"encoding_format {plan.requested_encoding!r} -> 'float'")

        truncator = self.truncator()
        if truncator is not None:
            inputs = out.get("input")
            cut = 0
            if isinstance(inputs, str):
                inputs, changed = truncator(inputs)
                cut += changed
            elif _is_token_ids(inputs):
                if len(inputs) > truncator.limit:
                    inputs, cut = inputs[: truncator.limit], 1
            elif isinstance(inputs, list):
                new_inputs = []
                for item in inputs:
                    if isinstance(item, str):
                        item, changed = truncator(item)
                        cut += changed
                    elif _is_token_ids(item) and len(item) > truncator.limit:
                        item, cut = item[: truncator.limit], cut + 1
                    new_inputs.append(item)
                inputs = new_inputs
            if cut:
                out["input"] = inputs
                plan.notes.append(f"{cut} input(s) truncated to {truncator.limit} tokens")
        return plan

    def counted_usage(self, body: dict[str, Any]) -> int | None:
        """The model tokenizer's count of an (OpenAI-shaped) body the shim sent, cut at the limit the server cuts
        at; None without a tokenizer."""
        path = self.config.tokenizer_path
        if path is None:
            return None
        with self._truncator_lock:
            if self._counter is None:
                self._counter = load_tokenizer(path)
        limits = [v for v in (self.config.max_input_tokens, self.config.count_limit_tokens, model_token_limit(path))
                  if v]
        return count_tokens(self._counter, body, min(limits) if limits else None)

    # --- sending ---------------------------------------------------------------------------------------------------
    def _send(self, content: bytes, headers: dict[str, str]) -> tuple[httpx.Response | None, Exception | None, int]:
        """POST with the retry policy. Returns (response, transport error, attempts)."""
        cfg = self.config
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self._http.post(self.embeddings_path, content=content, headers=headers)
            except httpx.HTTPError as exc:
                return None, exc, attempts
            retry = attempts - 1
            if not cfg.should_retry(response.status_code) or retry >= cfg.max_retries:
                return response, None, attempts
            delay = cfg.backoff_s(retry)
            retry_after = response.headers.get("retry-after")
            if retry_after is not None:
                try:
                    wanted = float(retry_after)
                except ValueError:
                    wanted = None
                if wanted is not None:
                    if wanted > cfg.backoff_max_s:  # the server asks for longer than the budget: give up now
                        return response, None, attempts
                    delay = max(delay, wanted)
            response.close()
            self.sleep(delay)

    def exchange(self, body: dict[str, Any],
                 headers: dict[str, str] | None = None) -> tuple[EmbeddingResponse, httpx.Response | Exception | None]:
        """Rewrite, send, post-process. Returns the record and the raw upstream answer (or transport error;
        None when the shim answered itself)."""
        started = time.perf_counter()
        try:
            plan = self.rewrite(body)
            upstream_body = say_in_shape(plan.body, self.api_shape)
        except ShimRequestError as exc:
            answer = EmbeddingResponse(status=400, latency_ms=0.0, error=str(exc))
            answer.extra["shim"] = {"attempts": 0, "local": True, "param": exc.param, "rewrites": []}
            return answer, None
        if self.api_shape != "openai":
            plan.notes.append(f"said in the {self.api_shape} shape at {self.embeddings_path}, answered in OpenAI's")
        content = json.dumps(upstream_body, ensure_ascii=False).encode()
        response, error, attempts = self._send(content, {**(headers or {}), "Content-Type": "application/json"})
        elapsed = (time.perf_counter() - started) * 1000
        info: dict[str, Any] = {"attempts": attempts, "local": False, "rewrites": plan.notes,
                                "sent_upstream": upstream_body, "requested_encoding": plan.requested_encoding}
        if response is None:
            answer = EmbeddingResponse(status=0, latency_ms=elapsed, error=f"{type(error).__name__}: {error}"[:300])
            answer.extra["shim"] = info
            return answer, error
        answer = parse_response(response, elapsed)
        info["upstream_encoding"] = answer.encoding
        if self.api_shape != "openai":
            info["upstream_shape"] = self.api_shape
            answer.shape = "openai"  # the caller gets OpenAI's form from the shim (data[], index, usage)
        if answer.ok and answer.vectors is not None:
            if self.config.force_float:  # asked for floats in the caller's stead: the caller gets numbers
                answer.encoding = "float"  # (a pass-through shim keeps the server's encoding, as a bare client)
            if plan.dimensions is not None:
                dim = len(answer.vectors[0]) if answer.vectors else 0
                if plan.dimensions > dim:
                    answer = EmbeddingResponse(status=400, latency_ms=elapsed,
                                               error=f"dimensions must be between 1 and {dim}")
                    info["local"] = True
                else:
                    answer.vectors = [l2_renormalise(v[: plan.dimensions]) for v in answer.vectors]
            if self.config.renormalise and answer.vectors is not None:  # e.g. a server's unrenormalised slice
                answer.vectors = [l2_renormalise(v) for v in answer.vectors]
                info["rewrites"] = [*plan.notes, "vectors re-normalised (L2)"]
        if answer.ok and self.config.usage == "counted" and answer.prompt_tokens is None:
            # the server sent no count (TEI's shape has none): the tokenizer's, labelled as the shim's own
            counted = self.counted_usage(plan.body)
            if counted is not None:
                answer.prompt_tokens = counted
                info["usage"] = "counted"
                info["rewrites"] = [*info["rewrites"], "usage counted by the shim (model tokenizer)"]
        answer.extra["shim"] = info
        return answer, response
