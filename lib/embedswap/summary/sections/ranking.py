"""summary.json's ``ranking`` section: legacy, candidate naive and candidate with the shim fix, evaluated from
the captures only (the metrics are in ``ranking.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.ranking.metrics import GAIN, evaluate, overlap_with
from embedswap.ranking.agreement import agreement
from embedswap.reasons import not_measured
from embedswap.shim.settings import shim_query_file

# Which query capture each variant reads (written by embedswap.measure.capture.capture_queries).
QUERY_FILES = {
    "legacy": "query_vectors_server_instruction.npy",
    "naive": "query_vectors_server_instruction.npy",
    "shim": "query_vectors_client_prefixed.npy",
}
METRICS = ("ndcg_at_10", "recall_at_5", "mrr_at_10", "top5_overlap")
DELTAS = ("ndcg_at_10", "recall_at_5", "mrr_at_10")  # variant - legacy, per judged metric


def shim_queries(attempt: Any, name: str) -> str:
    """The query capture of a candidate behind its derived shim (``shim.settings.shim_query_file``)."""
    path = f"{name}/shim_config.json"
    return shim_query_file(attempt.read_json(path) if attempt.has(path) else None)




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
    for query in workload.queries:  # the language slices of the ranking verdicts (analysis.slices)
        if query.id in result["per_query"]:
            result["per_query"][query.id] = {"lang": query.lang, **result["per_query"][query.id]}
    return {
        "measured": True,
        "judged": bool(result["judged_queries"]),
        "agreement": agreement(reference, result) if reference is not None else None,
        "ndcg_at_10": result["ndcg_at_10"],
        "recall_at_5": result["recall_at_5"],
        "mrr_at_10": result["mrr_at_10"],
        "top5_overlap": overlap,
        "queries": result["queries"],
        "judged_queries": result["judged_queries"],
        "per_query": result["per_query"],
        "source": {"documents": f"captures/{target}/doc_vectors.npy[0]", "queries": f"captures/{target}/{query_file}"},
    }


def _deltas(legacy: dict[str, Any], variant: dict[str, Any]) -> dict[str, float | None]:
    if not (legacy.get("measured") and variant.get("measured")):
        return {m: None for m in DELTAS}
    return {m: None if legacy[m] is None or variant[m] is None else variant[m] - legacy[m] for m in DELTAS}


def _doc_stack(attempt: Any, target: str) -> np.ndarray | None:
    if not attempt.has(f"{target}/doc_vectors.npy"):
        return None
    return attempt.read_array(f"{target}/doc_vectors.npy", mmap=True)


def ranking_section(experiment: Any, attempt: Any, workload: Any) -> dict[str, Any]:
    """summary.json's ``ranking``: legacy, candidate naive and candidate with the shim fix, from captures only.

    Keys (primary candidate = ``experiment.candidates[0]``): ``legacy``, ``candidate_naive``, ``candidate_shim``
    (each ``{measured, ndcg_at_10, recall_at_5, mrr_at_10, top5_overlap, per_query, source}``), ``deltas``
    (candidate minus legacy, for ``candidate_naive`` and ``candidate_shim``), ``by_candidate`` (the same for every
    candidate), and ``definitions``. Without queries/judgements or without the captures: ``{"measured": False, "why": ...}``.
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
        shim = _variant(attempt, name, shim_queries(attempt, name), workload, stack, legacy)
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
            "mrr_at_10": "reciprocal rank of the first relevant document (grade >= 1) in the top 10, 0 when none is "
                         "there (trec_eval's recip_rank on the top 10)",
            "agreement": "judgement-free agreement with the legacy ranking per query: top-k overlap |A∩B|/k at "
                         "k = 1, 5, 10, extrapolated rank-biased overlap at depth 10 (p = 0.9), top-1 changed "
                         "(share of queries); means with 95 % bootstrap intervals over queries",
            "top5_overlap": "Jaccard index of the top-5 set against the legacy server's top 5, mean over queries",
            "legacy": "legacy documents + queries sent with input_type 'query' (the legacy server adds the prompt)",
            "candidate_naive": "candidate documents + the same queries with input_type 'query' (address swap only)",
            "candidate_shim": "candidate documents + queries prefixed with the prompt by the client (the shim fix)",
        },
    }
