"""API contract: each probe's answers and verdicts, the verdict legend, and the client changes (formatted from the
summary's ``decisions.client_changes``)."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import failed_status
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, combined_label, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import ClientChange
from embedswap.summary.types_vectors import ProbeRow, ProbeReading

VERDICT_ORDER = ["same", "silent-divergence", "loud-failure", "retry-hazard", "format-difference",
                 "metadata-difference", "not-applicable", "empty-200", "nondeterministic", "another-model"]
# verdicts that are no difference: the same answer, or another model's answer alike in status and shape (issue 57)
ALIKE = ("same", "another-model")


def aspect_cell(ctx: ReportContext, verdict: ProbeReading | None) -> str:
    """What differs, in this language's words (answers.classify's ``aspects``); '–' where nothing does."""
    aspects = verdict.aspects if verdict is not None else []
    words = ctx.terms["aspects"]
    return ", ".join(words.get(a, esc(a)) for a in aspects) if aspects else MISSING


def contract_states(summary: SummaryBody) -> tuple[bool | None, bool | None]:
    """(server answers, verdicts): whether the probes' answers and the legacy-vs-candidate verdicts exist."""
    contract = summary.contract
    if not isinstance(contract, list):
        return False, False
    answers = any(side.measured for row in contract for side in row.by_target.values())
    verdicts = [v.verdict for row in contract for v in row.verdicts.values()]
    if all(v is not None for v in verdicts) and verdicts:
        vstate: bool | None = True
    elif any(v is not None for v in verdicts):
        vstate = None  # some candidates compared, some not: partly
    else:
        vstate = False
    return answers, vstate


def _change_aspects(ctx: ReportContext, change: ClientChange) -> str:
    """What differs on a change's probes: their aspects in this language, else their verdicts."""
    aspects = list(dict.fromkeys(a for p in change.probes for a in p.aspects))
    if aspects:
        return ", ".join(ctx.terms["aspects"].get(a, esc(a)) for a in aspects)
    return ", ".join(dict.fromkeys(p.verdict for p in change.probes))


def change_items(ctx: ReportContext, limit_tokens: str | None = None) -> list[dict[str, Any]]:
    """The summary's client changes in this language: ``{key, text, probes, shim, shim_done}`` (``limit_tokens``:
    the truncation limit as printed, where the post prints its document's)."""
    terms = ctx.terms["changes"]
    items = []
    for change in ctx.decisions.client_changes:
        key, params = change.rule, change.params  # params: open, each rule has its own
        if key == "review":
            text = fill(terms[key], probe=params.get("probe"), verdict=", ".join(params.get("verdicts") or []))
        else:
            limit = ""
            if key == "truncate" and params.get("limit_tokens"):
                limit = fill(terms["truncate_limit"], n=limit_tokens or fmt(params["limit_tokens"], "int"))
            text = fill(terms[key], limit=limit, batch=params.get("batch"), aspects=_change_aspects(ctx, change),
                        shape=code(params.get("shape") or "?"))
        shim = change.shim
        if not shim.probed:
            shim_text = None
        elif shim.left:
            left = []
            for entry in shim.left:
                note = ctx.legacy_side(entry.legacy_status)
                left.append(f"{code(entry.probe)} → {code(entry.candidate)}: {entry.verdict}"
                            + (f" ({note})" if note else ""))
            shim_text = fill(ctx.terms["shim_left"], items="; ".join(left))
        else:
            shim_text = ctx.terms["shim_done"]
        items.append({"key": key, "text": text, "shim": shim_text, "shim_done": shim.done,
                      "probes": [(p.probe, p.candidate, p.verdict) for p in change.probes]})
    return items


def _table(ctx: ReportContext, contract: list[ProbeRow]) -> tuple[str, list[dict[str, Any]]]:
    """The probe table (one row per probe, answer and verdict per candidate) and the differing answers."""
    t = ctx.terms
    header = [t["probe"], ctx.column(ctx.legacy)]
    for name in ctx.candidates:
        header += [ctx.column(name), f"{t['verdict']} ({code(name)})", fill(t["contract_aspects"], name=code(name))]
    rows, details = [], []
    for row in contract:
        probe_cell = code(row.probe)
        legacy_cell = ctx.side_cell(row.side(ctx.legacy))
        if row.path and row.path != "/v1/embeddings":
            probe_cell += f" ({code('POST ' + row.path)})"
        if row.baseline():  # the legacy server lacks the route: its answer to another request is used
            reference = fill(t["compared_with"], probe=code(row.baseline()))
            legacy_cell += f"; {reference}: {ctx.side_cell(row.legacy)}"
        cells = [probe_cell, legacy_cell]
        for name in ctx.candidates:
            verdict = row.verdict_for(name)
            cells += [ctx.side_cell(row.side(name)), ctx.verdict_cell(verdict),
                      aspect_cell(ctx, verdict)]
            v = verdict.verdict if verdict is not None else None
            if v and v not in ALIKE:
                details.append({"probe": row.probe, "description": ctx.probe_description(row),
                                "candidate": name, "verdict": v, "detail": ctx.why(verdict, key="detail")})
        rows.append(cells)
    return md_table(header, rows, ["l"] * len(header)), details


def _verdict(row: ProbeRow, name: str) -> str | None:
    verdict = row.verdict_for(name)
    return verdict.verdict if verdict is not None else None


def _counts(ctx: ReportContext, contract: list[ProbeRow]) -> list[dict[str, Any]]:
    counts = []
    for name in ctx.candidates:
        # a difference only the legacy server's own failure makes is not the candidate's (decisions.post): the
        # counts here are the post's
        conclusion = ctx.decisions.post.conclusion(name)
        legacy_failed = set(conclusion.legacy_failed) if conclusion is not None else set()
        found = [None if r.probe in legacy_failed else _verdict(r, name) for r in contract]
        counted = [(v, sum(1 for f in found if f == v)) for v in VERDICT_ORDER]
        counts.append({"name": name, "total": len(found), "compared": sum(1 for f in found if f),
                       "differ": sum(1 for f in found if f and f not in ALIKE),
                       "by_verdict": [{"verdict": v, "n": n} for v, n in counted if n],
                       "probes": {v: [r.probe for r, f in zip(contract, found) if f == v
                                      # a retry loop is the candidate's doing only when it answered 5xx / nothing
                                      and (v != "retry-hazard" or failed_status(r, name))]
                                  for v in VERDICT_ORDER}})
    return counts


def conformance(ctx: ReportContext, contract: list[ProbeRow]) -> list[dict[str, Any]]:
    """Per probe, how servers depart from the API they claim (``ProbeRow.conformance``): the second question,
    apart from the comparison. A departure every server shows is said once of all (``both``): never a difference."""
    words = ctx.terms["aspects"]
    out = []
    for row in contract:
        by_aspect: dict[str, list[str]] = {}
        for name in ctx.names:
            for aspect in row.conformance.get(name, []):
                by_aspect.setdefault(aspect, []).append(name)
        for aspect, names in by_aspect.items():
            out.append({"probe": row.probe, "aspect": words.get(aspect, esc(aspect)),
                        "all": len(names) == len(ctx.names) and len(names) > 1,
                        "servers": ", ".join(code(n) for n in names)})
    return out


def contract(ctx: ReportContext) -> dict[str, Any]:
    """The contract section: the table, the differences, the verdict counts and the client changes."""
    contract = ctx.summary.contract
    t = ctx.terms
    answers, verdicts = contract_states(ctx.summary)
    # another-model exists only where a candidate serves another model (issue 57): the legend names it there only
    another = any(ctx.summary.plan.another_model(n) for n in ctx.candidates)
    legend = [{"verdict": v, "text": t["verdicts"][v]} for v in VERDICT_ORDER if v != "another-model" or another]
    if not isinstance(contract, list):
        return {"state": False, "label": ctx.label(False), "why": ctx.why(contract), "legend": legend,
                "table": None, "details": [], "changes": [], "changes_done": "0", "changes_probed": False,
                "counts": [], "answers_label": ctx.label(False), "conformance": [],
                "verdicts_label": ctx.label(False), "sources": MISSING}
    table, details = _table(ctx, contract)
    not_compared = [r.probe for r in contract if any(not v.verdict for v in r.verdicts.values())]
    changes = change_items(ctx)
    return {
        "state": verdicts, "label": combined_label([answers, verdicts], ctx.lang),
        "answers_label": ctx.label(answers), "verdicts_label": ctx.label(verdicts),
        "why": None, "table": table, "legend": legend,
        "details": details, "changes": changes, "counts": _counts(ctx, contract),
        "changes_done": fmt(sum(1 for c in changes if c["shim_done"]), "int"),
        "changes_probed": any(c["shim"] is not None for c in changes),
        "not_compared": not_compared, "conformance": conformance(ctx, contract),
        "sources": ctx.refs_for([f"captures/{n}/probes.jsonl" for n in ctx.names]),
    }
