"""Article 003's parity matrix, after the gate: one table per engineering point, with what the matrix found.

The points follow the article: tensor-parallel sharding (vocabulary padding), lazy loading and JIT warm-up (cold
start), chunked prefill (long context), and the parity check itself (batch invariance per dtype). A row that could
not run shows its reason in this language, never as an error. The findings come from ``decisions.parity_matrix``.
"""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.parity_matrix import CHECK_ORDER
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_decisions import MatrixFinding
from embedswap.summary.types_parity import ColdStartFigures, MatrixRow


def _drift(value: float | None) -> str:
    """1 - cos min in scientific notation: the 6-decimal cosine shows 1.000000 for drifts of 1e-12 and 1e-7 alike."""
    return MISSING if value is None else f"{max(0.0, 1.0 - float(value)):.1e}"


def _setting(ctx: ReportContext, code_: str | None, params: dict[str, Any], text: str | None) -> str:
    """A row's setting in the report's language (its code and parameters); a row without a code the catalogue words shows its English text."""
    words = ctx.terms["parity_matrix"]["settings"]
    if code_ in words:
        return esc(fill(words[code_], **(params or {})))
    return esc(text)


def _result(ctx: ReportContext, row: MatrixRow) -> str:
    if row.reason is not None:
        return f"{ctx.label(False)}: {ctx.why(row)}"
    return ctx.terms["pass"] if row.passed else ctx.terms["fail"]


def _cosine_table(ctx: ReportContext, rows: list[MatrixRow]) -> str:
    t, m = ctx.terms, ctx.terms["parity_matrix"]
    body = [[code(r.backend), _setting(ctx, r.setting_code, r.setting_params, r.setting),
             esc(r.platform), fmt(r.n, "int"),
             fmt(r.cos_min, "cos"), fmt(r.cos_median, "cos"), _drift(r.cos_min),
             fmt(r.gate, "raw"), _result(ctx, r)] for r in rows]
    return md_table([t["backend"], m["setting"], m["platform"], t["n"], t["cos_min"], t["cos_median"], m["drift"],
                     m["gate"], m["result"]], body, ["l", "l", "l", "r", "r", "r", "r", "r", "l"])


def _cold_table(ctx: ReportContext, rows: list[MatrixRow]) -> str:
    m = ctx.terms["parity_matrix"]
    body = []
    for r in rows:
        f = r.cold_start or ColdStartFigures()
        if r.reason is not None:
            body.append([code(r.backend), fmt(f.start_s, "s")] + [MISSING] * 3
                        + [f"{ctx.label(False)}: {ctx.why(r)}"])
            continue
        body.append([code(r.backend), fmt(f.start_s, "s"), fmt(f.first_ms, "ms"),
                     f"{fmt(f.steady_median_ms, 'ms')} (n={fmt(f.steady_n, 'int')})",
                     fmt(f.first_over_steady, "ratio"), ctx.label(True)])
    return md_table([m["server"], m["start_s"], m["first_ms"], m["steady_ms"], m["first_over_steady"], m["result"]],
                    body, ["l", "r", "r", "r", "r", "l"])


def _finding(ctx: ReportContext, finding: MatrixFinding | None) -> dict[str, Any] | None:
    if finding is None or not finding.measured:
        return None
    drift = finding.worst_drift
    return {"measured": finding.measured, "failed": finding.failed, "not_run": finding.not_run,
            "drift": None if drift is None else f"{drift:.1e}", "backend": finding.worst_backend,
            "setting": _setting(ctx, finding.worst_setting_code, finding.worst_setting_params,
                                finding.worst_setting),
            "invariant": ctx.words.labels["separator"].join(esc(i) for i in finding.invariant)}


def parity_matrix(ctx: ReportContext) -> dict[str, Any]:
    """The matrix sub-section of the parity section: per point its table, finding and rows that did not run."""
    matrix = ctx.summary.parity.matrix
    if matrix is None or not is_measured(matrix):
        return {"state": False, "label": ctx.label(False), "points": [],
                "why": ctx.why(matrix) if matrix is not None else ctx.words.reason("parity_matrix_not_configured")}
    findings = {f.check: f for f in ctx.decisions.parity_matrix}
    points = []
    for check in CHECK_ORDER:
        rows = [r for r in matrix.rows if r.check == check]
        if not rows:
            continue
        table = _cold_table(ctx, rows) if check == "cold_start" else _cosine_table(ctx, rows)
        points.append({"check": check, "table": table, "finding": _finding(ctx, findings.get(check))})
    settings = matrix.settings  # open: the matrix configuration as the user wrote it
    return {"state": True, "label": ctx.label(True), "points": points, "why": None,
            "texts": fmt(settings.get("texts"), "int"), "max_model_len": fmt(settings.get("max_model_len"), "int"),
            "sources": ctx.refs_for([], always=[matrix.source or "captures/parity/matrix.json"])}
