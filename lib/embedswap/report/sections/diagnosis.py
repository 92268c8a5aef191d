"""Why the vectors differ: one sentence per server with the fix, from ``decisions.diagnosis``."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report.format import code
from embedswap.report.sections.context import ReportContext


def diagnosis(ctx: ReportContext) -> dict[str, Any]:
    """The diagnosis block of the vectors section: per differing server its reasons joined into one sentence,
    or that every server reproduces the model's pipeline, or why the diagnosis did not run."""
    section = ctx.raw.get("diagnosis") or {}
    decisions = ctx.raw_decisions.get("diagnosis") or {}
    findings = _findings(ctx, decisions)
    measured = is_measured(section) or bool(findings)
    sources = ["captures/diagnosis/vectors.json"] + (["captures/parity/rows.json"]
                                                     if any(f["step"] == "parity" for f in findings) else [])
    queries = section.get("queries") if isinstance(section.get("queries"), dict) else None
    if queries is not None and ((queries.get("reason") or {}).get("code")) == "no_queries":
        queries = None  # a workload without queries: the ranking section already says so
    return {"state": measured, "label": ctx.label(measured), "why": ctx.why(section), "findings": findings,
            "servers": ", ".join(code(n) for n in (section.get("by_target") or {})),
            "texts": section.get("texts"), "sources": ctx.refs_for(sources),
            # the query vectors (step 03): None in summaries from before the query diagnosis
            "queries": None if queries is None else ("measured" if is_measured(queries) else "not_measured"),
            "query_findings": _findings(ctx, ctx.raw_decisions.get("diagnosis_queries") or {}),
            "query_servers": ", ".join(code(n) for n in ((queries or {}).get("by_target") or {})),
            "query_texts": (queries or {}).get("texts"), "query_prompt": _shown((queries or {}).get("prompt")),
            "query_why": ctx.why(queries) if queries and not is_measured(queries) else None}


def _findings(ctx: ReportContext, decisions: dict[str, Any]) -> list[dict[str, Any]]:
    """Per server: its reasons joined into one sentence, its step and first code."""
    findings = []
    for name, decided in decisions.items():
        whys = [ctx.why({"why": r.get("why"), "reason": {"code": r.get("code"), "params": r.get("params") or {}}})
                for r in decided.get("reasons") or []]
        findings.append({"name": name, "why": "; ".join(whys), "step": decided.get("step"),
                         "code": code(decided.get("code"))})
    return findings


def _shown(prompt: str | None) -> str:
    """A prompt on one line inside inline code (the kit's template holds a newline)."""
    return (prompt or "").replace("\n", "\\n").replace("`", "'")
