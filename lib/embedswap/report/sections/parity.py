"""Numeric parity against the fp32 golden reference: one row per backend, the backends not run, the gate."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext


def _cos_cell(ctx: ReportContext, row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if value is None and row.get("non_finite"):
        return ctx.terms["non_finite"].format(n=fmt(row.get("non_finite"), "int"))
    return fmt(value, "cos")


def _kind_cell(ctx: ReportContext, source: Any) -> str:
    if not source:
        return MISSING
    return ctx.terms["kind_offline" if str(source).startswith("captures/parity/backends/") else "kind_server"]


def _rows(ctx: ReportContext, parity: dict[str, Any]) -> tuple[list[list[str]], list[dict], list[dict]]:
    """The table rows (measured backends, then those not run, then the multimodal gate), worst inputs, not run."""
    t = ctx.terms
    rows, worst, not_run = [], [], []
    for row in parity.get("rows") or []:
        rows.append([code(row.get("backend")), _kind_cell(ctx, row.get("source")), esc(row.get("dtype")),
                     esc(row.get("device")), esc(row.get("modality")), fmt(row.get("n"), "int"),
                     _cos_cell(ctx, row, "cos_min"), _cos_cell(ctx, row, "cos_median"), _cos_cell(ctx, row, "cos_max"),
                     fmt(row.get("threshold"), "raw"), t["pass"] if row.get("pass") else t["fail"]])
        if row.get("worst"):
            worst.append({"name": row.get("backend"), "docs": ", ".join(
                f"{code(w.get('id'))} {fmt(w.get('cosine'), 'cos')}" for w in row.get("worst") or [])})
    for entry in parity.get("not_run") or []:
        name = entry.get("backend")
        error = ctx.failure(name) if name in ctx.names else None
        not_run.append({"name": name, "why": ctx.why(entry) + (f" ({error})" if error else "")})
        rows.append([code(name), t["kind_server"] if name in ctx.names else t["kind_offline"],
                     ctx.not_measured_cell(name) if error else ctx.label(False)] + [ctx.label(False)] * 8)
    multimodal = parity.get("multimodal") or {}
    for row in multimodal.get("rows") or []:  # parity.multimodal: a CLIP model's captions and images
        part = t["mm_image"] if row.get("part") == "image" else t["mm_text"]
        rows.append([code(row.get("backend")), t["kind_server"], esc(row.get("dtype")), esc(row.get("device")),
                     esc(part.format(request=row.get("request"))), fmt(row.get("n"), "int"),
                     _cos_cell(ctx, row, "cos_min"), _cos_cell(ctx, row, "cos_median"),
                     _cos_cell(ctx, row, "cos_max"), fmt(row.get("threshold"), "raw"),
                     t["pass"] if row.get("pass") else t["fail"]])
    for entry in multimodal.get("not_run") or []:  # a server that could not serve the CLIP model
        not_run.append({"name": entry.get("backend"), "why": ctx.why(entry)})
        rows.append([code(entry.get("backend")), t["kind_server"]] + [ctx.label(False)] * 2
                    + [esc(t["text_image"])] + [ctx.label(False)] * 6)
    if multimodal and not is_measured(multimodal) and multimodal.get("records"):
        threshold = multimodal.get("threshold", (parity.get("thresholds") or {}).get("multimodal"))
        rows.append([esc(t["text_image"]), MISSING, MISSING, MISSING, "text+image",
                     fmt(multimodal.get("records"), "int")] + [ctx.label(False)] * 3
                    + [fmt(threshold, "raw"), ctx.label(False)])
    return rows, worst, not_run


def _causes(ctx: ReportContext, parity: dict[str, Any]) -> list[dict[str, Any]]:
    """Per failed row: the gate's cause (another dimension or norm), then the diagnosis' finding with its fix."""
    out = []
    for row in parity.get("rows") or []:
        if row.get("why"):
            out.append({"name": row.get("backend"), "why": ctx.why(row)})
        if row.get("backend") in (ctx.raw_decisions.get("diagnosis") or {}):  # said once, in the diagnosis block
            cause = (ctx.raw_decisions["diagnosis"][row.get("backend")] or {}).get("code")
            entry = {"why": "", "reason": {"code": "diagnosis_see_above", "params": {"cause": cause}}}
            out.append({"name": row.get("backend"), "why": ctx.why(entry)})
            continue
        for reason in (row.get("diagnosis") or {}).get("reasons") or []:
            entry = {"why": reason.get("why"), "reason": {"code": reason.get("code"), "params": reason.get("params")}}
            out.append({"name": row.get("backend"), "why": ctx.why(entry)})
    return out


def _multimodal_finding(ctx: ReportContext, multimodal: dict[str, Any]) -> dict[str, Any] | None:
    """The decision (analysis.parity_multimodal) as the sentence's values: lowest cosine per part, mixed status."""
    decision = (ctx.raw.get("decisions") or {}).get("parity_multimodal") or {}
    if not multimodal.get("rows") or decision.get("code") in (None, "multimodal_not_measured"):
        return None
    worst = decision.get("worst") or {}

    def cosine(value: Any) -> str:  # a six-decimal cosine rounds small drifts to 1: 1 - cos beside it
        return fmt(value, "cos") if value is None else f"{fmt(value, 'cos')} (1 − cos {max(0.0, 1 - value):.1e})"

    model = (multimodal.get("spec") or {}).get("model") or multimodal.get("model")
    return {"code": decision["code"], "model": code(model), "text": cosine(worst.get("text")),
            "image": cosine(worst.get("image")), "mixed": fmt(decision.get("mixed_status"), "int"),
            "passed": decision["code"] == "multimodal_passed"}


def parity(ctx: ReportContext) -> dict[str, Any]:
    """The parity section: the table, the gate (as stored in the summary) and the multimodal part."""
    parity = ctx.raw.get("parity") or {}
    t = ctx.terms
    measured = is_measured(parity)
    rows, worst, not_run = _rows(ctx, parity)
    table = md_table([t["backend"], t["source_kind"], t["dtype"], t["device"], t["modality"], t["n"],
                      t["cos_min"], t["cos_median"], t["cos_max"], t["threshold"], t["pass"]], rows,
                     ["l", "l", "l", "l", "l", "r", "r", "r", "r", "r", "c"]) if rows else None
    gate = parity.get("pass")
    multimodal = parity.get("multimodal") or {}
    sources = [r.get("source") for r in parity.get("rows") or [] if r.get("source")]
    return {
        "state": measured, "label": ctx.label(measured), "why": ctx.why(parity),
        "table": table, "worst": worst,
        "gate": None if gate is None else (t["pass"] if gate else t["fail"]), "gate_passed": gate,
        "thresholds": {k: fmt(v, "raw") for k, v in (parity.get("thresholds") or {}).items()},
        "not_run": not_run,
        # a failed row's cause (another dimension or norm than the reference), as the gate recorded it
        "causes": _causes(ctx, parity),
        "reference": esc(parity.get("reference")) if parity.get("reference") else None,
        "multimodal": {"state": is_measured(multimodal) if multimodal else False,
                       "label": ctx.label(is_measured(multimodal) if multimodal else False),
                       "records": fmt(multimodal.get("records"), "int") if multimodal.get("records") else None,
                       "threshold": fmt(multimodal.get("threshold"), "raw")
                       if multimodal.get("threshold") is not None else None,
                       "why": ctx.why(multimodal) if multimodal.get("why") else ctx.why(parity),
                       "finding": _multimodal_finding(ctx, multimodal)},
        "figure": "parity_backends" if ctx.figures.get("parity_backends") else None,
        "sources": ctx.refs_for(["captures/parity/rows.json"],
                                always=(["captures/parity/rows.json"] if measured else []) + sources),
    }
