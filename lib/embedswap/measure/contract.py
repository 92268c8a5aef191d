"""The probe catalogue (data, not code per probe) and the verdict rules.

A probe is a named variant of the plain request, sent to every server under test. Its answer is compared
between the legacy server and each candidate, and classified:

- ``same``: equivalent answers (same status class; vectors within the parity threshold);
- ``silent-divergence``: both answered 200 but vectors or fields differ (the dangerous class: no error, worse search);
- ``loud-failure``: one side errors (4xx) where the other answered;
- ``retry-hazard``: a client error answered with 5xx, which retrying clients will resend forever;
- ``format-difference``: the same numbers in another shape (e.g. base64 string vs float array);
- ``metadata-difference``: the same vectors, but ``usage`` (missing, or off from the model tokenizer's count) or the
  echoed ``model`` differ: billing and token budgets break, search does not;
- ``not-applicable``: the target's API shape cannot express the probe (``embedswap.measure.api_shapes``); nothing was sent.

Each verdict lists the **aspects** that differ (:data:`ASPECTS`: count, dimension, direction, length, order, usage,
model, encoding) and words its detail as a reason code (``embedswap.reasons``), so the report says it in every
language. The verdict is the worst aspect's: a vector aspect makes it ``silent-divergence``. Cosine cannot see a
scaled vector, so length is compared on its own (the L2 norm ratio; a dot-product index ranks by it).

Most probes go to ``/v1/embeddings``; a probe may name another route (``path``) and the probe whose legacy
answer it is compared with (``compare_to``), for routes the legacy server does not have.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from embedswap.config.sections import ProbeSpec
from embedswap.measure.repeats import representative, spread
from embedswap.measure.request_checks import REQUEST_ASPECTS, check_answer, check_broken
from embedswap.reasons import explain, reason

if TYPE_CHECKING:  # types of probe_context's arguments only
    from embedswap.config.experiment import Experiment
    from embedswap.measure.client import EmbeddingResponse
    from embedswap.measure.workload import Workload

DEFAULT_PROBE_PATH = "/v1/embeddings"
VERDICTS = ["same", "silent-divergence", "loud-failure", "retry-hazard", "format-difference", "metadata-difference",
            "not-applicable", "empty-200", "nondeterministic"]

# Placeholders filled per run: $doc (first document), $query (first query), $docs8 (first 8 documents),
# $long (far over any token limit), $native_dim / $reduced_dim (from the plain answer), $token_ids (the
# tokenizer's ids for $doc), $large_batch (512 short inputs), $unicode (Korean + emoji + zero-width space).
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
    {"name": "same_text_twice", "description": "the plain request sent twice, whatever contract.repeats says (a prefix cache meeting last-token pooling answers the second otherwise)",
     "body": {"input": ["$doc"]}, "repeats": 2},
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
            "$large_batch": [f"{self.docs8[i % len(self.docs8)][:80]} #{i}" for i in range(512)],
            "$unicode": UNICODE_SAMPLE,
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


# --- verdicts ------------------------------------------------------------------------------------------------
def cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("nan")
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / denominator) if denominator else float("nan")


@dataclass
class Classified:
    """How one candidate's answer reads against the legacy server's: a classification (``verdict`` keeps its stored
    name), not a decision against a margin (those are :class:`embedswap.analysis.equivalence.Verdict`)."""
    verdict: str
    detail: str  # the English sentence (explain(reason)): what summaries of older kits hold
    cosine: float | None = None
    aspects: list[str] = field(default_factory=list)  # what differs: dimension, direction, length, usage...
    reason: dict[str, Any] | None = None  # the detail as a reason code (embedswap.reasons), worded per language

    def record(self) -> dict[str, Any]:
        """The verdict as the summary stores it (``detail_reason`` beside the English ``detail``)."""
        out = {"verdict": self.verdict, "detail": self.detail, "cosine": self.cosine, "aspects": self.aspects}
        if self.reason is not None:
            out["detail_reason"] = self.reason
        return out


NORM_TOLERANCE = 1e-3  # relative: float32 answers of the same vector agree to ~1e-6 in L2 norm
# the aspects in the order the report lists them (contract.classify's ``aspects``)
ASPECTS = ["count", "dimension", "direction", "length", "order", "usage", "model", "encoding", *REQUEST_ASPECTS,
           "repeats"]


def norm_ratio(a: Any, b: Any) -> float | None:
    """Candidate / legacy L2 norm; None where either is missing or of length zero (cosine cannot see scale)."""
    na, nb = float(np.linalg.norm(np.asarray(a, dtype=np.float64))), float(np.linalg.norm(np.asarray(b, dtype=np.float64)))
    return nb / na if na and np.isfinite(na) and np.isfinite(nb) else None


def _verdict(verdict: str, code: str, cosine: float | None = None, aspects: list[str] | None = None,
             **params: Any) -> Classified:
    return Classified(verdict, explain(code, **params), cosine, list(aspects or []), reason(code, **params))


def _status_verdict(ls: int, cs: int) -> Classified:
    """At least one side did not answer 200: which class of failure it is."""
    if ls >= 500 or cs >= 500 or ls == 0 or cs == 0:
        side = "candidate" if (cs >= 500 or cs == 0) else "legacy"
        other = ls if side == "candidate" else cs
        if other == 200 or 400 <= other < 500:
            return _verdict("retry-hazard", "detail_retry_hazard", side=side,
                            status=cs if side == "candidate" else ls, other=other)
        return _verdict("loud-failure", "detail_both_server_errors", legacy=ls, candidate=cs)
    if ls == 200 or cs == 200:
        failing = "candidate" if cs != 200 else "legacy"
        return _verdict("loud-failure", "detail_rejected", side=failing, status=cs if failing == "candidate" else ls)
    if ls == cs:
        return _verdict("same", "detail_both_rejected_with", status=ls)
    return _verdict("same", "detail_both_rejected", legacy=ls, candidate=cs)


def _vector_differences(legacy: dict[str, Any], candidate: dict[str, Any],
                        same_threshold: float) -> tuple[list[dict[str, Any]], list[str], float | None]:
    """(differences as reason codes, aspects, cosine) of the vectors of two 200 answers."""
    differences: list[dict[str, Any]] = []
    aspects: list[str] = []
    if legacy.get("n_vectors") != candidate.get("n_vectors"):
        differences.append(reason("difference_n_vectors", legacy=legacy.get("n_vectors"),
                                  candidate=candidate.get("n_vectors")))
        aspects.append("count")
    if legacy.get("dim") != candidate.get("dim"):
        differences.append(reason("difference_dimensions", legacy=legacy.get("dim"), candidate=candidate.get("dim")))
        aspects.append("dimension")
    cos = None
    if legacy.get("vector") is not None and candidate.get("vector") is not None:
        same_shape = np.shape(legacy["vector"]) == np.shape(candidate["vector"])
        value = cosine(legacy["vector"], candidate["vector"])
        cos = value if np.isfinite(value) else None  # vectors of two lengths have no cosine: the dimensions differ
        if cos is None and same_shape:
            differences.append(reason("difference_cosine_undefined"))
            aspects.append("direction")
        elif cos is not None and not cos >= same_threshold:
            differences.append(reason("difference_cosine_threshold", cosine=f"{cos:.4f}", threshold=same_threshold))
            aspects.append("direction")
        elif not same_shape and "dimension" not in aspects:
            differences.append(reason("difference_vector_shapes", legacy=str(np.shape(legacy["vector"])),
                                      candidate=str(np.shape(candidate["vector"]))))
            aspects.append("dimension")
        ratio = norm_ratio(legacy["vector"], candidate["vector"])
        if ratio is not None and abs(ratio - 1.0) > NORM_TOLERANCE:
            # a dot-product index ranks these differently even where the cosine is 1
            l_norm = float(np.linalg.norm(np.asarray(legacy["vector"], dtype=np.float64)))
            differences.append(reason("difference_norm_ratio", ratio=f"{ratio:.4f}", legacy=f"{l_norm:.4f}",
                                      candidate=f"{l_norm * ratio:.4f}"))
            aspects.append("length")
    if legacy.get("index_order_ok") is not False and candidate.get("index_order_ok") is False:
        differences.append(reason("difference_order"))  # re-sorted by the kit; a positional client is not
        aspects.append("order")
    return differences, aspects, cos


def _usage_difference(legacy: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any] | None:
    """How ``usage.prompt_tokens`` differs, measured against the model's own tokenizer where the probe record
    carries its count (``tokenizer_tokens``, written at capture time); None when both sides agree."""
    lt, ct = legacy.get("prompt_tokens"), candidate.get("prompt_tokens")
    if lt == ct:
        return None
    expected = candidate.get("tokenizer_tokens", legacy.get("tokenizer_tokens"))
    if ct is None:
        if expected is None:
            return reason("difference_usage_missing", legacy=lt)
        return reason("difference_usage_missing_counted", legacy=lt, expected=expected)
    if expected is None or not isinstance(ct, int):
        return reason("difference_prompt_tokens", legacy=lt, candidate=ct)
    return reason("difference_usage_off", legacy=lt, candidate=ct, expected=expected, off=f"{ct - expected:+d}")


def classify(legacy: dict[str, Any], candidate: dict[str, Any], same_threshold: float = 0.999,
             against_request: bool = True) -> Classified:
    """Compare one probe's answers. Each side: status, error, encoding, dim, n_vectors, prompt_tokens, vector
    (and optionally model, index_order_ok, tokenizer_tokens). The verdict is the worst aspect's: a vector
    difference (direction, length, dimension, count, order) is silent-divergence; usage or model alone is
    metadata-difference; an encoding alone is format-difference. ``against_request`` also checks the candidate's
    answer against its own request (``measure.request_checks``); a 200 without embeddings is ``empty-200``. The
    shim's answers are not (it answers as the legacy server would, on purpose)."""
    if legacy.get("not_applicable") or candidate.get("not_applicable"):
        side = legacy if legacy.get("not_applicable") else candidate
        return _verdict("not-applicable", "detail_not_applicable", shape=side.get("api_shape") or "?",
                        field=side.get("not_applicable_field") or "?")
    intermittent = _intermittent(legacy, candidate, same_threshold)
    if intermittent is not None:  # identical requests answered otherwise: no comparison says anything systematic
        return intermittent
    legacy, candidate = representative(legacy, same_threshold), representative(candidate, same_threshold)
    broken = check_broken(candidate) if against_request else None
    if broken is not None:  # a 200 without embeddings: no status-based client notices, whatever legacy did
        aspect, why = broken
        return _verdict("empty-200", "detail_empty_200", None, [aspect], problem=why,
                        legacy=legacy.get("status"))
    ls, cs = legacy["status"], candidate["status"]
    if against_request and check_broken(legacy) is not None:  # legacy's 200 carried nothing: the swap cures it
        return _verdict("loud-failure", "detail_legacy_empty_200", status=cs)
    if ls != 200 or cs != 200:
        return _status_verdict(ls, cs)
    differences, aspects, cos = _vector_differences(legacy, candidate, same_threshold)
    candidate_metadata: list[tuple[str, dict[str, Any]]] = []
    formats: list[tuple[str, dict[str, Any]]] = []
    # the candidate's answer against its own request
    for aspect, why in check_answer(candidate) if against_request else []:
        if aspect == "count_asked":
            differences.append(why)
            aspects.append(aspect)
        elif aspect == "encoding_asked":
            formats.append((aspect, why))
        else:
            candidate_metadata.append((aspect, why))
    metadata: list[dict[str, Any]] = []
    usage = _usage_difference(legacy, candidate)
    if usage is not None:
        metadata.append(usage)
        aspects.append("usage")
    if (legacy.get("model") is not None and candidate.get("model") is not None  # a shape without the field
            and legacy.get("model") != candidate.get("model")
            and not any(aspect == "model_asked" for aspect, _ in candidate_metadata)):
        metadata.append(reason("difference_model", legacy=repr(legacy.get("model")),
                               candidate=repr(candidate.get("model"))))
        aspects.append("model")
    metadata += [why for _, why in candidate_metadata]
    aspects += [aspect for aspect, _ in candidate_metadata] + [aspect for aspect, _ in formats]
    if differences:
        return _verdict("silent-divergence", "detail_both_200_but", cos, aspects,
                        differences=differences + metadata + [why for _, why in formats])
    if metadata:
        # vectors match: billing and token budgets break, search does not
        return _verdict("metadata-difference", "detail_metadata", cos, aspects,
                        differences=metadata + [why for _, why in formats])
    if formats:  # the legacy server may ignore the request too; the candidate's answer is checked on its own
        return _verdict("format-difference", "detail_format_asked", cos, aspects,
                        differences=[why for _, why in formats])
    if legacy.get("encoding") != candidate.get("encoding"):
        return _verdict("format-difference", "detail_format", cos, ["encoding"],
                        legacy=legacy.get("encoding"), candidate=candidate.get("encoding"))
    return _verdict("same", "detail_equivalent", cos)


def _intermittent(legacy: dict[str, Any], candidate: dict[str, Any], same_threshold: float) -> Classified | None:
    """``nondeterministic`` where one side's repeats of the probe differ among themselves (candidate first)."""
    for side, record in (("candidate", candidate), ("legacy", legacy)):
        found = spread(record, same_threshold)
        if found is None or not found.differing:
            continue
        kinds = ", ".join(f"{kind} {count}" for kind, count in found.kinds.items()) or "none"
        cos = "n/a" if found.cosine_min is None else f"{found.cosine_min:.4f}"
        return _verdict("nondeterministic", "detail_nondeterministic", found.cosine_min, ["repeats"], side=side,
                        differing=found.differing, sent=found.sent, repeat_cosine=cos, kinds=kinds)
    return None


def _token_ids(model_path: str, text: str) -> list[int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    return list(tokenizer(text, truncation=True, max_length=64)["input_ids"])


def probe_context(experiment: Experiment, workload: Workload, plain: EmbeddingResponse, model_path: str,
                  fallback_dim: int = 0, token_limit: int | None = None) -> ProbeContext:
    """What the probe catalogue's placeholders are filled with; the native size comes from the plain answer."""
    return ProbeContext(
        doc=workload.documents[0].text,
        docs8=[d.text for d in workload.documents[:8]],
        query=workload.queries[0].text if workload.queries else workload.documents[1].text,
        task=experiment.model.query_task,
        model=experiment.model.served_name,
        native_dim=len(plain.vectors[0]) if plain.ok and plain.vectors else fallback_dim,
        token_ids=_token_ids(model_path, workload.documents[0].text[:200]),
        token_limit=token_limit,
    )
