"""What the shim rewrites (``ShimConfig``), and how that is derived from a candidate's contract-probe captures
(``ShimConfig.from_probes``; the table in ``embedswap.shim``'s docstring)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
from embedswap.wire.api_shapes import ANSWER_LACKS, ApiShape

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


UsageSource = Literal["server", "counted"]


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
    # L2-renormalise every vector the server answers: its vectors were not unit length where the legacy server's
    # were (e.g. `dimensions` sliced without re-normalising, as Infinity 0.0.78 does); a dot-product index needs it.
    renormalise: bool = False
    # `usage` in the answer: "server" = as the server sent it, null where it sent none (never a made-up count);
    # "counted" = where the server sent none (TEI's shape has no field for it), the model's tokenizer counts the
    # inputs sent, labelled as the shim's count. from_probes sets it only when asked and when that count matches
    # the legacy server's on every probe captured (a count the old client never saw would be a made-up one)
    usage: UsageSource = "server"
    # the length each input is cut at for that count (the experiment's max_input_tokens: the yardstick the legacy
    # counts were checked against); None: the model's own limit, or max_input_tokens where the shim truncates
    count_limit_tokens: int | None = None
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
        if self.usage not in ("server", "counted"):
            raise ValueError(f"usage must be 'server' or 'counted', got {self.usage!r}")
        if "{query}" not in self.query_template:
            raise ValueError("query_template must contain '{query}'")
        if self.max_input_tokens is not None and self.max_input_tokens < 1:
            raise ValueError("max_input_tokens must be at least 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.retry_statuses = frozenset(self.retry_statuses)
        self.non_retryable_statuses = frozenset(self.non_retryable_statuses)
        self.drop_fields = tuple(self.drop_fields)

    def rewrites(self) -> list[str]:
        """The settings under which the shim changes a request or an answer (empty: a pass-through, what a shim
        derived from two servers that answer alike must be)."""
        changes = {"strip_dimensions": self.strip_dimensions, "prepend_query_instruction":
                   self.prepend_query_instruction, "max_input_tokens": self.max_input_tokens is not None,
                   "model_override": self.model_override is not None, "drop_fields": bool(self.drop_fields),
                   "force_float": self.force_float, "renormalise": self.renormalise,
                   "reject_empty_strings": self.reject_empty_strings,
                   "non_retryable_statuses": bool(self.non_retryable_statuses),
                   "usage": self.usage == "counted"}
        return [name for name, on in changes.items() if on]

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
                    count_usage: bool = False, api_shape: ApiShape = "openai", **overrides: Any) -> ShimConfig:
        """Settings derived from a candidate's probe captures (records of ``probes.jsonl``).

        ``legacy_records``: the legacy server's probe captures; with them the query-prompt decision uses the
        verdict rules of ``embedswap.measure.contract.classify`` (silent divergence = the field was ignored). Without
        them the shim applies the prompt itself, which is right whether or not the server would have.
        ``max_input_tokens``: the limit to truncate to when the over-long probe failed without stating one
        (Dynamo's frontend answers a bare 500); else the limit comes from the error text.
        ``count_usage``: the user asks the shim to count ``usage`` where the candidate sends none (``usage``
        "counted"); granted only where the tokenizer's count matches the legacy server's on its probe captures.
        ``api_shape``: the candidate's shape; what its answers cannot carry (TEI: usage) is no sign that it treats a
        field otherwise than the legacy server (the probes are compared as the contract section compares them).
        ``overrides``: any ShimConfig field, taking precedence over what was derived.
        """
        from embedswap.answers.classify import classify

        candidate = {r["probe"]: r for r in probe_records}
        legacy = {r["probe"]: r for r in legacy_records} if legacy_records is not None else None
        from embedswap.reasons import explain, reason, reason_of

        reasons: dict[str, str] = {}
        codes: dict[str, dict[str, Any]] = {}
        lacks = ANSWER_LACKS.get(api_shape, frozenset())
        settings: dict[str, Any] = {"tokenizer_path": tokenizer_path}

        def because(setting: str, code: str, **params: Any) -> None:
            codes[setting] = reason(code, **params)
            reasons[setting] = explain(code, **params)

        def status(name: str) -> int | None:
            record = candidate.get(name)
            return None if record is None else record.get("status")

        def answered_alike(name: str) -> bool:
            """The legacy server answered this probe as the candidate did (the shim leaves such requests alone:
            it changes a request only where the two servers differ); False without legacy captures."""
            if legacy is None or name not in legacy or name not in candidate:
                return False
            return classify(legacy[name], candidate[name], same_threshold,
                            shape_lacks=lacks).verdict in ("same", "not-applicable")

        # native dimension: from any successful document answer
        for name in ("plain", "encoding_float", "batch8_member", "unicode_mixed", "input_type_query"):
            record = candidate.get(name)
            if record and record.get("status") == 200 and record.get("dim"):
                settings["native_dim"] = int(record["dim"])
                break

        # dimensions
        rejected = {n: status(n) for n in ("dimensions_native", "dimensions_reduced")
                    if status(n) not in (None, 200) and not answered_alike(n)}
        reduced = candidate.get("dimensions_reduced")
        asked = ((reduced or {}).get("sent") or {}).get("dimensions")
        if not rejected and all(answered_alike(n) for n in ("dimensions_native", "dimensions_reduced")
                                if n in candidate):
            settings["strip_dimensions"] = False  # the legacy server answers `dimensions` as the candidate does
            because("strip_dimensions", "shim_dimensions_alike")
        elif rejected:
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
            if record.get("status") != 200 and not answered_alike(name):
                query_findings.append((name, "rejected",
                                       reason("shim_finding_rejected", probe=name, status=record.get("status"))))
            elif legacy is not None and name in legacy:
                verdict = classify(legacy[name], record, same_threshold, shape_lacks=lacks)
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
        if over_long is not None and over_long.get("status") not in (None, 200) and answered_alike("over_long_input"):
            because("max_input_tokens", "shim_truncate_alike", status=over_long.get("status"))
        elif over_long is not None and over_long.get("status") not in (None, 200):
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
        if (unknown is not None and unknown.get("status") not in (None, 200) and served_name
                and not answered_alike("unknown_model")):
            settings["model_override"] = served_name
            because("model_override", "shim_model_override", status=unknown.get("status"), name=served_name)

        # disguised client errors: never retry those statuses
        disguised: dict[int, list[str]] = {}
        for name, record in candidate.items():
            s = record.get("status") or 0
            if s < 500:
                continue
            legacy_status = (legacy or {}).get(name, {}).get("status")
            if legacy_status == s:  # the legacy server answers it with the same status: the client knows it already
                continue
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
        encodings = [n for n in ("encoding_base64", "encoding_float") if n in candidate]
        if legacy is not None and encodings and all(answered_alike(n) for n in encodings):
            settings["force_float"] = False  # both answer the asked encodings alike: the request goes as it is
            because("force_float", "shim_encoding_alike")
        elif base64_probe is not None and base64_probe.get("encoding") == "base64":
            because("force_float", "shim_force_float")

        if count_usage:  # asked for: granted where the legacy server's counts are the tokenizer's
            settings["usage"], code, params = usage_check(legacy)
            because("usage", code, **params)
        else:
            because("usage", "shim_usage_server")  # said in the report: the shim counts nothing itself

        # vector length: unit-length legacy answers, candidate answers of another length
        off = _not_unit_length(candidate, legacy)
        if off:
            settings["renormalise"] = True
            because("renormalise", "shim_renormalise", probes=", ".join(off))

        extra_reasons = overrides.pop("reasons", {})
        settings.update(overrides)
        for key in extra_reasons:  # a reason given by hand is a free text: it replaces the derived code
            codes.pop(key, None)
        return cls(**settings, reasons={**reasons, **extra_reasons}, reason_codes=codes)


def usage_check(legacy: dict[str, dict[str, Any]] | None) -> tuple[UsageSource, str, dict[str, Any]]:
    """Whether the shim may count ``usage`` itself: (setting, reason code, its parameters). Only where every legacy
    probe answered 200 with a count carries the model tokenizer's count of the same request (``tokenizer_tokens``,
    written at capture) and they are equal: otherwise the old client's budgets were kept in another unit."""
    if legacy is None:
        return "server", "shim_usage_unverified", {}
    compared = [(name, r.get("prompt_tokens"), r.get("tokenizer_tokens")) for name, r in legacy.items()
                if r.get("status") == 200 and isinstance(r.get("prompt_tokens"), int)]
    if not compared or any(expected is None for _, _, expected in compared):
        return "server", "shim_usage_unverified", {}
    differ = [(name, theirs, ours) for name, theirs, ours in compared if theirs != ours]
    if differ:
        name, theirs, ours = differ[0]
        return "server", "shim_usage_count_differs", {"probe": name, "legacy": theirs, "counted": ours,
                                                      "n": len(differ), "compared": len(compared)}
    return "counted", "shim_usage_counted", {"compared": len(compared)}


CLIENT_PREFIXED_QUERIES = "query_vectors_client_prefixed.npy"  # the prompt put in the text by the client
SERVER_INSTRUCTION_QUERIES = "query_vectors_server_instruction.npy"  # `input_type` sent for the server to apply


def shim_query_file(config: dict[str, Any] | None) -> str:
    """The query capture that holds what a client behind the shim sends: the client-prefixed queries where the
    shim puts the prompt in the text (its default), the server-instruction ones where the shim derived for this
    candidate passes ``input_type`` through (the candidate applies the prompt as the legacy server does). Ranking
    and the index once always read the client-prefixed file, so a server compared with itself 'changed' its ranking
    (issue 54: vLLM A/A)."""
    if config is not None and config.get("prepend_query_instruction") is False:
        return SERVER_INSTRUCTION_QUERIES
    return CLIENT_PREFIXED_QUERIES


UNIT_TOLERANCE = 1e-3  # as contract.NORM_TOLERANCE: float32 answers of a unit vector are within ~1e-6 of 1


def _norm(record: dict[str, Any] | None) -> float | None:
    vector = (record or {}).get("vector")
    if record is None or record.get("status") != 200 or not vector:
        return None
    import numpy as np

    return float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))


def _not_unit_length(candidate: dict[str, dict[str, Any]],
                     legacy: dict[str, dict[str, Any]] | None) -> list[str]:
    """The probes whose candidate vector is not unit length where the legacy server's answer to the same probe is
    (without legacy captures: where the candidate's own plain answer is unit length)."""
    off = []
    for name, record in candidate.items():
        norm = _norm(record)
        if norm is None or abs(norm - 1.0) <= UNIT_TOLERANCE:
            continue
        reference = _norm((legacy or {}).get(name)) if legacy is not None else _norm(candidate.get("plain"))
        if reference is not None and abs(reference - 1.0) <= UNIT_TOLERANCE:
            off.append(name)
    return off
