"""A verdict (:class:`embedswap.stats.equivalence.Verdict`, the one model) as summary.json stores it, and a latency
point's error gate: the verdict with its statuses, request counts and Retry-After values."""

from __future__ import annotations

from typing import Any

from embedswap.stats.equivalence import Verdict
from embedswap.summary.types_equivalence import ErrorGate


def stored(v: Verdict) -> dict[str, Any]:
    """The stored part of a verdict: what :meth:`Verdict.model_dump` writes."""
    return v.model_dump()


def stored_gate(v: Verdict) -> dict[str, Any]:
    """An error gate's stored part (validates as :class:`ErrorGate`)."""
    return typed_gate(v).model_dump()


def typed_gate(v: Verdict) -> ErrorGate:
    """The gate of an error-rate verdict: its figures (``params``) as the gate's own fields."""
    waits = v.params.get("retry_after") or {}
    retry = ([str(w) for w in waits["429"]] if isinstance(waits.get("429"), list)
             else [str(waits["429"])] if waits.get("429") is not None else [])
    return ErrorGate(**{name: getattr(v, name) for name in type(v).model_fields},
                     statuses={str(k): int(n) for k, n in (v.params.get("statuses") or {}).items()},
                     requests=v.params.get("requests"), errors=v.params.get("errors"), retry_after=retry)
