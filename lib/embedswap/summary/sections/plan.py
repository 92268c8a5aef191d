"""The per-candidate plan (issue 62): decided once per run, in step 03 before any comparison, and stored.

:func:`decide_plan` is the one place the model evidence is computed (``sections/models.py``'s ``model_change``).
Step 03 writes what it decided to ``captures/plan.json`` with the evidence files it read (size and modification
time); step 05 and the summary read that file back (:func:`plan_of_attempt`), so the three agree and the vectors
are read once. A plan whose evidence files changed since (a resumed capture moved the old ones aside) is decided
again: the stored one is moved aside, never overwritten. A step run without step 03 (``--steps 05``) decides it
from the same captures in memory.
"""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.server_tokens import CAPTURE as TOKENS_FILE
from embedswap.measure.workload import Workload
from embedswap.reasons import not_measured
from embedswap.summary.sections.models import model_change
from embedswap.summary.types_plan import Plan, plan_for

CAPTURE = "plan.json"
# what model_change reads, per server
EVIDENCE_FILES = ("doc_vectors.npy", "target.json", TOKENS_FILE)


def decide_plan(experiment: Experiment, attempt: Attempt, workload: Workload) -> Plan:
    """Each candidate's comparison from the captures (see ``summary.types_plan``)."""
    found = {name: model_change(experiment, attempt, workload, name) for name in experiment.candidates}
    plans = {name: plan_for(change) for name, change in found.items()}
    if not any(change.measured for change in found.values()):
        return Plan(**not_measured("vectors_missing", legacy=experiment.legacy, name=experiment.primary_candidate),
                    by_candidate=plans)
    return Plan(measured=True, by_candidate=plans)


def evidence_inputs(experiment: Experiment, attempt: Attempt) -> dict[str, list[int]]:
    """The evidence files present, each with its size and modification time: a plan decided from other files is
    not this attempt's plan any more."""
    out = {}
    for name in experiment.target_order():
        for file in EVIDENCE_FILES:
            path = attempt.captures / name / file
            if path.is_file():
                stat = path.stat()
                out[f"{name}/{file}"] = [stat.st_size, stat.st_mtime_ns]
    return out


def plan_of_attempt(experiment: Experiment, attempt: Attempt, workload: Workload, store: bool = False) -> Plan:
    """The plan step 03 stored, while its evidence is unchanged; else decided now (and stored when ``store``:
    step 03 stores, the readers after it do not write into an attempt)."""
    inputs = evidence_inputs(experiment, attempt)
    if attempt.has(CAPTURE):
        stored: dict[str, Any] = attempt.read_json(CAPTURE)
        if stored.get("inputs") == inputs and set(stored["plan"].get("by_candidate", {})) == set(experiment.candidates):
            return Plan.model_validate(stored["plan"])
        if store:
            attempt.retire(CAPTURE)
    plan = decide_plan(experiment, attempt, workload)
    if store:
        attempt.write_json(CAPTURE, {"plan": plan.model_dump(mode="json", exclude_defaults=True), "inputs": inputs})
    return plan
