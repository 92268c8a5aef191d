"""Ranking impact: does the swap change what search returns? nDCG@10, recall@5 and top-5 overlap.

The article left this open ("검색 순위를 바꿀 만한 차이인지는 따로 재지 않았습니다(미실측)"). Here it is
measured on the workload's queries and graded judgements, three ways:

- ``legacy``: the legacy server's documents and its queries as the old client sent them (``input_type: "query"``,
  which the legacy server turns into the model card's query prompt);
- ``candidate_naive``: the candidate's documents and the *same request* (``input_type: "query"``) — what happens
  when only the address is changed; a candidate that ignores the field embeds the bare query;
- ``candidate_shim``: the candidate's documents and client-prefixed queries (the migration shim's fix).

Definitions (pure functions on numpy arrays, no I/O):

- **nDCG@k** with graded relevance (2 = answers the query, 1 = partially relevant, 0 = not judged): trec_eval's
  convention by default (``ndcg_cut``, also MTEB's through pytrec_eval): linear gain ``rel``, discount
  ``log2(rank + 1)`` for 1-based ranks, normalised by the ideal ordering of the same judgements; ``gain="exp"``
  gives the ``2**rel - 1`` variant (Burges et al.), which this kit used before. ``tests/test_ranking.py`` checks
  both metrics against pytrec_eval as an oracle. A query with no relevant document has no defined nDCG (``nan``) and is left out of the means.
- **recall@k**: the share of a query's relevant documents found in its top k. *Relevant* means grade >= 1: a
  partially relevant document is still material the retriever should surface, and counting only grade 2 would
  make many queries (one grade-2 document each) all-or-nothing. ``min_relevance=2`` gives the strict variant.
- **top-k overlap**: the Jaccard index ``|A ∩ B| / |A ∪ B|`` of two top-k sets (order inside the top k ignored).
  It needs no judgements: 1.0 means the candidate returns exactly the legacy server's top k.

Scores are cosine similarities (both sides are L2-normalised before the dot product). Ties are broken by
document order (a stable sort, the order of ``documents.jsonl``), so results are deterministic; trec_eval breaks
ties by document id instead, so the two agree only without ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from embedswap.reasons import not_measured

NDCG_K = 10
GAIN = "linear"  # trec_eval / MTEB; "exp": 2**rel - 1
RECALL_K = 5
OVERLAP_K = 5


# --- per-query metrics ------------------------------------------------------------------------------------------------
def ranking_from(scores_or_ranking: Any) -> np.ndarray:
    """Document indices, best first.

    An integer array is taken as a ranking already (document indices in ranked order); a float array as one
    score per document (higher is better), sorted descending with ties kept in document order.
    """
    values = np.asarray(scores_or_ranking)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array of scores or a ranking, got shape {values.shape}")
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    if values.dtype.kind not in "fb":
        raise ValueError(f"expected numbers, got dtype {values.dtype}")
    return np.argsort(-values.astype(np.float64), kind="stable")


def _relevance(qrels: Any) -> np.ndarray:
    rel = np.asarray(qrels, dtype=np.float64)
    if rel.ndim != 1:
        raise ValueError(f"expected one relevance grade per document (1-D), got shape {rel.shape}")
    return rel


def dcg(grades_in_rank_order: np.ndarray, gain: str = GAIN) -> float:
    ranks = np.arange(1, len(grades_in_rank_order) + 1)
    gains = grades_in_rank_order if gain == "linear" else 2.0 ** grades_in_rank_order - 1.0
    return float(np.sum(gains / np.log2(ranks + 1)))


def ndcg_at_k(scores_or_ranking: Any, qrels: Any, k: int = NDCG_K, gain: str = GAIN) -> float:
    """Graded nDCG@k. ``qrels``: relevance grade per document index (0 = not relevant). nan without relevant docs.
    ``gain``: "linear" (trec_eval, the default) or "exp" (2**rel - 1)."""
    if gain not in ("linear", "exp"):
        raise ValueError(f"gain must be 'linear' or 'exp', got {gain!r}")
    rel = _relevance(qrels)
    ranking = ranking_from(scores_or_ranking)[:k]
    ideal = dcg(np.sort(rel)[::-1][:k], gain)
    if ideal <= 0:
        return float("nan")
    return dcg(rel[ranking], gain) / ideal


def recall_at_k(scores_or_ranking: Any, qrels: Any, k: int = RECALL_K, min_relevance: int = 1) -> float:
    """Share of the relevant documents (grade >= ``min_relevance``) in the top k; nan without relevant docs."""
    rel = _relevance(qrels)
    relevant = rel >= min_relevance
    total = int(relevant.sum())
    if total == 0:
        return float("nan")
    top = ranking_from(scores_or_ranking)[:k]
    return float(relevant[top].sum()) / total


def top_k(scores_or_ranking: Any, k: int = OVERLAP_K) -> np.ndarray:
    return ranking_from(scores_or_ranking)[:k]


def top_k_overlap(a: Any, b: Any, k: int = OVERLAP_K) -> float:
    """Jaccard index of the two top-k sets (1.0: same k documents, in any order)."""
    set_a, set_b = set(top_k(a, k).tolist()), set(top_k(b, k).tolist())
    union = set_a | set_b
    return len(set_a & set_b) / len(union) if union else float("nan")


def jaccard(a: Sequence[Any], b: Sequence[Any]) -> float:
    set_a, set_b = set(a), set(b)
    union = set_a | set_b
    return len(set_a & set_b) / len(union) if union else float("nan")


# --- a whole query set ------------------------------------------------------------------------------------------------
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


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def cosine_scores(doc_vectors: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
    """(queries, docs) cosine similarities."""
    doc_vectors, query_vectors = np.asarray(doc_vectors), np.asarray(query_vectors)
    if doc_vectors.ndim != 2 or query_vectors.ndim != 2:
        raise ValueError(f"expected 2-D arrays, got docs {doc_vectors.shape} and queries {query_vectors.shape}")
    if doc_vectors.shape[1] != query_vectors.shape[1]:
        raise ValueError(f"dimensions differ: documents {doc_vectors.shape[1]}, queries {query_vectors.shape[1]}")
    return _unit(query_vectors) @ _unit(doc_vectors).T


def _mean(values: list[float]) -> float | None:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else None


SEARCH_CHUNK_CELLS = 32 * 2**20  # query x document scores per chunk (128 MiB of float32): memory stays bounded


def top_rankings(doc_vectors: np.ndarray, query_vectors: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine search in query chunks: each query's best ``depth`` document indices (ties in document order,
    as a stable full sort gives) and their scores. numpy only: at 100k documents and thousands of queries an
    exact scan is a few seconds, so no approximate index (faiss, hnswlib) is needed; the full (queries, docs)
    matrix is never built, only ``SEARCH_CHUNK_CELLS`` scores at a time."""
    docs = _unit32(doc_vectors)
    queries = _unit32(query_vectors)
    n_docs = docs.shape[0]
    depth = min(depth, n_docs)
    step = max(1, SEARCH_CHUNK_CELLS // max(1, n_docs))
    order = np.empty((len(queries), depth), dtype=np.int64)
    best = np.empty((len(queries), depth), dtype=np.float64)
    for start in range(0, len(queries), step):
        scores = queries[start : start + step] @ docs.T
        for row, values in enumerate(scores):
            if depth < n_docs:  # every document scoring at least the depth-th best: ties at the cut included
                cut = np.partition(values, n_docs - depth)[n_docs - depth]
                candidates = np.flatnonzero(values >= cut)
            else:
                candidates = np.arange(n_docs)
            ranked = candidates[np.argsort(-values[candidates].astype(np.float64), kind="stable")][:depth]
            order[start + row] = ranked
            best[start + row] = values[ranked]
    return order, best


def _unit32(rows: np.ndarray) -> np.ndarray:
    """L2-normalised float32 rows (half the memory of float64 at corpus scale; cosines to ~1e-7)."""
    rows = np.asarray(rows, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def evaluate(doc_vectors: np.ndarray, query_vectors: np.ndarray, query_ids: Sequence[str], doc_ids: Sequence[str],
             qrels: dict[str, dict[str, int]], ndcg_k: int = NDCG_K, recall_k: int = RECALL_K,
             overlap_k: int = OVERLAP_K) -> dict[str, Any]:
    """Rank the documents for every query by cosine; per-query and mean nDCG@10, recall@5, and the top-k ids.

    ``qrels``: query id -> {doc id: grade} (the workload's form). Queries without judgements are ranked (their top
    k is reported, for overlap) but left out of the nDCG/recall means. Only the best ``max(k)`` documents of each
    query are kept (:func:`top_rankings`): every metric here looks no deeper.
    """
    if len(query_ids) != len(query_vectors):
        raise ValueError(f"{len(query_ids)} query ids but {len(query_vectors)} query vectors")
    if len(doc_ids) != len(doc_vectors):
        raise ValueError(f"{len(doc_ids)} document ids but {len(doc_vectors)} document vectors")
    doc_vectors, query_vectors = np.asarray(doc_vectors), np.asarray(query_vectors)
    if doc_vectors.ndim != 2 or query_vectors.ndim != 2:
        raise ValueError(f"expected 2-D arrays, got docs {doc_vectors.shape} and queries {query_vectors.shape}")
    if doc_vectors.shape[1] != query_vectors.shape[1]:
        raise ValueError(f"dimensions differ: documents {doc_vectors.shape[1]}, queries {query_vectors.shape[1]}")
    depth = max(ndcg_k, recall_k, overlap_k, max(AGREEMENT_K))
    rankings, scores = top_rankings(doc_vectors, query_vectors, depth)
    position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    per_query: dict[str, dict[str, Any]] = {}
    for row, query_id in enumerate(query_ids):
        ranking = rankings[row]
        judged_docs = {position[d]: g for d, g in (qrels.get(query_id) or {}).items() if d in position}
        judged = any(g > 0 for g in judged_docs.values())
        grades = np.zeros(len(doc_ids))
        if judged:
            grades[list(judged_docs)] = list(judged_docs.values())
        per_query[query_id] = {
            "ndcg_at_10": ndcg_at_k(ranking, grades, ndcg_k) if judged else None,
            "recall_at_5": recall_at_k(ranking, grades, recall_k) if judged else None,
            "top5": [doc_ids[i] for i in ranking[:overlap_k]],
            "top10": [doc_ids[i] for i in ranking[:max(AGREEMENT_K)]],
            "top1_score": float(scores[row, 0]),
        }
    judged_rows = [r for r in per_query.values() if r["ndcg_at_10"] is not None]
    return {
        "ndcg_at_10": _mean([r["ndcg_at_10"] for r in judged_rows]),
        "recall_at_5": _mean([r["recall_at_5"] for r in judged_rows]),
        "queries": len(query_ids),
        "judged_queries": len(judged_rows),
        "per_query": per_query,
    }


def overlap_with(reference: dict[str, Any], other: dict[str, Any]) -> tuple[float | None, dict[str, float]]:
    """Mean and per-query Jaccard of ``other``'s top-5 against ``reference``'s (both from ``evaluate``)."""
    per_query = {
        query_id: jaccard(reference["per_query"][query_id]["top5"], row["top5"])
        for query_id, row in other["per_query"].items()
        if query_id in reference["per_query"]
    }
    return _mean(list(per_query.values())), per_query


# --- the summary.json section -----------------------------------------------------------------------------------------
# Which query capture each variant reads (written by embedswap.measure.capture_queries).
QUERY_FILES = {
    "legacy": "query_vectors_server_instruction.npy",
    "naive": "query_vectors_server_instruction.npy",
    "shim": "query_vectors_client_prefixed.npy",
}
METRICS = ("ndcg_at_10", "recall_at_5", "top5_overlap")




def _variant(attempt: Any, target: str, query_file: str, workload: Any, doc_stack: np.ndarray | None,
             reference: dict[str, Any] | None) -> dict[str, Any]:
    """One (documents, queries) pair of captures evaluated; with the overlap against ``reference`` if given."""
    if doc_stack is None:
        return not_measured("no_document_vectors_file", name=target, path=f"{target}/doc_vectors.npy")
    if not attempt.has(f"{target}/{query_file}"):
        return not_measured("no_query_vectors_file", name=target, path=f"{target}/{query_file}")
    queries = attempt.read_array(f"{target}/{query_file}")
    query_ids = [q.id for q in workload.queries]
    doc_ids = [d.id for d in workload.documents]
    if queries.ndim != 2 or len(queries) != len(query_ids):
        return not_measured("capture_shape", path=f"{target}/{query_file}", shape=str(queries.shape),
                            expected=f"{len(query_ids)} query vectors")
    if doc_stack.ndim != 3 or doc_stack.shape[1] != len(doc_ids):
        return not_measured("capture_shape", path=f"{target}/doc_vectors.npy", shape=str(doc_stack.shape),
                            expected=f"(repeat, {len(doc_ids)}, dim)")
    if doc_stack.shape[2] != queries.shape[1]:
        return not_measured("query_dimensions_differ", name=target, documents=doc_stack.shape[2],
                            queries=queries.shape[1])
    result = evaluate(doc_stack[0], queries, query_ids, doc_ids, workload.qrels)
    if reference is None:
        overlap, per_query_overlap = 1.0, {q: 1.0 for q in result["per_query"]}
    else:
        overlap, per_query_overlap = overlap_with(reference, result)
    for query_id, value in per_query_overlap.items():
        result["per_query"][query_id]["top5_overlap"] = value
    return {
        "measured": True,
        "judged": bool(result["judged_queries"]),
        "agreement": agreement(reference, result) if reference is not None else None,
        "ndcg_at_10": result["ndcg_at_10"],
        "recall_at_5": result["recall_at_5"],
        "top5_overlap": overlap,
        "queries": result["queries"],
        "judged_queries": result["judged_queries"],
        "per_query": result["per_query"],
        "source": {"documents": f"captures/{target}/doc_vectors.npy[0]", "queries": f"captures/{target}/{query_file}"},
    }


def _deltas(legacy: dict[str, Any], variant: dict[str, Any]) -> dict[str, float | None]:
    if not (legacy.get("measured") and variant.get("measured")):
        return {m: None for m in ("ndcg_at_10", "recall_at_5")}
    return {m: None if legacy[m] is None or variant[m] is None else variant[m] - legacy[m]
            for m in ("ndcg_at_10", "recall_at_5")}


def _doc_stack(attempt: Any, target: str) -> np.ndarray | None:
    if not attempt.has(f"{target}/doc_vectors.npy"):
        return None
    return attempt.read_array(f"{target}/doc_vectors.npy", mmap=True)


def ranking_section(experiment: Any, attempt: Any, workload: Any) -> dict[str, Any]:
    """summary.json's ``ranking``: legacy, candidate naive and candidate with the shim fix, from captures only.

    Keys (primary candidate = ``experiment.candidates[0]``): ``legacy``, ``candidate_naive``, ``candidate_shim``
    (each ``{measured, ndcg_at_10, recall_at_5, top5_overlap, per_query, source}``), ``deltas`` (candidate minus
    legacy, for ``candidate_naive`` and ``candidate_shim``), ``by_candidate`` (the same for every candidate), and
    ``definitions``. Without queries/judgements or without the captures: ``{"measured": False, "why": ...}``.
    """
    if not workload.queries:
        return not_measured("no_queries")
    legacy_name = experiment.legacy
    legacy = _variant(attempt, legacy_name, QUERY_FILES["legacy"], workload, _doc_stack(attempt, legacy_name), None)
    if not legacy["measured"]:
        return {k: legacy[k] for k in ("measured", "why", "reason") if k in legacy}
    by_candidate: dict[str, Any] = {}
    for name in experiment.candidates:
        stack = _doc_stack(attempt, name)
        naive = _variant(attempt, name, QUERY_FILES["naive"], workload, stack, legacy)
        shim = _variant(attempt, name, QUERY_FILES["shim"], workload, stack, legacy)
        by_candidate[name] = {
            "measured": bool(naive["measured"] or shim["measured"]),
            "naive": naive,
            "shim": shim,
            "deltas": {"naive": _deltas(legacy, naive), "shim": _deltas(legacy, shim)},
        }
    primary = by_candidate[experiment.primary_candidate]
    if not primary["measured"]:
        missing = primary["naive"] if primary["naive"].get("why") else primary["shim"]
        if not missing.get("why"):
            return not_measured("candidate_not_captured")
        return {k: missing[k] for k in ("measured", "why", "reason") if k in missing}
    return {
        "measured": True,
        "judged": bool(workload.qrels),  # without qrels: agreement with the legacy ranking only, no nDCG/recall
        **({} if workload.qrels else {"judged_why": not_measured("no_qrels")}),
        "legacy": legacy,
        "candidate_naive": primary["naive"],
        "candidate_shim": primary["shim"],
        "deltas": {"candidate_naive": primary["deltas"]["naive"], "candidate_shim": primary["deltas"]["shim"]},
        "by_candidate": by_candidate,
        "definitions": {
            "ndcg_at_10": "graded nDCG@10, trec_eval's convention: linear gain rel (2/1/0), discount log2(rank+1), "
                          "ideal from the judgements; ties in document order",
            "gain": GAIN,
            "recall_at_5": "share of relevant documents (grade >= 1) in the top 5",
            "agreement": "judgement-free agreement with the legacy ranking per query: top-k overlap |A∩B|/k at "
                         "k = 1, 5, 10, extrapolated rank-biased overlap at depth 10 (p = 0.9), top-1 changed "
                         "(share of queries); means with 95 % bootstrap intervals over queries",
            "top5_overlap": "Jaccard index of the top-5 set against the legacy server's top 5, mean over queries",
            "legacy": "legacy documents + queries sent with input_type 'query' (the legacy server adds the prompt)",
            "candidate_naive": "candidate documents + the same queries with input_type 'query' (address swap only)",
            "candidate_shim": "candidate documents + queries prefixed with the prompt by the client (the shim fix)",
        },
    }
