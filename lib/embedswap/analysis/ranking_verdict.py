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

# Model specs whose weights are random (embedswap.zoo.qwen3): their vectors carry no meaning, so ranking is noise.
RANDOM_WEIGHT_SPECS = ("build:tiny-qwen3",)
RANK_OVERLAP_MIN = 0.95
RANK_DELTA_MAX = 0.01


def random_weights(summary: dict[str, Any]) -> bool:
    """True when the experiment's model has random weights (model.spec, or the experiment config's model.path)."""
    specs = [(summary.get("model") or {}).get("spec"),
             (((summary.get("experiment") or {}).get("config") or {}).get("model") or {}).get("path")]
    return any(isinstance(spec, str) and spec.strip().startswith(RANDOM_WEIGHT_SPECS) for spec in specs)


def ranking_unchanged(variant: dict[str, Any], deltas: dict[str, Any] | None,
                      tests: dict[str, Any] | None = None) -> bool | None:
    """Whether a ranking variant matches legacy within the stated tolerance; None when there is no number. With
    ``tests`` (metric -> paired test), a delta whose test found no difference does not count against it."""
    if not is_measured(variant):
        return None
    overlap = variant.get("top5_overlap")
    values = [(deltas or {}).get(k) for k in ("ndcg_at_10", "recall_at_5")]
    if overlap is None and all(v is None for v in values):
        return None
    if overlap is not None and overlap < RANK_OVERLAP_MIN:
        return False
    tests = tests or {}
    noise = [(tests.get(k) or {}).get("verdict") == "no_difference" for k in ("ndcg_at_10", "recall_at_5")]
    return all(v is None or abs(v) <= RANK_DELTA_MAX or quiet for v, quiet in zip(values, noise))


def by_candidate(summary: dict[str, Any]) -> dict[str, Any]:
    """The ranking section's per-candidate entries (older summaries held the primary candidate only)."""
    section = summary.get("ranking") if isinstance(summary.get("ranking"), dict) else {}
    entries = section.get("by_candidate") or {}
    primary = (summary.get("roles") or {}).get("candidate")
    if not entries and primary and is_measured(section):
        deltas = section.get("deltas") or {}
        entries = {primary: {
            "measured": True, "naive": section.get("candidate_naive") or {},
            "shim": section.get("candidate_shim") or {},
            "deltas": {"naive": deltas.get("candidate_naive"), "shim": deltas.get("candidate_shim")}}}
    return entries


def _variant_verdict(entry: dict[str, Any], kind: str, legacy: dict[str, Any]) -> dict[str, Any]:
    variant = entry.get(kind) or {}
    tests = variant_tests(legacy, variant) if is_measured(variant) and is_measured(legacy) else {}
    unchanged = ranking_unchanged(variant, (entry.get("deltas") or {}).get(kind), tests)
    per_query = variant.get("per_query") or {}
    changed = sum(1 for q in per_query.values()
                  if isinstance(q, dict) and q.get("top5_overlap") is not None and q["top5_overlap"] < 1)
    return {"unchanged": unchanged, "changed_queries": changed if per_query else None,
            "queries": len(per_query) or variant.get("queries"), "tests": tests}


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


def ranking_verdicts(summary: dict[str, Any]) -> dict[str, Any]:
    """``{meaningful, tolerance, by_candidate: {name: {naive, shim, decision}}}``; no verdict on random weights."""
    meaningful = not random_weights(summary)
    out: dict[str, Any] = {"meaningful": meaningful,
                           "tolerance": {"top5_overlap_min": RANK_OVERLAP_MIN, "delta_max": RANK_DELTA_MAX,
                                         "alpha": ALPHA},
                           "by_candidate": {}}
    if not meaningful or not is_measured(summary.get("ranking")):
        return out
    entries = by_candidate(summary)
    legacy = (summary.get("ranking") or {}).get("legacy") or {}
    for name in roles(summary)[1]:
        entry = entries.get(name) or {"naive": {}, "shim": {}}
        naive, shim = _variant_verdict(entry, "naive", legacy), _variant_verdict(entry, "shim", legacy)
        out["by_candidate"][name] = {"naive": naive, "shim": shim,
                                     "decision": decision(naive["unchanged"], shim["unchanged"])}
    return out
