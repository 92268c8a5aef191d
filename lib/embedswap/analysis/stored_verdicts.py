"""A verdict (:class:`embedswap.stats.equivalence.Verdict`, the one model) as summary.json reads it back, and a
latency point's error gate: the verdict with its statuses, request counts and Retry-After values."""

from __future__ import annotations

from typing import TypeVar

from embedswap.stats.equivalence import Verdict
from embedswap.summary.types_equivalence import ErrorGate

StoredModel = TypeVar("StoredModel", bound=Verdict)


def stored(v: StoredModel) -> StoredModel:
    """``v`` as summary.json reads it back: every stored field set, the working (p-values, ``params``) at its
    defaults. A verdict with some fields unset would write them after ``slices`` (its serializer appends the unset
    ones), so the decisions hold this copy, whose keys keep the model's order."""
    return type(v).model_validate(v.model_dump())


def stored_gate(v: Verdict) -> ErrorGate:
    """An error gate as summary.json reads it back (see :func:`stored`)."""
    return stored(typed_gate(v))


def typed_gate(v: Verdict) -> ErrorGate:
    """The gate of an error-rate verdict: its figures (``params``) as the gate's own fields."""
    waits = v.params.get("retry_after") or {}
    retry = ([str(w) for w in waits["429"]] if isinstance(waits.get("429"), list)
             else [str(waits["429"])] if waits.get("429") is not None else [])
    return ErrorGate(**{name: getattr(v, name) for name in type(v).model_fields},
                     statuses={str(k): int(n) for k, n in (v.params.get("statuses") or {}).items()},
                     requests=v.params.get("requests"), errors=v.params.get("errors"), retry_after=retry)
