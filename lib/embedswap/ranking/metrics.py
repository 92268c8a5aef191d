"""Ranking impact: does the swap change what search returns? nDCG@10, recall@5, MRR@10 and top-5 overlap.

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
  gives the ``2**rel - 1`` variant (Burges et al.), which this kit used before. ``tests/ranking/test_ranking.py``
  checks nDCG, recall and MRR against pytrec_eval as an oracle. A query with no relevant document has no defined
  nDCG (``nan``) and is left out of the means.
- **recall@k**: the share of a query's relevant documents found in its top k. *Relevant* means grade >= 1: a
  partially relevant document is still material the retriever should surface, and counting only grade 2 would
  make many queries (one grade-2 document each) all-or-nothing. ``min_relevance=2`` gives the strict variant.
- **MRR@k** (reciprocal rank): ``1 / rank`` of the first relevant document (grade >= 1, as for recall) in the top
  k, 0.0 when none is there; nan without a relevant document, as nDCG. trec_eval's ``recip_rank`` has no cut-off:
  it equals this one on the run cut to the top k. It reads only where the first hit lands, so it is the metric of
  a search that shows one answer (a question-answering box, a "best match" link).
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

from embedswap.ranking.agreement import AGREEMENT_K


NDCG_K = 10
GAIN = "linear"  # trec_eval / MTEB; "exp": 2**rel - 1
RECALL_K = 5
MRR_K = 10
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


def mrr_at_k(scores_or_ranking: Any, qrels: Any, k: int = MRR_K, min_relevance: int = 1) -> float:
    """Reciprocal 1-based rank of the first document with grade >= ``min_relevance`` in the top k; 0.0 when none
    is there, nan without relevant docs."""
    relevant = _relevance(qrels) >= min_relevance
    if not relevant.any():
        return float("nan")
    hits = np.flatnonzero(relevant[ranking_from(scores_or_ranking)[:k]])
    return 1.0 / (int(hits[0]) + 1) if len(hits) else 0.0


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
             overlap_k: int = OVERLAP_K, mrr_k: int = MRR_K) -> dict[str, Any]:
    """Rank the documents for every query by cosine; per-query and mean nDCG@10, recall@5, MRR@10, and the top-k
    ids.

    ``qrels``: query id -> {doc id: grade} (the workload's form). Queries without judgements are ranked (their top
    k is reported, for overlap) but left out of the nDCG/recall/MRR means. Only the best ``max(k)`` documents of each
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
    depth = max(ndcg_k, recall_k, overlap_k, mrr_k, max(AGREEMENT_K))
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
            "mrr_at_10": mrr_at_k(ranking, grades, mrr_k) if judged else None,
            "top5": [doc_ids[i] for i in ranking[:overlap_k]],
            "top10": [doc_ids[i] for i in ranking[:max(AGREEMENT_K)]],
            "top1_score": float(scores[row, 0]),
        }
    judged_rows = [r for r in per_query.values() if r["ndcg_at_10"] is not None]
    return {
        "ndcg_at_10": _mean([r["ndcg_at_10"] for r in judged_rows]),
        "recall_at_5": _mean([r["recall_at_5"] for r in judged_rows]),
        "mrr_at_10": _mean([r["mrr_at_10"] for r in judged_rows]),
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

