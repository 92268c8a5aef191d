"""The probe catalogue (data, not code per probe) and how a probe's request is built.

A probe is a named variant of the plain request, sent to every server under test; its answers are compared by
:mod:`embedswap.answers.classify`. Most probes go to ``/v1/embeddings``; a probe may name another route (``path``)
and the probe whose legacy answer it is compared with (``compare_to``), for routes the legacy server does not have.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from embedswap.config.sections import ProbeSpec
from embedswap.shim.text import load_tokenizer

if TYPE_CHECKING:  # types of probe_context's arguments only
    from embedswap.config.experiment import Experiment
    from embedswap.wire.client import EmbeddingResponse
    from embedswap.measure.workload import Workload

DEFAULT_PROBE_PATH = "/v1/embeddings"
LARGE_BATCH_CHARS = 16  # each of the 512 inputs of `large_batch` is a document's first 16 characters and its number

# Placeholders filled per run: $doc (first document), $query (first query), $docs8 (first 8 documents),
# $long (far over any token limit), $native_dim / $reduced_dim (from the plain answer), $token_ids (the
# tokenizer's ids for $doc), $large_batch (512 short inputs), $unicode (Korean + emoji + zero-width space),
# $window (the documents' words up to the model's limit, at most 512 tokens).
CATALOGUE: list[dict[str, Any]] = [
    {"name": "plain", "description": "one document, no options (the reference answer)", "body": {"input": ["$doc"]}},
    {"name": "dimensions_native", "description": "`dimensions` equal to the native size",
     "body": {"input": ["$doc"], "dimensions": "$native_dim"}},
    {"name": "dimensions_reduced", "description": "`dimensions` below the native size (Matryoshka cut)",
     "body": {"input": ["$doc"], "dimensions": "$reduced_dim"}},
    {"name": "input_type_query", "description": "`input_type: \"query\"`: the server should add the query instruction",
     "body": {"input": ["$query"], "input_type": "query"}, "query": True},
    {"name": "instruction_field", "description": "`instruction`: a task text for the query prompt",
     "body": {"input": ["$query"], "instruction": "$task"}, "query": True},
    # vLLM's Cohere-style route applies the model's own sentence-transformers prompt for input_type; with a chat
    # template in the tokenizer it renders a chat turn instead. Compared with the legacy server's query answer.
    {"name": "v2_embed_query", "description": "`POST /v2/embed` (Cohere style) with `input_type: \"query\"`",
     "path": "/v2/embed", "compare_to": "input_type_query", "query": True,
     "body": {"texts": ["$query"], "input_type": "query", "embedding_types": ["float"]}},
    {"name": "over_long_input", "description": "an input far over the token limit",
     "body": {"input": ["$long"]}},
    {"name": "encoding_base64", "description": "`encoding_format: \"base64\"`",
     "body": {"input": ["$doc"], "encoding_format": "base64"}},
    {"name": "encoding_float", "description": "`encoding_format: \"float\"` stated explicitly",
     "body": {"input": ["$doc"], "encoding_format": "float"}},
    {"name": "empty_list", "description": "`input: []` (a client error)", "body": {"input": []}},
    {"name": "empty_string", "description": "`input: \"\"`", "body": {"input": ""}},
    {"name": "token_ids", "description": "pre-tokenised input (list of token ids)", "body": {"input": ["$token_ids"]}},
    {"name": "batch8_member", "description": "the same document inside a batch of 8 (must equal the batch of 1)",
     "body": {"input": "$docs8"}},
    {"name": "whitespace_padded", "description": "the document with leading/trailing whitespace",
     "body": {"input": ["  $doc \n"]}},
    {"name": "unknown_model", "description": "a `model` name the server does not serve",
     "body": {"input": ["$doc"], "model": "no-such-model"}},
    {"name": "large_batch", "description": "512 inputs in one request", "body": {"input": "$large_batch"}},
    {"name": "non_json_body", "description": "a body that is not JSON (a client error)", "raw_body": "this is not json"},
    {"name": "wrong_type", "description": "`input` of the wrong type (a number)", "body": {"input": 12345}},
    {"name": "unicode_mixed", "description": "Korean, emoji and a zero-width space", "body": {"input": ["$unicode"]}},
    # vLLM #40682: with prefix caching, last-token pooling gave the second of two identical requests another vector
    # the text fills the model's window up to 512 tokens: a prefix cache keeps whole blocks only (vLLM on CPU: 128
    # tokens), so a short document would never be served from it and the repeat would test nothing
    {"name": "same_text_twice", "description": "one text of up to 512 tokens sent twice, whatever contract.repeats says (a prefix cache meeting last-token pooling answers the second otherwise)",
     "body": {"input": ["$window"]}, "repeats": 2},
]


def long_input(token_limit: int | None) -> str:
    """The over-long probe's input: far over the model's own limit (one token per word for every tokenizer here)."""
    return "word " * max(2000, 4 * (token_limit or 0))


UNICODE_SAMPLE = "임베딩 서버 교체 🚀 테스트\u200b입니다 — naïve café"


def catalogue_specs() -> list[ProbeSpec]:
    return [ProbeSpec(**entry) for entry in CATALOGUE]


def select_probes(names: list[str] | str, custom: list[ProbeSpec]) -> list[ProbeSpec]:
    specs = {spec.name: spec for spec in catalogue_specs()}
    if names == "all":
        chosen = list(specs.values())
    else:
        unknown = [n for n in names if n not in specs]
        if unknown:
            raise ValueError(f"contract.probes: unknown probe(s) {unknown}; known: {sorted(specs)}")
        chosen = [specs["plain"]] + [specs[n] for n in names if n != "plain"]
        # a probe compared with another one needs that one's answers too
        for spec in list(chosen):
            if spec.compare_to in specs and specs[spec.compare_to] not in chosen:
                chosen.append(specs[spec.compare_to])
    chosen += list(custom)
    known = {spec.name for spec in chosen}
    for spec in chosen:
        if spec.compare_to is not None and spec.compare_to not in known:
            raise ValueError(f"contract.custom: probe {spec.name!r} has compare_to {spec.compare_to!r}, "
                             f"which is not among the probes run: {sorted(known)}")
    return chosen


@dataclass
class ProbeContext:
    doc: str
    docs8: list[str]
    query: str
    task: str
    model: str
    native_dim: int = 0
    token_ids: list[int] = field(default_factory=list)
    token_limit: int | None = None  # the model's own (measure.model_limits): $long is far over it
    window: str = ""  # documents joined up to the model's limit (at most 512 tokens): $window

    def values(self) -> dict[str, Any]:
        reduced = 256 if self.native_dim > 256 else max(1, self.native_dim // 2)
        return {
            "$doc": self.doc,
            "$docs8": self.docs8,
            "$query": self.query,
            "$task": self.task,
            "$long": long_input(self.token_limit),
            "$native_dim": self.native_dim,
            "$reduced_dim": reduced,
            "$token_ids": self.token_ids,
            # 16 characters: the probe is about how many inputs one request may carry, not their length; at 80
            # the sample's Korean documents made ~35k tokens (padded to 135 per slice; 11 s of the legacy
            # server per send, sent twice per candidate, bare and through the shim), at 16 ~9.7k (MiniLM's
            # tokenizer, measured)
            "$large_batch": [f"{self.docs8[i % len(self.docs8)][:LARGE_BATCH_CHARS]} #{i}" for i in range(512)],
            "$unicode": UNICODE_SAMPLE,
            "$window": self.window or self.doc,
        }


def _fill(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if value in values:
            return values[value]
        for key in ("$doc",):  # placeholders embedded in a longer string
            if key in value:
                return value.replace(key, values[key])
        return value
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


def build_request(spec: ProbeSpec, ctx: ProbeContext) -> tuple[bytes, dict[str, Any] | None]:
    """The exact bytes to send, and the JSON body (None for a raw body)."""
    if spec.raw_body is not None:
        return spec.raw_body.encode(), None
    body = {"model": ctx.model, **_fill(spec.body or {}, ctx.values())}
    return json.dumps(body, ensure_ascii=False).encode(), body


def describe_body(body: dict[str, Any] | None, raw: bytes) -> dict[str, Any]:
    """What was sent, in a readable size (long inputs summarised)."""
    if body is None:
        return {"raw_body": raw.decode(errors="replace")[:200]}
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key == "input" and isinstance(value, list) and len(value) > 2:
            out[key] = f"<{len(value)} inputs>"
        elif isinstance(value, str) and len(value) > 120:
            out[key] = value[:60] + f"... <{len(value)} chars>"
        elif isinstance(value, list) and value and isinstance(value[0], str) and len(value[0]) > 120:
            out[key] = [v[:60] + f"... <{len(v)} chars>" for v in value]
        else:
            out[key] = value
    return out


def _token_ids(model_path: str, text: str) -> list[int]:
    return list(load_tokenizer(model_path)(text, truncation=True, max_length=64)["input_ids"])


WINDOW_TOKENS = 512


def window_text(model_path: str, texts: list[str], token_limit: int | None) -> str:
    """The documents' words in order, as many as fit the model's limit (at most :data:`WINDOW_TOKENS`, 8 tokens
    spare for a server's own special tokens), counted by the model's tokenizer."""
    tokenizer = load_tokenizer(model_path)
    budget = min(token_limit or WINDOW_TOKENS, WINDOW_TOKENS) - 8
    words = " ".join(texts).split()
    low, high = 1, len(words)  # the most words whose count fits: counts grow with words, so a bisection finds it
    while low < high:
        middle = (low + high + 1) // 2
        fits = len(tokenizer(" ".join(words[:middle]), add_special_tokens=True)["input_ids"]) <= budget
        low, high = (middle, high) if fits else (low, middle - 1)
    return " ".join(words[:low])


def probe_context(experiment: Experiment, workload: Workload, plain: EmbeddingResponse, model_path: str,
                  fallback_dim: int = 0, token_limit: int | None = None) -> ProbeContext:
    """What the probe catalogue's placeholders are filled with; the native size comes from the plain answer.
    The direct probes and the shim's re-probes both build theirs with :func:`run_context`, so that a re-probe sends
    the direct probe's exact request."""
    return ProbeContext(
        doc=workload.documents[0].text,
        docs8=[d.text for d in workload.documents[:8]],
        query=workload.queries[0].text if workload.queries else workload.documents[1].text,
        task=experiment.model.query_task,
        model=experiment.model.served_name,
        native_dim=len(plain.vectors[0]) if plain.ok and plain.vectors else fallback_dim,
        token_ids=_token_ids(model_path, workload.documents[0].text[:200]),
        token_limit=token_limit,
        window=window_text(model_path, [d.text for d in workload.documents[:16]], token_limit),
    )


def run_context(experiment: Experiment, workload: Workload, plain: EmbeddingResponse, model_path: str,
                fallback_dim: int = 0) -> ProbeContext:
    """The one probe context of a run: :func:`probe_context` at the model's own token limit (its configuration).
    The shim's re-probes once built theirs without the limit and sent a 502-token window where the direct probe
    had sent 248 tokens, and read the answers' difference as one the shim opened (issue 54)."""
    from embedswap.model_limits import token_limit

    return probe_context(experiment, workload, plain, model_path, fallback_dim=fallback_dim,
                         token_limit=token_limit(model_path))
