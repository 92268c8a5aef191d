"""What step 05's multimodal part found: passed / failed / not measured, the lowest cosine per part (text
captions, images) and the status of the mixed text+image request. Read by the report; a user's CI reads the same."""

from __future__ import annotations

from typing import Any


def multimodal_finding(summary: dict[str, Any]) -> dict[str, Any]:
    multimodal = (summary.get("parity") or {}).get("multimodal") or {}
    rows = multimodal.get("rows") or []
    if not multimodal.get("measured") or not rows:
        return {"code": "multimodal_not_measured", "worst": {}, "mixed_status": None}
    worst: dict[str, float | None] = {}
    for row in rows:
        part = str(row.get("part") or row.get("modality"))
        value = row.get("cos_min")
        worst[part] = value if part not in worst or value is None or worst[part] is None else min(worst[part], value)
    passed = multimodal.get("pass") is True and all(r.get("pass") is True for r in rows)
    return {"code": "multimodal_passed" if passed else "multimodal_failed", "worst": worst,
            "mixed_status": (multimodal.get("mixed_request") or {}).get("status")}
