"""Article 003's parity matrix, after the gate: one table per engineering point, with what the matrix found.

The points follow the article: tensor-parallel sharding (vocabulary padding), lazy loading and JIT warm-up (cold
start), chunked prefill (long context), and the parity check itself (batch invariance per dtype). A row that could
not run shows its reason in this language, never as an error. The findings come from ``decisions.parity_matrix``.
"""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.parity_matrix import CHECK_ORDER
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext


def _drift(value: float | None) -> str:
    """1 - cos min in scientific notation: the 6-decimal cosine shows 1.000000 for drifts of 1e-12 and 1e-7 alike."""
    return MISSING if value is None else f"{max(0.0, 1.0 - float(value)):.1e}"


def _setting(ctx: ReportContext, code_: Any, params: Any, text: Any) -> str:
    """A row's setting in the report's language (its code and parameters); older summaries carry English text."""
    words = ctx.terms["parity_matrix"]["settings"]
    if code_ in words:
        return esc(words[code_].format(**(params or {})))
    return esc(text)


def _result(ctx: ReportContext, row: dict[str, Any]) -> str:
    if row.get("reason"):
        return f"{ctx.label(False)}: {ctx.why(row)}"
    return ctx.terms["pass"] if row.get("passed") else ctx.terms["fail"]


def _cosine_table(ctx: ReportContext, rows: list[dict[str, Any]]) -> str:
    t, m = ctx.terms, ctx.terms["parity_matrix"]
    body = [[code(r.get("backend")), _setting(ctx, r.get("setting_code"), r.get("setting_params"), r.get("setting")),
             esc(r.get("platform")), fmt(r.get("n"), "int"),
             fmt(r.get("cos_min"), "cos"), fmt(r.get("cos_median"), "cos"), _drift(r.get("cos_min")),
             fmt(r.get("gate"), "raw"), _result(ctx, r)] for r in rows]
    return md_table([t["backend"], m["setting"], m["platform"], t["n"], t["cos_min"], t["cos_median"], m["drift"],
                     m["gate"], m["result"]], body, ["l", "l", "l", "r", "r", "r", "r", "r", "l"])


def _cold_table(ctx: ReportContext, rows: list[dict[str, Any]]) -> str:
    m = ctx.terms["parity_matrix"]
    body = []
    for r in rows:
        f = r.get("figures") or {}
        if r.get("reason"):
            body.append([code(r.get("backend")), fmt(f.get("start_s"), "s")] + [MISSING] * 3
                        + [f"{ctx.label(False)}: {ctx.why(r)}"])
            continue
        body.append([code(r.get("backend")), fmt(f.get("start_s"), "s"), fmt(f.get("first_ms"), "ms"),
                     f"{fmt(f.get('steady_median_ms'), 'ms')} (n={fmt(f.get('steady_n'), 'int')})",
                     fmt(f.get("first_over_steady"), "ratio"), ctx.label(True)])
    return md_table([m["server"], m["start_s"], m["first_ms"], m["steady_ms"], m["first_over_steady"], m["result"]],
                    body, ["l", "r", "r", "r", "r", "l"])


def _finding(ctx: ReportContext, finding: dict[str, Any] | None) -> dict[str, Any] | None:
    if not finding or not finding.get("measured"):
        return None
    drift = finding.get("worst_drift")
    return {"measured": finding["measured"], "failed": finding["failed"], "not_run": finding["not_run"],
            "drift": None if drift is None else f"{drift:.1e}", "backend": finding.get("worst_backend"),
            "setting": _setting(ctx, finding.get("worst_setting_code"), finding.get("worst_setting_params"),
                                finding.get("worst_setting")), "invariant": ctx.words.labels["separator"].join(esc(i) for i in finding.get("invariant") or [])}


def parity_matrix(ctx: ReportContext) -> dict[str, Any]:
    """The matrix sub-section of the parity section: per point its table, finding and rows that did not run."""
    matrix = (ctx.raw.get("parity") or {}).get("matrix") or {}
    measured = bool(matrix) and is_measured(matrix)
    if not measured:
        return {"state": False, "label": ctx.label(False), "points": [],
                "why": ctx.why(matrix) if matrix else ctx.words.reason("parity_matrix_not_configured")}
    findings = {f.get("check"): f for f in (ctx.raw.get("decisions") or {}).get("parity_matrix") or []}
    points = []
    for check in CHECK_ORDER:
        rows = [r for r in matrix.get("rows") or [] if r.get("check") == check]
        if not rows:
            continue
        table = _cold_table(ctx, rows) if check == "cold_start" else _cosine_table(ctx, rows)
        points.append({"check": check, "table": table, "finding": _finding(ctx, findings.get(check))})
    settings = matrix.get("settings") or {}
    return {"state": True, "label": ctx.label(True), "points": points, "why": None,
            "texts": fmt(settings.get("texts"), "int"), "max_model_len": fmt(settings.get("max_model_len"), "int"),
            "sources": ctx.refs_for([], always=[matrix.get("source") or "captures/parity/matrix.json"])}
