"""``index.options``: the index options' searches (``captures/index/searches.json``, ``options``) scored against the
re-embedded index per query, over the k folds of held-out documents (embedswap.index.options).

recall@10 of an option = the share of the re-embedded index's top 10 it returns, per query and fold; a query's
figure is its mean over the folds, and the option's figure the mean over queries with a 95 % interval from
:func:`scipy.stats.bootstrap` (BCa; the queries are the independent units, the folds of one query are not). nDCG@10
uses the workload's judgements restricted to each fold's held-out documents (a query counts in the folds holding one
of its relevant documents); ``ndcg_delta`` is the paired per-query difference with the re-embed's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.index.names import OPTIONS
from embedswap.ranking.metrics import ndcg_at_k

CONFIDENCE = 0.95
RESAMPLES = 2000  # bootstrap resamples: the interval's ends move by < 0.005 between seeds at 2000 (scipy's default 9999 costs 5x)


def interval(values: list[float]) -> dict[str, Any]:
    """Mean and 95 % BCa interval of per-query values (None ends where fewer than 2 or all equal)."""
    data = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    if not len(data):
        return {"value": None, "low": None, "high": None, "n": 0}
    mean = float(data.mean())
    if len(data) < 2 or np.ptp(data) == 0:
        return {"value": mean, "low": mean if len(data) > 1 else None, "high": mean if len(data) > 1 else None,
                "n": int(len(data))}
    # imported here: scipy.stats takes ~0.7 s of CPU to import, and every notebook's kernel imported it through the
    # summary builder although only an attempt with index options captured reaches this line (issue 61)
    from scipy.stats import bootstrap

    found = bootstrap((data,), np.mean, confidence_level=CONFIDENCE, n_resamples=RESAMPLES, method="BCa",
                      random_state=np.random.default_rng(0))
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):  # BCa undefined (a degenerate jackknife): percentile instead
        found = bootstrap((data,), np.mean, confidence_level=CONFIDENCE, n_resamples=RESAMPLES, method="percentile",
                          random_state=np.random.default_rng(0))
        low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    return {"value": mean, "low": low, "high": high, "n": int(len(data))}


def _recall(found: list[int], reference: list[int], k: int) -> float:
    want = {d for d in reference[:k] if d >= 0}
    return len({d for d in found[:k] if d >= 0} & want) / len(want) if want else 1.0


def _per_query(folds: list[dict[str, Any]], option: str, relevance: np.ndarray, k: int
               ) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """Per query, over the folds: recall@k against the re-embed, nDCG@10, and nDCG@10 - the re-embed's."""
    n = len(folds[0]["found"]["re_embed"])
    recall, ndcg, delta = [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)]
    for fold in folds:
        test = np.asarray(fold["test"], dtype=np.int64)
        found, reference = fold["found"][option], fold["found"]["re_embed"]
        for q in range(n):
            recall[q].append(_recall(found[q], reference[q], k))
            if not relevance.size or relevance[q, test].max() <= 0:
                continue
            grades = np.zeros(relevance.shape[1])
            grades[test] = relevance[q, test]
            mine = ndcg_at_k(np.asarray([d for d in found[q] if d >= 0]), grades)
            ndcg[q].append(mine)
            delta[q].append(mine - ndcg_at_k(np.asarray([d for d in reference[q] if d >= 0]), grades))

    def mean(rows: list[list[float]]) -> list[float | None]:
        return [float(np.mean(r)) if r else None for r in rows]

    return mean(recall), mean(ndcg), mean(delta)


def score_options(capture: dict[str, Any], relevance: np.ndarray) -> dict[str, Any]:
    """One candidate's ``index.options`` entry from its capture (``relevance``: (queries, documents) grades)."""
    if not capture.get("measured"):
        return {k: capture[k] for k in ("measured", "why", "reason") if k in capture}
    folds, k = capture["folds"], capture["k"]
    judged = bool(relevance.size and relevance.max() > 0)
    base_ms = float(np.mean([f["query_ms"]["re_embed"] for f in folds]))
    options = []
    for option in OPTIONS:
        if option not in folds[0]["found"]:
            continue  # keep and orthogonal need one dimension
        recall, ndcg, delta = _per_query(folds, option, relevance, k)
        query_ms = float(np.mean([f["query_ms"][option] for f in folds]))
        options.append({
            "option": option, "recall_at_10": interval(recall),
            **({"ndcg_at_10": interval(ndcg), "ndcg_delta": interval(delta)} if judged else {}),
            **({"fit_s": capture["fit_s"][option]} if option in capture["fit_s"] else {}),
            "query_ms": query_ms, "overhead_ms": query_ms - base_ms,
            "storage_bytes": int(capture["storage_bytes"][option])})
    return {"measured": True, "folds": len(folds), "k": k, "rescore_depth": capture["rescore_depth"],
            "dual_read_share": capture["dual_read_share"], "documents": capture["documents"],
            "documents_per_fold": min(len(f["test"]) for f in folds), "queries": len(folds[0]["found"]["re_embed"]),
            "ridge_alphas": capture.get("ridge_alphas", []), "options": options,
            **{key: capture[key] for key in ("training_pairs", "mlp_min_pairs") if key in capture}}


def options_section(capture: dict[str, Any], relevance: np.ndarray) -> dict[str, Any]:
    """``index.options``: per candidate (empty where the capture holds none)."""
    return {name: score_options(entry, relevance) for name, entry in (capture.get("options") or {}).items()}

