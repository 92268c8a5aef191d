"""summary.json's ``parity`` section: the gate's rows as step 05 recorded them."""

from __future__ import annotations

from typing import Any


from embedswap.captures import Attempt
from embedswap.reasons import not_measured


def parity_section(attempt: Attempt) -> dict[str, Any]:
    if not attempt.has("parity/rows.json"):
        return {**not_measured("parity_not_run"), "rows": [], "pass": None}
    data = attempt.read_json("parity/rows.json")
    if not data.get("rows") and not data.get("not_run") and data.get("why"):  # nothing was gated: not a failure
        return {"measured": False, **data}
    return {"measured": True, **data}
