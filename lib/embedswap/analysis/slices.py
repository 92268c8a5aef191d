"""Every ranking and vector comparison per language, Holm-corrected across the languages of one comparison.

A pooled mean hides one language that got worse (an ignored instruction or a tokenizer difference often hits one
language only). Each comparison (per-query nDCG@10, recall@5 and MRR@10 changes, per-query top-5 overlap, per-document
cosine) is decided per slice against the same margin by :func:`~embedswap.stats.equivalence.sliced_verdict`:
a slice's ``different`` stands only if its p-value survives Holm's correction across the slices, equivalence needs
every slice equivalent (intersection-union), and the overall verdict names a worse slice. A query's slice is its
language (``ranking.per_query.<id>.lang``, ``und`` when the workload does not say); the workload has no query
tags, so languages are the only slices. With one language the pooled verdict stands alone (a single slice adds
nothing).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from embedswap.stats import equivalence as eq
from embedswap.analysis.stored_verdicts import stored
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_equivalence import SlicedVerdicts
from embedswap.summary.types_plan import RankingQuestion
from embedswap.summary.types_sections import RankingRun
from embedswap.summary.types_vectors import Comparison

UNKNOWN = "und"
# metric -> (the per-query field, its margin in decisions.margins)
RANKING = {"ndcg_at_10": "ndcg_at_10", "recall_at_5": "recall_at_k", "mrr_at_10": "mrr_at_10"}


def _by_lang(pairs: list[tuple[str, float]]) -> dict[str, np.ndarray]:
    groups: dict[str, list[float]] = {}
    for lang, value in pairs:
        groups.setdefault(lang or UNKNOWN, []).append(value)
    return {lang: np.asarray(values, dtype=np.float64) for lang, values in sorted(groups.items())}


def ranking_slices(legacy: RankingRun | None, variant: RankingRun | None, config: DecisionsConfig, *,
                   question: RankingQuestion = "equivalence") -> dict[str, tuple[eq.Verdict, dict[str, eq.Verdict]]]:
    """metric -> (overall, by language) for the metrics whose queries span two languages or more.
    ``question`` ``non_inferiority``: a better ranking is acceptable and no top-5 overlap (see
    :func:`embedswap.analysis.ranking_verdict.variant_verdicts`)."""
    better_is_harmless = question == "non_inferiority"
    left = legacy.per_query if legacy is not None else {}
    right = variant.per_query if variant is not None else {}
    margins, alpha, power = config.margins, config.alpha, config.power
    out: dict[str, tuple[eq.Verdict, dict[str, eq.Verdict]]] = {}
    for metric, margin_name in RANKING.items():
        pairs = [(row.lang or UNKNOWN, getattr(right[q], metric) - getattr(row, metric)) for q, row in left.items()
                 if q in right and getattr(row, metric) is not None and getattr(right[q], metric) is not None]
        groups = _by_lang(pairs)
        if len(groups) >= 2:
            out[metric] = _in_total(eq.sliced_verdict(groups, getattr(margins, margin_name), alpha=alpha,
                                                      better_is_harmless=better_is_harmless, power=power),
                                    {k: len(v) for k, v in groups.items()})
    overlaps = _by_lang([(left[q].lang if q in left else None) or UNKNOWN, row.top5_overlap]
                        for q, row in right.items() if row.top5_overlap is not None and not better_is_harmless)
    if len(overlaps) >= 2:
        decided = {lang: eq.overlap_verdict(v, margins.top_k_overlap, alpha=alpha, power=power)
                   for lang, v in overlaps.items()}
        out["top5_overlap"] = _in_total(eq.sliced_verdict(decided, better_is_harmless=True, alpha=alpha,
                                                           power=power), {k: len(v) for k, v in overlaps.items()})
    return out


def _in_total(found: tuple[eq.Verdict, dict[str, eq.Verdict]], sizes: dict[str, int]
              ) -> tuple[eq.Verdict, dict[str, eq.Verdict]]:
    """The overall ``n_needed`` in queries of the whole workload: a slice's own n needed, scaled by the workload's
    share of that language (the languages keep their proportions as queries are added); the largest of the
    undecided slices."""
    overall, by_slice = found
    if overall.code != "inconclusive":
        return found
    total = sum(sizes.values())
    needs = [math.ceil(v.n_needed * total / sizes[k]) if v.n_needed is not None and sizes.get(k) else None
             for k, v in by_slice.items() if v.code == "inconclusive"]
    n_needed = None if not needs or any(n is None for n in needs) else max(needs)  # type: ignore[type-var]
    return overall.but(n_needed=n_needed), by_slice


def stored_slices(found: tuple[eq.Verdict, dict[str, eq.Verdict]],
                  kind: Literal["lang", "tag"] = "lang") -> SlicedVerdicts:
    """The overall verdict and each slice's, as summary.json stores them."""
    overall, by_slice = found
    return SlicedVerdicts(overall=stored(overall), by_slice={k: stored(v) for k, v in by_slice.items()}, kind=kind)


def cosine_slices(comparison: Comparison | None, config: DecisionsConfig) -> SlicedVerdicts | None:
    """One candidate's per-document cosine to legacy, per document language, against ``margins.cosine`` (the
    change is ``cosine - 1``: only harmful; a non-finite vector counts as cosine 0). With one language: the
    pooled verdict as the only slice. None without per-document cosines."""
    rows = comparison.per_document if comparison is not None else []
    if not rows:
        return None
    groups = _by_lang([(r.lang, (r.cosine if r.cosine is not None else 0.0) - 1.0) for r in rows])
    margin, alpha, power = config.margins.cosine, config.alpha, config.power
    decided = {}
    for lang, changes in groups.items():
        v = eq.paired_verdict(changes, margin, better_is_harmless=True, alpha=alpha, power=power)
        decided[lang] = v.but(code="equivalent", reason="interval_inside_margin") \
            if v.code == "non_inferior" else v
    return stored_slices(eq.sliced_verdict(decided, better_is_harmless=True, alpha=alpha, power=power))


def vector_decisions(summary: SummaryBody, config: DecisionsConfig) -> dict[str, SlicedVerdicts]:
    """candidate -> its per-language cosine verdict (``decisions.vectors``) against the experiment's typed
    ``decisions``; empty when no per-document cosine."""
    from embedswap.analysis.common import is_measured, roles

    out: dict[str, SlicedVerdicts] = {}
    for name in roles(summary)[1]:
        comparison = summary.vectors.comparison(name)
        found = cosine_slices(comparison, config) if is_measured(comparison) else None
        if found is not None:
            out[name] = found
    return out
