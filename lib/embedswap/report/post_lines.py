"""Two of the post's per-candidate lines, read from the stored decisions: the another-model closing's index choice
and the diagnosis causes named beside the cosines. Split out of ``report/post.py`` (its size)."""

from __future__ import annotations

from typing import Any

from embedswap.report.format import code
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_common import Reason


def index_choice(ctx: ReportContext) -> str:
    """The another-model conclusion's index decision of each such candidate, where the index options made it
    (``decisions.index.<name>``, the one decision; the ranking section's options line gives the why)."""
    names = ctx.terms["index_options"]["names"]
    chosen = [(n, d.option) for n in ctx.candidates if ctx.summary.plan.another_model(n)
              and (d := ctx.decisions.index.get(n)) is not None and d.decided_on == "options"]
    return ctx.terms["models"]["list_sep"].join(f"{code(n)} {names[option]}" for n, option in chosen)


# the causes the post names beside the cosines: those a reader cannot see in the figures (a tokenizer that splits
# one language otherwise, a longer context); the full report's diagnosis section has every cause
POST_CAUSES = ("diagnosis_tokenizer_drops", "diagnosis_tokenizer_differs", "diagnosis_context_longer")


def vectors_why(ctx: ReportContext) -> list[dict[str, Any]]:
    """Per candidate whose diagnosis names one of :data:`POST_CAUSES`: its reasons, one sentence each."""
    out = []
    for name, decided in ctx.decisions.diagnosis.items():
        if name == ctx.legacy or not set(decided.codes) & set(POST_CAUSES):
            continue
        whys = [ctx.worded(Reason(code=r.code, params=r.params or {}) if r.code else None, r.why)
                for r in decided.reasons]
        out.append({"name": name, "why": "; ".join(w for w in whys if w)})
    return out
