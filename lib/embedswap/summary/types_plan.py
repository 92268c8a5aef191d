"""The ``plan`` section of summary.json (issue 62): what each candidate's comparison is, decided once in step 03
before any comparison, from the model evidence (``summary.sections.plan``). Every builder, decision and reader
takes it from here: no function takes an "another model" flag.

- ``comparison``: the candidate serves the legacy server's model, another one, or it could not be told;
- ``probes_against``: what a probe's answer is read against. ``legacy``: the legacy server's answer to the same
  request; ``own``: another model's vectors, token counts and echoed name cannot match the legacy server's, so
  those aspects are read within the candidate's own answers (statuses, counts and dimensions still across);
- ``ranking_question``: ``equivalence`` (the same model must rank as before) or ``non_inferiority`` (another model
  is meant to move the ranking: better is harmless, worse is not; no top-5 overlap asked)."""

from __future__ import annotations

from typing import Literal

from embedswap.answers.classify import ReadAgainst
from embedswap.summary.types_common import Section, Strict
from embedswap.summary.types_models import ModelChange, ModelCode

RankingQuestion = Literal["equivalence", "non_inferiority"]


class CandidatePlan(Strict):
    """One candidate's comparison, with the evidence it was decided from."""
    comparison: ModelCode
    probes_against: ReadAgainst
    ranking_question: RankingQuestion
    model: ModelChange  # the evidence (configured, stated, cosine, dimensions, tokenizer) and the models named

    @property
    def another_model(self) -> bool:
        return self.comparison == "another_model"


def plan_for(change: ModelChange) -> CandidatePlan:
    """The comparison a model change calls for: the one rule, used by the step and by the migration of an older
    summary's ``models`` section alike."""
    another = change.code == "another_model"
    return CandidatePlan(comparison=change.code, probes_against="own" if another else "legacy",
                         ranking_question="non_inferiority" if another else "equivalence", model=change)


class Plan(Section):
    """Per candidate, its comparison. Not measured: no vectors to decide from (every candidate is then read as the
    same model, against the legacy server's answers, as a comparison of one model must be)."""
    by_candidate: dict[str, CandidatePlan] = {}

    def of(self, name: str | None) -> CandidatePlan | None:
        return self.by_candidate.get(name) if name is not None else None

    def another_model(self, name: str | None) -> bool:
        """Whether the candidate serves another model than the legacy server (False: same, or not determined)."""
        found = self.of(name)
        return found is not None and found.another_model

    def others(self) -> frozenset[str]:
        """The candidates serving another model."""
        return frozenset(n for n, p in self.by_candidate.items() if p.another_model)

    def probes_against(self, name: str | None) -> ReadAgainst:
        found = self.of(name)
        return found.probes_against if found is not None else "legacy"

    def ranking_question(self, name: str | None) -> RankingQuestion:
        found = self.of(name)
        return found.ranking_question if found is not None else "equivalence"
