"""Judgement-free agreement of two rankings: top-k overlap at k = 1, 5, 10, rank-biased overlap, top-1 changes,
with a bootstrap interval over queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

AGREEMENT_K = (1, 5, 10)
RBO_P = 0.9  # Webber et al. 2010's usual persistence: the top 10 carry ~86 % of the weight


def rbo(a: Sequence[Any], b: Sequence[Any], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap (Webber, Moffat, Zobel 2010, eq. 32) of two rankings cut at the same depth.

    Hand-written: the formula is five lines; the PyPI ``rbo`` package (0.1.3, 2023) would be a new runtime
    dependency and lock entry for them. 1.0 for identical lists, 0.0 for disjoint ones.
    """
    k = min(len(a), len(b))
    if k == 0:
        return float("nan")
    seen_a: set[Any] = set()
    seen_b: set[Any] = set()
    overlap = 0
    total = 0.0
    for d in range(1, k + 1):
        x, y = a[d - 1], b[d - 1]
        if x == y:
            overlap += 1
        else:
            overlap += (x in seen_b) + (y in seen_a)
        seen_a.add(x)
        seen_b.add(y)
        total += overlap / d * p ** d
    return float(overlap / k * p ** k + (1 - p) / p * total)


def agreement(reference: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Agreement of ``other``'s rankings with ``reference``'s (both from ``evaluate``), judgements not needed:
    top-k overlap (|A ∩ B| / k) at each k of :data:`AGREEMENT_K`, RBO at depth 10, and whether the top 1 changed;
    per query, mean over queries, and a 95 % bootstrap interval of each mean (the judged metrics' statistic)."""
    per_query: dict[str, dict[str, float]] = {}
    for query_id, row in other["per_query"].items():
        base = (reference["per_query"].get(query_id) or {}).get("top10")
        mine = row.get("top10")
        if not base or not mine:
            continue
        depth = min(len(base), len(mine))  # a corpus smaller than k: overlap of the whole ranking
        entry = {f"overlap_at_{k}": len(set(base[:k]) & set(mine[:k])) / min(k, depth) for k in AGREEMENT_K}
        entry["rbo"] = rbo(base, mine)
        entry["top1_changed"] = float(base[0] != mine[0])
        per_query[query_id] = entry
    metrics = [f"overlap_at_{k}" for k in AGREEMENT_K] + ["rbo", "top1_changed"]
    means = {m: _mean_with_interval([r[m] for r in per_query.values()]) for m in metrics}
    return {"queries": len(per_query), **means, "per_query": per_query, "rbo_p": RBO_P, "k": list(AGREEMENT_K)}


def _mean_with_interval(values: list[float], seed: int = 17) -> dict[str, float | None]:
    """Mean over queries and its 95 % percentile-bootstrap interval (scipy); a constant has no spread."""
    if not values:
        return {"mean": None, "low": None, "high": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if len(arr) < 2 or np.allclose(arr, arr[0]):
        return {"mean": mean, "low": mean, "high": mean, "n": len(arr)}
    from scipy import stats

    boot = stats.bootstrap((arr,), np.mean, confidence_level=0.95, method="percentile", n_resamples=2000,
                           random_state=np.random.default_rng(seed))
    return {"mean": mean, "low": float(boot.confidence_interval.low), "high": float(boot.confidence_interval.high),
            "n": len(arr)}
