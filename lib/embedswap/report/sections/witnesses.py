"""The reference's witnesses in the parity section: their pairwise agreement as a small matrix, the consensus the
gate used and each witness left out with its reason (from the summary's ``parity.witnesses``)."""

from __future__ import annotations

from typing import Any

from embedswap.report.format import code, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_common import Reason


def witnesses(ctx: ReportContext) -> dict[str, Any]:
    """``{table, all_agree, consensus, reference, left_out}``; ``table`` None where the summary has no witnesses."""
    found = ctx.summary.parity.witnesses if ctx.summary.parity is not None else None
    if found is None or not found.pairs:
        return {"table": None, "all_agree": False, "consensus": "", "reference": "", "left_out": []}
    names = [n for n in found.witnesses if any(n in (p.a, p.b) for p in found.pairs)]
    cos = {(p.a, p.b): p.cos_min for p in found.pairs} | {(p.b, p.a): p.cos_min for p in found.pairs}
    rows = [[code(a)] + ["1" if a == b else fmt(cos.get((a, b)), "cos") for b in names] for a in names]
    table = md_table([ctx.terms["witness"]] + [code(n) for n in names], rows, ["l"] + ["r"] * len(names))
    left = [{"name": code(w.name), "why": ctx.worded(Reason(code=w.code, params=w.params), None)}
            for w in found.left_out]
    return {"table": table, "all_agree": found.all_agree, "consensus": ", ".join(code(n) for n in found.consensus),
            "reference": code(found.reference) if found.reference else "", "left_out": left,
            "threshold": fmt(found.threshold, "raw")}
