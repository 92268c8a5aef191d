"""The post as a document of statements (issue 63), decided before rendering and stored in
``decisions.post.document``: ordered sections, each of statements; a statement names its catalogue message, the
claims it makes and the facts it cites, each with the path in summary.json it comes from. The renderer words the
statements; the checks (:mod:`embedswap.report.post_checks`) read this model, not the markdown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from embedswap.summary.estimate import Estimate
from embedswap.summary.types_common import Strict
from embedswap.summary.types_fact import Fact

ClaimCode = Literal["equivalent", "non_inferior", "different", "inconclusive", "failed", "not_measured"]


class PostClaim(Strict):
    """One stored verdict a statement states: about ``subjects`` (one candidate against the legacy server; two
    candidates for a pair, the first over the second), ``metric`` (a key of ``[terms.equivalence.comparisons]``),
    ``variant`` (``address_swap``, ``shim`` or empty). ``code`` and ``direction`` are the verdict's (the only
    direction the sentence may say: set for ``different`` and ``non_inferior`` only); ``estimate`` is the figure
    printed with the interval its label names. ``source``: the verdict's path; ``figure_source``: where the
    printed value and interval are stored (the ratio's own interval, or the verdict where the interval is its)."""
    subjects: list[str]
    metric: str
    variant: str = ""
    code: ClaimCode
    direction: Literal["worse", "better", "slower", "faster"] | None = None
    estimate: Estimate
    reason: str = ""  # the code of an inconclusive verdict's reason
    n_needed: int | None = None
    margin: float | None = None
    statuses: dict[str, int] = {}
    drift_factor: float | None = None  # the host drift a ``host_drift`` reason names (latency only)
    source: str = ""  # empty: no stored verdict (not measured)
    figure_source: str = ""

    def key(self) -> tuple[tuple[str, ...], str, str]:
        """What the claim is about: two claims with one key must not say two things."""
        return tuple(self.subjects), self.metric, self.variant

    def finding(self) -> tuple[object, ...]:
        """What it says, without whom it is about (equal for two candidates with identical findings)."""
        return (self.metric, self.variant, self.code, self.direction, self.estimate.printed(),
                self.estimate.interval, self.reason, self.n_needed,
                None if self.margin is None else round(self.margin, 3), tuple(sorted(self.statuses.items())),
                None if self.estimate.widened_by is None else round(self.estimate.widened_by, 2),
                round(self.drift_factor, 2) if self.reason == "host_drift" and self.drift_factor else None)


class Statement(Strict):
    """One sentence (or list item) of the post: ``key`` its catalogue message (``post.latency_claim``...),
    ``subjects`` the candidates it speaks of (several when their statements were equal: said once), the claims it
    makes (per subject, each with its own source) and the facts it cites (the first subject's where they share)."""
    key: str
    subjects: list[str] = []
    claims: list[PostClaim] = []
    facts: list[Fact] = []

    def claims_of(self, subject: str) -> list[PostClaim]:
        return [c for c in self.claims if c.subjects and c.subjects[0] == subject]

    def fact(self, key: str) -> Fact | None:
        return next((f for f in self.facts if f.key == key), None)


class Section(Strict):
    key: Literal["conclusion", "setup", "contract", "vectors", "ranking", "latency", "immovable", "closing"]
    statements: list[Statement] = []


class PostDocument(Strict):
    sections: list[Section] = []

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)

    def statements(self, key: str | None = None) -> Iterator[Statement]:
        """Every statement in order (``key``: only those of that message)."""
        for section in self.sections:
            for s in section.statements:
                if key is None or s.key == key:
                    yield s

    def claims(self) -> Iterator[tuple[Statement, PostClaim]]:
        for s in self.statements():
            for c in s.claims:
                yield s, c
