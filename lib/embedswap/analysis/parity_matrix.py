"""What article 003's parity matrix found, per check: how many rows ran, failed or could not run, the largest
drift (1 - lowest cosine) and where, and which backends batch bit-identically. Read by the report; a user's CI
reads the same figures."""

from __future__ import annotations

from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import MatrixFinding

CHECK_ORDER = ("long_context", "batch_invariance", "tensor_parallel", "cold_start")


def matrix_findings(summary: SummaryBody) -> list[MatrixFinding]:
    matrix = summary.parity.matrix
    rows = matrix.rows if matrix is not None else []
    out: list[MatrixFinding] = []
    for check in CHECK_ORDER:
        mine = [r for r in rows if r.check == check]
        if not mine:
            continue
        measured = [r for r in mine if r.reason is None]
        cosine = [r for r in measured if r.cos_min is not None]
        worst = min(cosine, key=lambda r: r.cos_min, default=None)
        invariant: list[str] = []
        if check == "batch_invariance":
            for backend in sorted({r.backend for r in cosine}):
                # per dtype ("<dtype> alone vs batch N"): invariant when every batch gave the very same floats
                for dtype in sorted({r.setting.split(" ")[0] for r in cosine if r.backend == backend}):
                    same = [r for r in cosine if r.backend == backend and r.setting.startswith(dtype + " ")]
                    if same and all(r.figures.get("bit_identical") for r in same):
                        invariant.append(f"{backend} {dtype}")
        out.append(MatrixFinding(
            check=check, rows=len(mine), measured=len(measured),
            failed=sum(1 for r in measured if r.passed is False),
            not_run=len(mine) - len(measured),
            worst_drift=None if worst is None else max(0.0, 1.0 - float(worst.cos_min)),
            worst_backend=None if worst is None else worst.backend,
            worst_setting=None if worst is None else worst.setting,
            worst_setting_code=None if worst is None else worst.setting_code,
            worst_setting_params={} if worst is None else dict(worst.setting_params),
            invariant=invariant,
        ))
    return out
