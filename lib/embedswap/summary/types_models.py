"""The model evidence of each candidate's plan (``types_plan``): which model it serves against the legacy server's, and the
evidence (issue 57). A candidate serving another model is compared on ranking and the index, not vector by vector."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Section, Strict

# what says "another model": the configuration (targets.<name>.model), what the server states about itself (its
# model list or the echoed model), the document vectors (median cosine to the legacy server's near 0 in every
# language), or their dimension; the tokenizer (the documents' token counts differ in every language) is shown
# beside them and decides nothing (one model served by another engine can count otherwise in one language)
EvidenceKind = Literal["configured", "stated", "cosine", "dimensions", "tokenizer"]
ModelCode = Literal["same_model", "another_model", "undetermined"]
# where a candidate's model name was read (issue 64): its configuration (``targets.<name>.model``, or the spec the
# kit loads into a server it starts), what the server stated, or neither
ModelSource = Literal["configured", "stated", "not_stated"]


class ModelEvidence(Strict):
    """One piece of evidence, for or against another model (``says_another``), with what it read."""
    kind: EvidenceKind
    says_another: bool
    legacy: str | None = None  # the legacy side's value (a model name, a dimension)
    candidate: str | None = None
    cosine_median: Number | None = None  # kind "cosine": overall, and per language below
    by_language: dict[str, Number] = {}
    threshold: Number | None = None
    # kind "tokenizer": per language, the share of documents whose token count differs from the legacy server's
    differing: dict[str, Number] = {}


class ModelChange(Section):
    """One candidate: does it serve the legacy server's model, and why the kit says so."""
    code: ModelCode = "undetermined"
    legacy_model: str | None = None  # the model the legacy server serves (its target's ``model`` or the experiment's)
    candidate_model: str | None = None  # as configured, else as the server states it; None: neither says
    candidate_model_source: ModelSource | None = None  # where candidate_model was read (models._candidate_model)
    local_copy: bool = False  # the candidate's model has weights on this machine (a parity reference is possible)
    evidence: list[ModelEvidence] = []

    @property
    def another(self) -> bool:
        return self.code == "another_model"
