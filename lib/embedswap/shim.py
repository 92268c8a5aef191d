"""The client migration shim: what the old client must do itself once the home-made server is gone.

The article (section 4) found four requests that the legacy server and the vLLM/Dynamo embedding worker answer
differently, and its conclusion (section 7) is that the work of the swap is in the client: drop ``dimensions``,
put the query instruction in the text, cut inputs to the token limit, do not retry a 500 that is really a client
error. This module is that client-side fix, as a small library:

- ``ShimConfig``: what to rewrite. ``ShimConfig.from_probes`` derives it from a candidate's contract-probe
  captures (``captures/<target>/probes.jsonl``), optionally compared with the legacy server's:

  ============================================  ================================================================
  probe finding (candidate)                      setting
  ============================================  ================================================================
  ``dimensions_*`` answered 4xx/5xx              ``strip_dimensions``: drop the field, slice + L2-renormalise here
  ``input_type_query`` silently diverges         ``prepend_query_instruction``: drop ``input_type``/``instruction``,
                                                 put the model card's prompt in the text
  ``over_long_input`` answered 4xx/5xx           ``max_input_tokens`` (read from the error text when it states
                                                 the limit): pre-truncate with the model's own tokenizer
  ``unknown_model`` answered 4xx                 ``model_override``: send the served name (legacy ignored it)
  a client-error probe answered 5xx              ``non_retryable_statuses``: that status is a disguised client
                                                 error; never resend it
  ``empty_string`` 200 where legacy said 4xx     ``reject_empty_strings``: answer 400 here, as the legacy server
  ``encoding_base64`` answered a string          ``force_float`` (always on by default): ask for floats, and decode
                                                 base64 anyway if it comes back
  ============================================  ================================================================

- ``EmbeddingShim``: an httpx client that rewrites each ``/v1/embeddings`` request, retries only 503/429/529
  (bounded exponential backoff; never a status learned to be a disguised client error) and post-processes the
  answer. It returns ``embedswap.client.EmbeddingResponse`` records, like ``EmbeddingClient``.
- ``ShimTransport``: the same as an ``httpx.BaseTransport``, so the official ``openai`` client (or any
  httpx-based client) goes through the shim without code changes::

      transport = ShimTransport(config, "http://vllm:8000")
      client = openai.OpenAI(base_url="http://vllm:8000/v1", api_key="...",
                             http_client=httpx.Client(transport=transport))
      client.embeddings.create(model="minilm", input=["..."], dimensions=256)  # works against vLLM

Why a transport (and not a proxy server, a subclass of the SDK, or a wrapper function): the SDK accepts an
``http_client`` by design, so a transport needs no monkey-patching and survives SDK upgrades; it sees the exact
body the SDK built (including the fields a caller put in ``extra_body``) and the raw answer before the SDK parses
it; it adds no process, port or network hop to deploy and watch (a sidecar proxy would be one more server to
migrate); and it works the same for every httpx-based client (``EmbeddingClient`` included). Everything the SDK
does stays as it is (auth header, timeouts, typed responses). It is an ``httpx`` transport: give it to an
``httpx.Client``, which the ``openai`` SDK accepts (releases built on ``httpx2`` still take an ``httpx.Client``).

Two details of the official client that the transport handles:

- it sends ``encoding_format="base64"`` when the caller gives none, and decodes the answer with
  ``np.frombuffer(..., dtype="float32")`` (native order: little-endian on x86 and ARM). The shim asks the server
  for floats (it has to slice and renormalise numbers), then answers in the format the caller asked for: base64
  of little-endian float32 (``<f4``) when asked for base64, arrays otherwise. A caller that asks ``"float"``
  explicitly gets arrays, as the OpenAI API specifies (the legacy server always answered arrays).
- it retries 408/409/429/5xx itself (``max_retries=2`` by default). The shim has done its bounded retries
  already, so every answer the transport returns carries ``x-should-retry: false``, which the SDK obeys: a
  disguised 500 is not resent, and retries do not multiply (3 SDK tries x 4 shim tries).
"""

from __future__ import annotations

import base64
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from embedswap.client import EmbeddingResponse, parse_response
from embedswap.config import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE

# Statuses that mean "try again later": overloaded (503), rate limited (429), Anthropic-style overloaded (529).
RETRY_STATUSES = frozenset({429, 503, 529})
# Probes whose request is a client error by design (or one the legacy server answered 4xx): a 5xx answer to one of
# them is a disguised client error, and retrying it resends a request that can never succeed.
CLIENT_ERROR_PROBES = frozenset({
    "dimensions_native", "dimensions_reduced", "over_long_input", "empty_list", "non_json_body", "wrong_type",
    "unknown_model",
})
# Fields that only the legacy server understood (the query prompt); removed when the shim applies the prompt.
QUERY_FIELDS = ("input_type", "instruction")
# vLLM: "This model's maximum context length is 256 tokens. However, ..."
_LIMIT_PATTERN = re.compile(r"maximum (?:context|input) length is (\d+) tokens", re.IGNORECASE)
_HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})


class ShimRequestError(ValueError):
    """A request the shim answers itself with a 400, as the legacy server did (e.g. ``dimensions`` too large)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


# --- configuration ----------------------------------------------------------------------------------------------------
@dataclass
class ShimConfig:
    """What the shim rewrites. The defaults are the safe choices when nothing was probed."""

    # Query prompt, applied in the text (the model card's format) for input_type "query" or an instruction field.
    query_template: str = DEFAULT_QUERY_TEMPLATE
    query_task: str = DEFAULT_QUERY_TASK
    prepend_query_instruction: bool = True
    # Pre-truncation: the server's token limit (special tokens included) and the tokenizer to count with.
    max_input_tokens: int | None = None
    tokenizer_path: str | None = None
    # dimensions: emulated by slicing the first N values and L2-renormalising (what the legacy server did).
    strip_dimensions: bool = True
    native_dim: int | None = None
    # Send this model name whatever the caller says (the legacy server ignored ``model``; vLLM answers 404).
    model_override: str | None = None
    # Other fields removed from every request (ones the server rejects or must not see).
    drop_fields: tuple[str, ...] = ()
    # Ask the server for float arrays; base64 answers are decoded in any case.
    force_float: bool = True
    # Answer an empty string with a 400 here, as the legacy server did (vLLM embeds "" as [CLS][SEP]).
    reject_empty_strings: bool = False
    # Retries: only these statuses, never the ones learned to be disguised client errors.
    retry_statuses: frozenset[int] = RETRY_STATUSES
    non_retryable_statuses: frozenset[int] = frozenset()
    max_retries: int = 3
    backoff_initial_s: float = 0.2
    backoff_multiplier: float = 2.0
    backoff_max_s: float = 2.0
    backoff_jitter: float = 0.1  # each delay is shortened by up to this fraction, at random
    timeout_s: float = 60.0
    # Why each setting has its value (filled by from_probes; for the report): the English sentence, and the same
    # as a reason code with its parameters (embedswap.reasons), which the report words in its language.
    reasons: dict[str, str] = field(default_factory=dict)
    reason_codes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "{query}" not in self.query_template:
            raise ValueError("query_template must contain '{query}'")
        if self.max_input_tokens is not None and self.max_input_tokens < 1:
            raise ValueError("max_input_tokens must be at least 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.retry_statuses = frozenset(self.retry_statuses)
        self.non_retryable_statuses = frozenset(self.non_retryable_statuses)
        self.drop_fields = tuple(self.drop_fields)

    def should_retry(self, status: int) -> bool:
        return status in self.retry_statuses and status not in self.non_retryable_statuses

    def backoff_s(self, retry: int) -> float:
        """Delay before retry number ``retry`` (0-based): initial * multiplier**retry, capped, minus jitter."""
        delay = min(self.backoff_max_s, self.backoff_initial_s * self.backoff_multiplier ** retry)
        return delay * (1.0 - self.backoff_jitter * random.random())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["retry_statuses"] = sorted(self.retry_statuses)
        out["non_retryable_statuses"] = sorted(self.non_retryable_statuses)
        out["drop_fields"] = list(self.drop_fields)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShimConfig:
        return cls(**data)

    @classmethod
    def from_probes(cls, probe_records: Iterable[dict[str, Any]],
                    legacy_records: Iterable[dict[str, Any]] | None = None, *,
                    served_name: str | None = None, tokenizer_path: str | None = None,
                    max_input_tokens: int | None = None, same_threshold: float = 0.999,
                    **overrides: Any) -> ShimConfig:
        """Settings derived from a candidate's probe captures (records of ``probes.jsonl``).

        ``legacy_records``: the legacy server's probe captures; with them the query-prompt decision uses the
        verdict rules of ``embedswap.contract.classify`` (silent divergence = the field was ignored). Without
        them the shim applies the prompt itself, which is right whether or not the server would have.
        ``max_input_tokens``: the limit to truncate to when the over-long probe failed without stating one
        (Dynamo's frontend answers a bare 500); else the limit comes from the error text.
        ``overrides``: any ShimConfig field, taking precedence over what was derived.
        """
        from embedswap.contract import classify

        candidate = {r["probe"]: r for r in probe_records}
        legacy = {r["probe"]: r for r in legacy_records} if legacy_records is not None else None
        from embedswap.reasons import explain, reason, reason_of

        reasons: dict[str, str] = {}
        codes: dict[str, dict[str, Any]] = {}
        settings: dict[str, Any] = {"tokenizer_path": tokenizer_path}

        def because(setting: str, code: str, **params: Any) -> None:
            codes[setting] = reason(code, **params)
            reasons[setting] = explain(code, **params)

        def status(name: str) -> int | None:
            record = candidate.get(name)
            return None if record is None else record.get("status")

        # native dimension: from any successful document answer
        for name in ("plain", "encoding_float", "batch8_member", "unicode_mixed", "input_type_query"):
            record = candidate.get(name)
            if record and record.get("status") == 200 and record.get("dim"):
                settings["native_dim"] = int(record["dim"])
                break

        # dimensions
        rejected = {n: status(n) for n in ("dimensions_native", "dimensions_reduced") if status(n) not in (None, 200)}
        reduced = candidate.get("dimensions_reduced")
        asked = ((reduced or {}).get("sent") or {}).get("dimensions")
        if rejected:
            settings["strip_dimensions"] = True
            because("strip_dimensions", "shim_dimensions_rejected",
                    answers=", ".join(f"{n}: {s}" for n, s in rejected.items()))
        elif reduced and reduced.get("status") == 200 and isinstance(asked, int) and reduced.get("dim") != asked:
            settings["strip_dimensions"] = True
            because("strip_dimensions", "shim_dimensions_ignored", asked=asked, dim=reduced.get("dim"))
        elif reduced and reduced.get("status") == 200:
            settings["strip_dimensions"] = False
            because("strip_dimensions", "shim_dimensions_honoured")
        else:
            because("strip_dimensions", "shim_dimensions_not_probed")

        # query instruction
        query_findings = []
        for name in ("input_type_query", "instruction_field"):
            record = candidate.get(name)
            if record is None:
                continue
            if record.get("status") != 200:
                query_findings.append((name, "rejected",
                                       reason("shim_finding_rejected", probe=name, status=record.get("status"))))
            elif legacy is not None and name in legacy:
                verdict = classify(legacy[name], record, same_threshold)
                detail = reason_of(verdict.detail) or verdict.detail
                query_findings.append((name, verdict.verdict, reason("shim_finding_verdict", probe=name,
                                                                     verdict=verdict.verdict, detail=detail)))
            else:
                query_findings.append((name, "unknown", reason("shim_finding_unknown", probe=name)))
        if query_findings and all(v == "same" for _, v, _ in query_findings):
            settings["prepend_query_instruction"] = False
            because("prepend_query_instruction", "shim_query_applied", findings=[d for _, _, d in query_findings])
        else:
            settings["prepend_query_instruction"] = True
            findings = [d for _, _, d in query_findings] or [reason("shim_finding_none")]
            because("prepend_query_instruction", "shim_query_prepended", findings=findings)

        # over-long input
        over_long = candidate.get("over_long_input")
        if over_long is not None and over_long.get("status") not in (None, 200):
            match = _LIMIT_PATTERN.search(over_long.get("error") or "")
            if match:
                settings["max_input_tokens"] = int(match.group(1))
                code = "shim_truncate_stated"
            else:
                settings["max_input_tokens"] = max_input_tokens
                code = "shim_truncate_configured"
            because("max_input_tokens", code, status=over_long.get("status"), limit=settings["max_input_tokens"])
        elif over_long is not None:
            because("max_input_tokens", "shim_truncate_not_needed")
        else:
            settings["max_input_tokens"] = max_input_tokens
            because("max_input_tokens", "shim_truncate_not_probed", limit=max_input_tokens)

        # model name
        unknown = candidate.get("unknown_model")
        if unknown is not None and unknown.get("status") not in (None, 200) and served_name:
            settings["model_override"] = served_name
            because("model_override", "shim_model_override", status=unknown.get("status"), name=served_name)

        # disguised client errors: never retry those statuses
        disguised: dict[int, list[str]] = {}
        for name, record in candidate.items():
            s = record.get("status") or 0
            if s < 500:
                continue
            legacy_status = (legacy or {}).get(name, {}).get("status")
            client_error = name in CLIENT_ERROR_PROBES or (legacy_status is not None and 200 <= legacy_status < 500)
            if client_error:
                disguised.setdefault(int(s), []).append(name)
        settings["non_retryable_statuses"] = frozenset(disguised)
        if disguised:
            because("non_retryable_statuses", "shim_no_retry_list",
                    items=[reason("shim_no_retry_status", status=s, probes=", ".join(names))
                           for s, names in sorted(disguised.items())])

        # empty strings
        empty = candidate.get("empty_string")
        legacy_empty = (legacy or {}).get("empty_string")
        if (empty is not None and empty.get("status") == 200 and legacy_empty is not None
                and 400 <= (legacy_empty.get("status") or 0) < 500):
            settings["reject_empty_strings"] = True
            because("reject_empty_strings", "shim_reject_empty", status=legacy_empty.get("status"))

        # encoding
        base64_probe = candidate.get("encoding_base64")
        if base64_probe is not None and base64_probe.get("encoding") == "base64":
            because("force_float", "shim_force_float")

        extra_reasons = overrides.pop("reasons", {})
        settings.update(overrides)
        for key in extra_reasons:  # a reason given by hand is a free text: it replaces the derived code
            codes.pop(key, None)
        return cls(**settings, reasons={**reasons, **extra_reasons}, reason_codes=codes)


# --- text helpers -----------------------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def model_token_limit(model_path: str) -> int | None:
    """The model's own input limit: sentence-transformers' max_seq_length, else the tokenizer's (if sane)."""
    folder = Path(model_path)
    st_config = folder / "sentence_bert_config.json"
    if st_config.exists():
        value = json.loads(st_config.read_text()).get("max_seq_length")
        if value:
            return int(value)
    try:
        tokenizer = load_tokenizer(model_path)
    except Exception:  # not a local model: nothing to read
        return None
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit and limit < 1_000_000 else None


def l2_renormalise(vector: list[float]) -> list[float]:
    array = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(array)
    return (array / norm).tolist() if norm else array.tolist()


def encode_base64(vector: list[float]) -> str:
    """OpenAI's base64 format: little-endian float32 bytes."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


class Truncator:
    """Cuts texts to a token budget with the model's own tokenizer (special tokens counted), keeping the text.

    The cut is made in the original string at the end of the last token that fits (offset mapping), so the text
    is not round-tripped through ``decode`` (which lowercases, splits Hangul into jamo, ...). A cut word can
    re-tokenise differently, so the result is re-counted and shortened until it fits.
    """

    def __init__(self, tokenizer: Any, limit: int) -> None:
        self.tokenizer = tokenizer
        self.limit = limit
        self.special = int(tokenizer.num_special_tokens_to_add(pair=False))
        self._lock = threading.Lock()  # a Rust tokenizer used from several threads at once can fail

    def count(self, text: str) -> int:
        with self._lock:
            return len(self.tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])

    def __call__(self, text: str) -> tuple[str, bool]:
        if self.count(text) <= self.limit:
            return text, False
        budget = self.limit - self.special
        if budget <= 0:
            return "", True
        with self._lock:
            encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = encoded.get("offset_mapping")
        ids = encoded["input_ids"]
        for keep in range(min(budget, len(ids)), max(0, budget - 64), -1):
            cut = text[: offsets[keep - 1][1]] if offsets else self.tokenizer.decode(ids[:keep])
            if self.count(cut) <= self.limit:
                return cut, True
        with self._lock:  # pathological text: fall back to the decoded ids
            return self.tokenizer.decode(ids[: max(0, budget - 64)]), True


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
    """

    def __init__(self, base_url: str, config: ShimConfig | None = None, model: str = "embedder", *,
                 timeout_s: float | None = None, headers: dict[str, str] | None = None, verify_tls: bool = True,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config or ShimConfig()
        self.model = model
        root = base_url.rstrip("/")
        self.base_url = root[: -len("/v1")] if root.endswith("/v1") else root
        self.sleep = sleep
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s or self.config.timeout_s, headers=headers,
                                  verify=verify_tls, transport=transport)
        self._truncator: Truncator | None = None
        self._truncator_lock = threading.Lock()

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

    # --- sending ---------------------------------------------------------------------------------------------------
    def _send(self, content: bytes, headers: dict[str, str]) -> tuple[httpx.Response | None, Exception | None, int]:
        """POST with the retry policy. Returns (response, transport error, attempts)."""
        cfg = self.config
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self._http.post("/v1/embeddings", content=content, headers=headers)
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
        except ShimRequestError as exc:
            answer = EmbeddingResponse(status=400, latency_ms=0.0, error=str(exc))
            answer.extra["shim"] = {"attempts": 0, "local": True, "param": exc.param, "rewrites": []}
            return answer, None
        content = json.dumps(plan.body, ensure_ascii=False).encode()
        response, error, attempts = self._send(content, {**(headers or {}), "Content-Type": "application/json"})
        elapsed = (time.perf_counter() - started) * 1000
        info: dict[str, Any] = {"attempts": attempts, "local": False, "rewrites": plan.notes,
                                "sent_upstream": plan.body, "requested_encoding": plan.requested_encoding}
        if response is None:
            answer = EmbeddingResponse(status=0, latency_ms=elapsed, error=f"{type(error).__name__}: {error}"[:300])
            answer.extra["shim"] = info
            return answer, error
        answer = parse_response(response, elapsed)
        info["upstream_encoding"] = answer.encoding
        if answer.ok and answer.vectors is not None:
            answer.encoding = "float"  # decoded: the caller gets numbers
            if plan.dimensions is not None:
                dim = len(answer.vectors[0]) if answer.vectors else 0
                if plan.dimensions > dim:
                    answer = EmbeddingResponse(status=400, latency_ms=elapsed,
                                               error=f"dimensions must be between 1 and {dim}")
                    info["local"] = True
                else:
                    answer.vectors = [l2_renormalise(v[: plan.dimensions]) for v in answer.vectors]
        answer.extra["shim"] = info
        return answer, response


# --- the transport for httpx-based clients (the official openai client) -----------------------------------------------
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
    retried what may be retried (see the module docstring).
    """

    def __init__(self, config: ShimConfig, upstream_base_url: str, *, model: str = "embedder",
                 headers: dict[str, str] | None = None, verify_tls: bool = True,
                 inner: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.shim = EmbeddingShim(upstream_base_url, config, model, headers=headers, verify_tls=verify_tls,
                                  transport=inner, sleep=sleep)

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
                # the server's own count, or null where it sent none: the shim never invents a number (issue 16)
                "usage": (None if answer.prompt_tokens is None else
                          {"prompt_tokens": answer.prompt_tokens, "total_tokens": answer.prompt_tokens}),
            }
            return _json_response(200, payload)
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
