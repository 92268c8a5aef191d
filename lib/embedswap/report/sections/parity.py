"""Numeric parity against the fp32 golden reference: one row per backend, the backends not run, the gate."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_common import Reason, Section
from embedswap.summary.types_parity import MultimodalParity, Parity, ParityRow


def _cos_cell(ctx: ReportContext, row: ParityRow, key: str) -> str:
    value = getattr(row, key)
    if value is None and row.non_finite:
        return fill(ctx.terms["non_finite"], n=fmt(row.non_finite, "int"))
    return fmt(value, "cos")


def _kind_cell(ctx: ReportContext, source: str | None) -> str:
    if not source:
        return MISSING
    return ctx.terms["kind_offline" if source.startswith("captures/parity/backends/") else "kind_server"]


def _rows(ctx: ReportContext, parity: Parity) -> tuple[list[list[str]], list[dict], list[dict]]:
    """The table rows (measured backends, then those not run, then the multimodal gate), worst inputs, not run."""
    t = ctx.terms
    rows, worst, not_run = [], [], []
    for row in parity.rows:
        rows.append([code(row.backend), _kind_cell(ctx, row.source), esc(row.dtype),
                     esc(row.device), esc(row.modality), fmt(row.n, "int"),
                     _cos_cell(ctx, row, "cos_min"), _cos_cell(ctx, row, "cos_median"), _cos_cell(ctx, row, "cos_max"),
                     fmt(row.threshold, "raw"), t["pass"] if row.passed else t["fail"]])
        if row.worst:
            worst.append({"name": row.backend, "docs": ", ".join(
                f"{code(w.id)} {fmt(w.cosine, 'cos')}" for w in row.worst)})
    for entry in parity.not_run:
        name = entry.backend
        error = ctx.failure(name) if name in ctx.names else None
        not_run.append({"name": name, "why": ctx.why(entry) + (f" ({error})" if error else "")})
        rows.append([code(name), t["kind_server"] if name in ctx.names else t["kind_offline"],
                     ctx.not_measured_cell(name) if error else ctx.label(False)] + [ctx.label(False)] * 8)
    multimodal = parity.multimodal
    if multimodal is None:
        return rows, worst, not_run
    for row in multimodal.rows:  # parity.multimodal: a CLIP model's captions and images
        part = t["mm_image"] if row.part == "image" else t["mm_text"]
        rows.append([code(row.backend), t["kind_server"], esc(row.dtype), esc(row.device),
                     esc(fill(part, request=row.request)), fmt(row.n, "int"),
                     _cos_cell(ctx, row, "cos_min"), _cos_cell(ctx, row, "cos_median"),
                     _cos_cell(ctx, row, "cos_max"), fmt(row.threshold, "raw"),
                     t["pass"] if row.passed else t["fail"]])
    for entry in multimodal.not_run:  # a server that could not serve the CLIP model
        not_run.append({"name": entry.backend, "why": ctx.why(entry)})
        rows.append([code(entry.backend), t["kind_server"]] + [ctx.label(False)] * 2
                    + [esc(t["text_image"])] + [ctx.label(False)] * 6)
    if not is_measured(multimodal) and multimodal.records:
        # a threshold stored with the part (even empty) is the one it was gated with
        threshold = multimodal.threshold if "threshold" in multimodal.model_fields_set \
            else parity.threshold("multimodal")
        rows.append([esc(t["text_image"]), MISSING, MISSING, MISSING, "text+image",
                     fmt(multimodal.records, "int")] + [ctx.label(False)] * 3
                    + [fmt(threshold, "raw"), ctx.label(False)])
    return rows, worst, not_run


def _said(ctx: ReportContext, why: str | None, code_: Any, params: dict[str, Any] | None) -> str:
    """A reason given as its parts (English text, code, parameters), in this language as ctx.why words it."""
    reason = Reason(code=code_, params=params or {}) if isinstance(code_, str) and code_ else None
    return ctx.why(Section(measured=False, why=why, reason=reason))


def _causes(ctx: ReportContext, parity: Parity) -> list[dict[str, Any]]:
    """Per failed row: the gate's cause (another dimension or norm), then the diagnosis' finding with its fix."""
    out = []
    for row in parity.rows:
        if row.why:
            out.append({"name": row.backend, "why": ctx.why(row)})
        decided = ctx.decisions.diagnosis_of(row.backend)
        if decided is not None:  # said once, in the diagnosis block
            out.append({"name": row.backend,
                        "why": _said(ctx, "", "diagnosis_see_above", {"cause": decided.code})})
            continue
        for reason in (row.diagnosis.reasons if row.diagnosis is not None else []):
            out.append({"name": row.backend, "why": _said(ctx, reason.why, reason.code, reason.params)})
    return out


def _multimodal_finding(ctx: ReportContext, multimodal: MultimodalParity | None) -> dict[str, Any] | None:
    """The decision (analysis.parity_multimodal) as the sentence's values: lowest cosine per part, mixed status."""
    decision = ctx.decisions.parity_multimodal
    if multimodal is None or not multimodal.rows or decision is None or decision.code == "multimodal_not_measured":
        return None

    def cosine(value: float | None) -> str:  # a six-decimal cosine rounds small drifts to 1: 1 - cos beside it
        return fmt(value, "cos") if value is None else f"{fmt(value, 'cos')} (1 − cos {max(0.0, 1 - value):.1e})"

    model = (multimodal.spec or {}).get("model") or multimodal.model  # spec: open, the configuration as written
    return {"code": decision.code, "model": code(model), "text": cosine(decision.worst_of("text")),
            "image": cosine(decision.worst_of("image")), "mixed": fmt(decision.mixed_status, "int"),
            "passed": decision.code == "multimodal_passed"}


def parity(ctx: ReportContext) -> dict[str, Any]:
    """The parity section: the table, the gate (as stored in the summary) and the multimodal part."""
    parity = ctx.summary.parity
    t = ctx.terms
    measured = is_measured(parity)
    rows, worst, not_run = _rows(ctx, parity)
    table = md_table([t["backend"], t["source_kind"], t["dtype"], t["device"], t["modality"], t["n"],
                      t["cos_min"], t["cos_median"], t["cos_max"], t["threshold"], t["pass"]], rows,
                     ["l", "l", "l", "l", "l", "r", "r", "r", "r", "r", "c"]) if rows else None
    gate = parity.passed
    multimodal = parity.multimodal
    mm_measured = is_measured(multimodal)
    sources = [r.source for r in parity.rows if r.source]
    return {
        "state": measured, "label": ctx.label(measured), "why": ctx.why(parity),
        "table": table, "worst": worst,
        "gate": None if gate is None else (t["pass"] if gate else t["fail"]), "gate_passed": gate,
        "thresholds": {k: fmt(v, "raw") for k, v in parity.thresholds.items()},
        "not_run": not_run,
        # servers of another model with no local copy (issue 57): not measured, not a failure
        "other_model": [{"name": e.backend, "why": ctx.why(e)} for e in parity.other_model],
        # a failed row's cause (another dimension or norm than the reference), as the gate recorded it
        "causes": _causes(ctx, parity),
        "reference": esc(parity.reference) if parity.reference else None,
        "multimodal": {"state": mm_measured, "label": ctx.label(mm_measured),
                       "records": fmt(multimodal.records, "int") if multimodal is not None and multimodal.records
                       else None,
                       "threshold": fmt(multimodal.threshold, "raw")
                       if multimodal is not None and multimodal.threshold is not None else None,
                       "why": ctx.why(multimodal) if multimodal is not None and multimodal.why else ctx.why(parity),
                       "finding": _multimodal_finding(ctx, multimodal)},
        "figure": ctx.figure("parity_backends"),
        "sources": ctx.refs_for(["captures/parity/rows.json"],
                                always=(["captures/parity/rows.json"] if measured else []) + sources),
    }
