"""Small readers of a summary shared by the analysis modules and the report."""

from __future__ import annotations

from typing import Any

from embedswap.summary.model import SummaryBody
from embedswap.summary.types_common import Section
from embedswap.summary.types_sections import ShimRow
from embedswap.summary.types_vectors import ProbeRow


def is_measured(section: Section | dict[str, Any] | None) -> bool:
    """Whether a summary section says ``measured: true`` (a typed section, or a dict while report sections still
    read dicts)."""
    if isinstance(section, dict):
        return bool(section.get("measured"))
    return bool(getattr(section, "measured", False))


def roles(summary: SummaryBody) -> tuple[str, list[str]]:
    """(legacy name, candidate names) of a summary."""
    info = summary.roles
    return info.legacy, list(info.candidates or ([info.candidate] if info.candidate else []))


def failed_status(row: ProbeRow | ShimRow, name: str) -> bool:
    """Whether ``name`` answered a contract probe with a 5xx or no answer (status 0)."""
    side = row.by_target.get(name)
    status = side.status if side is not None else None
    return isinstance(status, int) and (status == 0 or status >= 500)


def shim_rows(summary: SummaryBody) -> list[ShimRow]:
    """The probes re-sent through the client shim (``shim.rows``), or none."""
    return summary.shim.rows


def verdict_of(row: ShimRow, key: str, name: str) -> str | None:
    """One candidate's verdict in a shim row (``key``: ``verdicts`` through the shim, or ``naive_verdicts``)."""
    verdict = getattr(row, key).get(name)
    return verdict.verdict if verdict is not None else None


def shimmed(summary: SummaryBody) -> list[str]:
    """Candidates probed through the shim (they have verdicts through it)."""
    rows = shim_rows(summary)
    return [n for n in roles(summary)[1] if any(verdict_of(r, "verdicts", n) for r in rows)]


def api_shape(summary: SummaryBody, name: str) -> str | None:
    """The API shape a server was configured to speak (``targets.<name>.api_shape``; the kit's own servers and a
    target configured without the key speak OpenAI's), None for a server the summary does not hold."""
    target = summary.targets.get(name)
    return str(getattr(target.config, "api_shape", None) or "openai") if target is not None else None
