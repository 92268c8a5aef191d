"""Why the vectors differ: one sentence per server with the fix, from ``decisions.diagnosis``."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_common import Reason
from embedswap.summary.types_decisions import DiagnosisDecision


def diagnosis(ctx: ReportContext) -> dict[str, Any]:
    """The diagnosis block of the vectors section: per differing server its reasons joined into one sentence,
    or that every server reproduces the model's pipeline, or why the diagnosis did not run."""
    section = ctx.summary.diagnosis
    findings = _findings(ctx, ctx.decisions.diagnosis)
    measured = is_measured(section) or bool(findings)
    sources = ["captures/diagnosis/vectors.json"] + (["captures/parity/rows.json"]
                                                     if any(f["step"] == "parity" for f in findings) else [])
    queries = section.queries
    if queries is not None and queries.reason is not None and queries.reason.code == "no_queries":
        queries = None  # a workload without queries: the ranking section already says so
    return {"state": measured, "label": ctx.label(measured), "why": ctx.why(section), "findings": findings,
            "servers": ", ".join(code(n) for n in section.by_target),
            "texts": section.texts, "sources": ctx.refs_for(sources),
            # the query vectors (step 03): None where the diagnosis holds none
            "queries": None if queries is None else ("measured" if is_measured(queries) else "not_measured"),
            "query_findings": _findings(ctx, ctx.decisions.diagnosis_queries),
            "query_servers": ", ".join(code(n) for n in (queries.by_target if queries is not None else {})),
            "query_texts": queries.texts if queries is not None else None,
            "query_prompt": _shown(queries.prompt if queries is not None else None),
            "query_why": ctx.why(queries) if queries is not None and not is_measured(queries) else None,
            "sample": _sample(section)}


def _sample(section: Any) -> dict[str, str] | None:
    """The documents diagnosed when they were a sample (None: the whole corpus)."""
    sample = section.sample
    if sample is None or sample.whole:
        return None
    return {"documents": fmt(sample.documents, "int"), "of": fmt(sample.of, "int"),
            "lowest": fmt(sample.lowest, "int"), "seed": str(sample.seed),
            "languages": ", ".join(f"{lang} {fmt(n, 'int')}" for lang, n in sample.languages.items())}


def _findings(ctx: ReportContext, decisions: dict[str, DiagnosisDecision]) -> list[dict[str, Any]]:
    """Per server: its reasons joined into one sentence, its step and first code."""
    findings = []
    for name, decided in decisions.items():
        whys = [ctx.worded(Reason(code=r.code, params=r.params or {}) if r.code else None, r.why)
                for r in decided.reasons]
        findings.append({"name": name, "why": "; ".join(whys), "step": decided.step, "code": code(decided.code)})
    return findings


def _shown(prompt: str | None) -> str:
    """A prompt on one line inside inline code (the kit's template holds a newline)."""
    return (prompt or "").replace("\n", "\\n").replace("`", "'")
