"""What every section builder asks first: does a target have usable captures."""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.reasons import not_measured


def target_missing(attempt: Attempt, name: str) -> dict[str, Any] | None:
    """Why a target has no usable captures (a not-measured entry), or None if it has them."""
    if not attempt.has(f"{name}/target.json"):
        return not_measured("target_not_captured", name=name)
    info = attempt.read_json(f"{name}/target.json")
    if info.get("error"):
        return not_measured("target_failed", name=name, error=info["error"].splitlines()[0][:300])
    return None
