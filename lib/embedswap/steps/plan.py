"""Step 03's first part (issue 62): each candidate's comparison decided before any comparison, stored once in
``captures/plan.json`` (``summary.sections.plan``), and shown as a table (pandas imported in
:func:`plan_table`, as in :mod:`embedswap.steps.tables`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from embedswap.steps.context import StepContext
from embedswap.summary.sections.plan import plan_of_attempt
from embedswap.summary.types_plan import Plan

if TYPE_CHECKING:
    import pandas as pd


def decide_plan(ctx: StepContext) -> Plan:
    """The plan of this attempt, decided from its captures and stored (read back when it is already stored and its
    evidence is unchanged)."""
    return plan_of_attempt(ctx.experiment, ctx.attempt, ctx.workload, store=True)


def plan_table(plan: Plan) -> pd.DataFrame:
    """One row per candidate: its comparison, what its probes are read against, the ranking question, the evidence
    that decided it."""
    import pandas as pd  # here, not above: see embedswap.steps.tables
    rows: dict[str, dict[str, Any]] = {}
    for name, found in plan.by_candidate.items():
        said = [e.kind for e in found.model.evidence if e.says_another]
        rows[name] = {"comparison": found.comparison, "probes read against": found.probes_against,
                      "ranking question": found.ranking_question,
                      "legacy model": found.model.legacy_model, "candidate model": found.model.candidate_model,
                      "says another model": ", ".join(said) or "none"}
    return pd.DataFrame.from_dict(rows, orient="index")
