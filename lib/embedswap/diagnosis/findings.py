"""The diagnosis' vocabulary: a :class:`Hypothesis` (one way of turning texts into vectors) and, for the one that
reproduces a server, the reason codes for what it does differently from the model, worded by
:func:`embedswap.reasons.explain` (``diagnosis_*`` in the catalogues)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from embedswap.reasons import explain


@dataclass(frozen=True)
class Hypothesis:
    """One way of turning the texts into vectors. ``eos``: None as the tokenizer does, True appended, False dropped;
    ``prompt``: the text prepended (None: none); ``max_tokens``: None is the model's own limit."""

    pooling: str
    dense: bool
    normalize: bool
    eos: bool | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    dtype: str = "float32"
    # how a batch is padded (None: as the model's pipeline does): "mask_ignored" pools (and attends) over the
    # padding of its batch; "padding_flipped" pads on the other side (absolute positions shift by the padding);
    # "padding_flipped_position" also pools at the position the model's own side would hold (a pad token)
    batching: str | None = None

    def differences(self, truth: Hypothesis) -> int:
        return sum(getattr(self, f.name) != getattr(truth, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def explain_difference(truth: Hypothesis, found: Hypothesis, name: str, limit: int | None = None,
                       end_token: str | None = None) -> list[dict[str, Any]]:
    """Reason codes for what ``found`` (the server) does differently from ``truth`` (the model)."""
    codes: list[tuple[str, dict[str, Any]]] = []
    if found.pooling != truth.pooling:
        codes.append(("diagnosis_pooling", {"name": name, "pooling": found.pooling, "expected": truth.pooling}))
    if truth.dense and not found.dense:
        codes.append(("diagnosis_dense_ignored", {"name": name}))
    if found.normalize and not truth.normalize:
        codes.append(("diagnosis_normalize_added", {"name": name}))
    if truth.normalize and not found.normalize:
        codes.append(("diagnosis_normalize_missing", {"name": name}))
    if found.eos is True:
        codes.append(("diagnosis_eos_appended", {"name": name, "token": _token(end_token)}))
    if found.eos is False:
        codes.append(("diagnosis_eos_missing", {"name": name, "token": _token(end_token)}))
    if found.prompt != truth.prompt:
        if found.prompt is None:
            codes.append(("diagnosis_prompt_missing", {"name": name, "prompt": _shown(truth.prompt)}))
        elif truth.prompt is not None:  # a query prompt, but not the model's
            codes.append(("diagnosis_prompt_other", {"name": name, "prompt": _shown(found.prompt),
                                                     "expected": _shown(truth.prompt)}))
        else:
            codes.append(("diagnosis_prompt_applied", {"name": name, "prompt": _shown(found.prompt)}))
    if found.max_tokens is not None:
        codes.append(("diagnosis_truncation", {"name": name, "limit": found.max_tokens, "expected": limit}))
    if found.dtype != truth.dtype:
        codes.append(("diagnosis_dtype", {"name": name, "dtype": found.dtype, "expected": truth.dtype}))
    if found.batching is not None:  # its vectors depend on batch mates
        codes.append((f"diagnosis_batch_{found.batching}", {"name": name}))
    return [{"code": c, "params": p, "why": explain(c, **p)} for c, p in codes]


def _token(token: str | None) -> str:
    """The end token as the sentence shows it (``[SEP]``, ``<|endoftext|>``)."""
    return f"'{token}'" if token else "(EOS)"


def _shown(prompt: str | None) -> str:
    """A prompt on one line of a sentence (the kit's template holds a newline)."""
    return (prompt or "").replace("\n", "\\n").strip()
