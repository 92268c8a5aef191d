"""Whether search ranking stays the legacy one, per candidate, and what that asks of the migration.

A ranking variant counts as unchanged against legacy when its top-5 overlap is at least :data:`RANK_OVERLAP_MIN`
and no nDCG@10 / recall@5 delta is a detected difference: beyond :data:`RANK_DELTA_MAX` *and* significant in the
paired test over the queries (:mod:`embedswap.analysis.ranking_tests`; both stated in the report). A difference is
never called better or worse. On a random-weight model (:data:`RANDOM_WEIGHT_SPECS`) the ranking is noise and no
decision is drawn.
"""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.ranking_tests import ALPHA, variant_tests
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import PairedTest
from embedswap.summary.types_sections import CandidateRanking, MetricDeltas, RankingRun

# Model specs whose weights are random (embedswap.zoo.qwen3): their vectors carry no meaning, so ranking is noise.
RANDOM_WEIGHT_SPECS = ("build:tiny-qwen3",)
RANK_OVERLAP_MIN = 0.95
RANK_DELTA_MAX = 0.01
METRICS = ("ndcg_at_10", "recall_at_5")


def random_weights(summary: SummaryBody) -> bool:
    """True when the experiment's model has random weights (model.spec, or the experiment config's model.path)."""
    configured = summary.experiment.config.get("model")  # open: experiment.yaml as the user wrote it
    specs = [summary.model.spec, configured.get("path") if isinstance(configured, dict) else None]
    return any(isinstance(spec, str) and spec.strip().startswith(RANDOM_WEIGHT_SPECS) for spec in specs)


def ranking_unchanged(variant: RankingRun, deltas: MetricDeltas | None,
                      tests: dict[str, PairedTest] | None = None) -> bool | None:
    """Whether a ranking variant matches legacy within the stated tolerance; None when there is no number. With
    ``tests`` (metric -> paired test), a delta whose test found no difference does not count against it."""
    if not is_measured(variant):
        return None
    overlap = variant.top5_overlap
    values = [getattr(deltas, k) if deltas is not None else None for k in METRICS]
    if overlap is None and all(v is None for v in values):
        return None
    if overlap is not None and overlap < RANK_OVERLAP_MIN:
        return False
    tests = tests or {}
    noise = [k in tests and tests[k].verdict == "no_difference" for k in METRICS]
    return all(v is None or abs(v) <= RANK_DELTA_MAX or quiet for v, quiet in zip(values, noise))


def by_candidate(summary: SummaryBody) -> dict[str, CandidateRanking]:
    """The ranking section's per-candidate entries (older summaries held the primary candidate only)."""
    section = summary.ranking
    entries = section.by_candidate
    primary = summary.roles.candidate
    if not entries and primary and is_measured(section):
        deltas = {key: section.deltas[old] for key, old in (("naive", "candidate_naive"), ("shim", "candidate_shim"))
                  if old in section.deltas}
        entries = {primary: CandidateRanking(
            measured=True, naive=section.candidate_naive or RankingRun(measured=False),
            shim=section.candidate_shim or RankingRun(measured=False), deltas=deltas)}
    return entries


def _variant_verdict(entry: CandidateRanking | None, kind: str, legacy: RankingRun | None) -> dict[str, Any]:
    variant = getattr(entry, kind) if entry is not None else RankingRun(measured=False)
    tests = variant_tests(legacy, variant) if is_measured(variant) and is_measured(legacy) else {}
    typed_tests = {k: PairedTest.model_validate(v) for k, v in tests.items()}
    unchanged = ranking_unchanged(variant, entry.deltas.get(kind) if entry is not None else None, typed_tests)
    per_query = variant.per_query
    changed = sum(1 for q in per_query.values() if q.top5_overlap is not None and q.top5_overlap < 1)
    return {"unchanged": unchanged, "changed_queries": changed if per_query else None,
            "queries": len(per_query) or variant.queries, "tests": tests}


def decision(naive_same: bool | None, shim_same: bool | None) -> str:
    """reindex / client / shim_only / none / shim_missing: what the two rankings ask of the migration."""
    if shim_same is None:
        return "shim_missing"
    if not shim_same:
        return "reindex"
    if naive_same is False:
        return "client"
    if naive_same is None:
        return "shim_only"
    return "none"


def ranking_verdicts(summary: SummaryBody) -> dict[str, Any]:
    """``{meaningful, tolerance, by_candidate: {name: {naive, shim, decision}}}``; no verdict on random weights."""
    meaningful = not random_weights(summary)
    out: dict[str, Any] = {"meaningful": meaningful,
                           "tolerance": {"top5_overlap_min": RANK_OVERLAP_MIN, "delta_max": RANK_DELTA_MAX,
                                         "alpha": ALPHA},
                           "by_candidate": {}}
    if not meaningful or not is_measured(summary.ranking):
        return out
    entries = by_candidate(summary)
    legacy = summary.ranking.legacy
    for name in roles(summary)[1]:
        entry = entries.get(name)
        naive, shim = _variant_verdict(entry, "naive", legacy), _variant_verdict(entry, "shim", legacy)
        out["by_candidate"][name] = {"naive": naive, "shim": shim,
                                     "decision": decision(naive["unchanged"], shim["unchanged"])}
    return out
