"""What step 05's multimodal part found: passed / failed / not measured, the lowest cosine per part (text
captions, images) and the status of the mixed text+image request. Read by the report; a user's CI reads the same."""

from __future__ import annotations

from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import MultimodalFinding


def multimodal_finding(summary: SummaryBody) -> MultimodalFinding:
    multimodal = summary.parity.multimodal
    rows = multimodal.rows if multimodal is not None else []
    if multimodal is None or not multimodal.measured or not rows:
        return MultimodalFinding(code="multimodal_not_measured", worst={}, mixed_status=None)
    worst: dict[str, float | None] = {}
    for row in rows:
        part = str(row.part or row.modality)
        value = row.cos_min
        worst[part] = value if part not in worst or value is None or worst[part] is None else min(worst[part], value)
    passed = multimodal.passed is True and all(r.passed is True for r in rows)
    return MultimodalFinding(code="multimodal_passed" if passed else "multimodal_failed", worst=worst,
                             mixed_status=multimodal.mixed_request.status
                             if multimodal.mixed_request is not None else None)
