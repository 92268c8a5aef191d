"""Why each server's vectors differ from the model's: one decision per server, from the diagnosis' findings.

Step 05's finding counts where the parity gate failed a row (it compares with the golden sentence-transformers
reference); otherwise step 03's (every server's vectors against the model's own pipeline). A server whose vectors
the model's pipeline reproduces gets no decision; one the diagnosis could not explain gets ``diagnosis_unknown``,
one it could not run on gets ``diagnosis_failed``.
"""

from __future__ import annotations

from typing import Literal

from embedswap.reasons import explain
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_common import Finding
from embedswap.summary.types_decisions import DiagnosisDecision
from embedswap.summary.types_sections import DiagnosisFinding


def _decision(finding: DiagnosisFinding | None, name: str, step: Literal["vectors", "parity", "queries"]
              ) -> DiagnosisDecision | None:
    if finding is None:
        return None
    if finding.error:
        params = {"name": name, "error": str(finding.error)[:300]}
        reasons = [Finding(code="diagnosis_failed", params=params, why=explain("diagnosis_failed", **params))]
    else:
        # as the finding recorded them: a copy with the same keys set (its own evidence included)
        reasons = [Finding.model_validate(r.model_dump(exclude_unset=True)) for r in finding.reasons]
    if not reasons:
        return None
    codes = [r.code for r in reasons]
    return DiagnosisDecision(code=codes[0], codes=codes, step=step, reasons=reasons)


def _another_model(summary: SummaryBody, name: str) -> DiagnosisDecision:
    """A server serving another model: its vectors differ by nature, so no cause of the same model's pipeline (a
    tokenizer, a truncation, a pooling) is named for it, whatever the hypotheses matched by chance."""
    found = summary.plan.of(name)
    change = found.model if found is not None else None
    params = {"name": name, "model": (change.candidate_model if change else None) or "?",
              "legacy_model": (change.legacy_model if change else None) or "?"}
    # a model the server did not state and the configuration does not name is said so, never named (issue 64)
    unstated = change is not None and change.candidate_model_source == "not_stated"
    code = "diagnosis_another_model_unstated" if unstated else "diagnosis_another_model"
    if unstated:
        params.pop("model")
    return DiagnosisDecision(code=code, codes=[code], step="vectors",
                             reasons=[Finding(code=code, params=params, why=explain(code, **params))])


def diagnosis_decisions(summary: SummaryBody) -> dict[str, DiagnosisDecision]:
    """``{server: {code, codes, step, reasons}}`` for every server whose vectors differ (see the module doc); a
    candidate serving another model gets ``diagnosis_another_model`` instead of the findings."""
    out: dict[str, DiagnosisDecision] = {}
    findings = summary.diagnosis.by_target
    for name, finding in findings.items():
        decided = _decision(finding, name, "vectors")
        if decided:
            out[name] = decided
    for row in summary.parity.rows:
        decided = _decision(row.diagnosis, row.backend, "parity")
        if decided:
            out[row.backend] = decided
    for name in summary.roles.candidates:
        if summary.plan.another_model(name):
            out[name] = _another_model(summary, name)
    return out


def diagnosis_query_decisions(summary: SummaryBody) -> dict[str, DiagnosisDecision]:
    """``{server: {code, codes, step: "queries", reasons}}`` for every server whose query vectors differ from the
    model's with its query prompt (an ignored ``input_type`` gives ``diagnosis_prompt_missing``)."""
    queries = summary.diagnosis.queries
    out: dict[str, DiagnosisDecision] = {}
    for name, finding in (queries.by_target if queries is not None else {}).items():
        if summary.plan.another_model(name):  # its query vectors are another model's too: no prompt is missing
            continue
        decided = _decision(finding, name, "queries")
        if decided:
            out[name] = decided
    return out
