"""A verdict of :mod:`embedswap.analysis.equivalence` in the stored form summary.json keeps
(:mod:`embedswap.summary.types_equivalence`): the fields the model names, the slices that decided a combined
verdict, and for an error gate its statuses and Retry-After values."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.equivalence import Verdict
from embedswap.summary.types_equivalence import EquivalenceVerdict, ErrorGate

_OWN = set(EquivalenceVerdict.model_fields) - {"slices"}


def stored(v: Verdict) -> dict[str, Any]:
    """The stored part of a verdict (validates as :class:`EquivalenceVerdict`)."""
    out = {name: getattr(v, name) for name in _OWN}
    slices = v.params.get("slices")
    if slices:
        out["slices"] = [str(s) for s in slices]
    return out


def stored_gate(v: Verdict) -> dict[str, Any]:
    """An error gate's stored part (validates as :class:`ErrorGate`)."""
    out = stored(v)
    out.update(statuses={str(k): int(n) for k, n in (v.params.get("statuses") or {}).items()},
               requests=v.params.get("requests"), errors=v.params.get("errors"))
    waits = v.params.get("retry_after") or {}
    out["retry_after"] = [str(w) for w in (waits.get("429") or [])] if isinstance(waits.get("429"), list) else (
        [str(waits["429"])] if waits.get("429") is not None else [])
    return out


def typed(v: Verdict) -> EquivalenceVerdict:
    return EquivalenceVerdict.model_validate(stored(v))


def typed_gate(v: Verdict) -> ErrorGate:
    return ErrorGate.model_validate(stored_gate(v))
