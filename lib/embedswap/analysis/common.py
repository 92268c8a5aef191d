"""Small readers of a summary shared by the analysis modules and the report."""

from __future__ import annotations

from typing import Any


def is_measured(section: Any) -> bool:
    """Whether a summary section (a dict) says ``measured: true``."""
    return isinstance(section, dict) and bool(section.get("measured"))


def roles(summary: dict[str, Any]) -> tuple[str, list[str]]:
    """(legacy name, candidate names) of a summary."""
    info = summary.get("roles") or {}
    candidate = info.get("candidate")
    return info.get("legacy", "legacy"), list(info.get("candidates") or ([candidate] if candidate else []))


def failed_status(row: dict[str, Any], name: str) -> bool:
    """Whether ``name`` answered a contract probe with a 5xx or no answer (status 0)."""
    status = ((row.get("by_target") or {}).get(name) or {}).get("status")
    return isinstance(status, int) and (status == 0 or status >= 500)


def shim_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The probes re-sent through the client shim (``shim.rows``), or none."""
    section = summary.get("shim")
    return (section.get("rows") or []) if isinstance(section, dict) else []


def shimmed(summary: dict[str, Any]) -> list[str]:
    """Candidates probed through the shim (they have verdicts through it)."""
    rows = shim_rows(summary)
    return [n for n in roles(summary)[1] if any(((r.get("verdicts") or {}).get(n) or {}).get("verdict") for r in rows)]
