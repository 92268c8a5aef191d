"""An answer checked against its own request, not only against the legacy server's answer.

Comparing two servers cannot see a promise both break (base64 asked, floats answered by both) nor one the client
relies on regardless of the other side (a 200 status). Each check here reads one probe record (as
``measure.capture.capture_probes`` writes it: ``sent``, ``status``, ``error``, ``n_vectors``, ``indices``,
``encoding``, ``model``, ``prompt_tokens``, ``tokenizer_tokens``, ``token_limit``) and returns reason codes tagged
with an aspect:

- ``no_embeddings``: a 200 that carries no embeddings (an error object, a malformed body); a client trusting the
  status breaks;
- ``index``: ``data[].index`` not complete and unique (duplicated or missing positions);
- ``count_asked``: a different number of vectors than inputs sent;
- ``model_asked``: the echoed ``model`` is not the model asked for;
- ``encoding_asked``: the answer's encoding is not the requested ``encoding_format``;
- ``usage_truncation``: ``usage`` says fewer tokens than the input has (the server embedded a cut input), or more
  tokens than the model can embed (it counts tokens that were cut away).
"""

from __future__ import annotations

import re
from typing import Any

from embedswap.reasons import reason

# the aspects in the order the probe table lists them, after contract.ASPECTS
REQUEST_ASPECTS = ["no_embeddings", "index", "count_asked", "model_asked", "encoding_asked", "usage_truncation"]
# the aspects that make the vectors unusable or wrong (the rest are metadata or format)
BROKEN_ANSWER = {"no_embeddings", "index"}
_INPUT_KEYS = ("input", "texts", "inputs")
SPECIAL_TOKENS = 2  # per input: a server that counts without the tokenizer's special tokens is not cutting
_SUMMARISED = re.compile(r"^<(\d+) inputs>$")


def asked(record: dict[str, Any]) -> dict[str, Any]:
    """What the request asked for, read from the body as the capture describes it (``sent``): ``model``,
    ``encoding`` (``encoding_format`` or Cohere's ``embedding_types``), ``n_inputs`` (None where unknown)."""
    sent = record.get("sent") or {}
    if not isinstance(sent, dict):
        return {"model": None, "encoding": None, "n_inputs": None}
    encoding = sent.get("encoding_format")
    types = sent.get("embedding_types")
    if encoding is None and isinstance(types, list) and len(types) == 1 and isinstance(types[0], str):
        encoding = types[0]
    n_inputs = None
    for key in _INPUT_KEYS:
        if key not in sent:
            continue
        value = sent[key]
        if isinstance(value, str):
            match = _SUMMARISED.match(value)  # describe_body shortens long input lists
            n_inputs = int(match.group(1)) if match else 1
        elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            n_inputs = 1  # one pre-tokenised input
        elif isinstance(value, list) and value:
            n_inputs = len(value)
        break
    model = sent.get("model")
    return {"model": model if isinstance(model, str) else None,
            "encoding": encoding if encoding in ("float", "base64") else None, "n_inputs": n_inputs}


def broken_200(record: dict[str, Any]) -> bool:
    """A 200 whose body gave no usable embeddings (the client recorded why in ``error``)."""
    return record.get("status") == 200 and (record.get("error") is not None or record.get("n_vectors") is None)


def _index_complete(indices: Any) -> bool | None:
    if not isinstance(indices, list):
        return None
    return sorted(indices) == list(range(len(indices)))


def check_broken(record: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(aspect, reason) of a 200 without usable embeddings; None for any other answer."""
    if not broken_200(record):
        return None
    error = str(record.get("error") or "no data")[:160]
    if _index_complete(record.get("indices")) is False:
        return "index", reason("difference_request_index", indices=str(record.get("indices"))[:80])
    return "no_embeddings", reason("difference_request_no_embeddings", error=error)


def check_answer(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The promises a usable 200 answer breaks against its own request: ``[(aspect, reason), ...]``."""
    if record.get("status") != 200 or broken_200(record):
        return []
    found: list[tuple[str, dict[str, Any]]] = []
    want = asked(record)
    n = record.get("n_vectors")
    if want["n_inputs"] is not None and isinstance(n, int) and n != want["n_inputs"]:
        found.append(("count_asked", reason("difference_request_count", asked=want["n_inputs"], answered=n)))
    echoed = record.get("model")
    if want["model"] is not None and echoed is not None and echoed != want["model"]:
        found.append(("model_asked", reason("difference_request_model", asked=repr(want["model"]),
                                            echoed=repr(echoed))))
    encoding = record.get("encoding")
    if want["encoding"] is not None and encoding is not None and encoding != want["encoding"]:
        found.append(("encoding_asked", reason("difference_request_encoding", asked=want["encoding"],
                                               answered=encoding)))
    usage = usage_against_truncation(record)
    if usage is not None:
        found.append(("usage_truncation", usage))
    return found


def usage_against_truncation(record: dict[str, Any]) -> dict[str, Any] | None:
    """``usage.prompt_tokens`` of an input over the model's own limit (``token_limit``) against the tokens it has
    (the model tokenizer's count): fewer is the count of a cut input (the tokens actually embedded), more than
    the limit counts tokens that were cut away."""
    used, cut, limit = record.get("prompt_tokens"), record.get("tokenizer_tokens"), record.get("token_limit")
    whole = record.get("input_tokens", cut)  # a record without the whole count: the count cut at the limit
    if not isinstance(used, int) or not isinstance(cut, int) or not isinstance(whole, int):
        return None
    n = record.get("n_vectors") or 1
    if not isinstance(limit, int) or whole <= limit * n:
        # within the model's limit nothing needs cutting: a different count is usage counted otherwise
        # (characters, no special tokens), which the legacy comparison's `usage` aspect already names
        return None
    if used < cut - SPECIAL_TOKENS * n:  # fewer than a cut at the model's own limit keeps
        return reason("difference_request_usage_cut", used=used, counted=cut, limit=limit)
    if used > limit * n:
        return reason("difference_request_usage_cut_away", used=used, limit=limit)
    return None
