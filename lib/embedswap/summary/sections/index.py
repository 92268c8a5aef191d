"""summary.json's ``index`` section: the searches step 03 ran on the vector store (``captures/index/searches.json``)
scored per query, and the Procrustes adapter fitted and searched on the captured vectors. Verdicts and the decision
are in :mod:`embedswap.analysis.index_decision`."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.index.adapter import adapter_searches
from embedswap.index.names import CAPTURE
from embedswap.summary.sections.index_options import options_section
from embedswap.ranking.metrics import (
    OVERLAP_K,
    RECALL_K,
    jaccard,
    ndcg_at_k,
    recall_at_k,
)
from embedswap.reasons import not_measured


def grades(workload: Any, rows: np.ndarray | None = None) -> np.ndarray:
    """(queries, documents) relevance grades in the workload's order, of the queries at ``rows`` only (all when
    None): at corpus scale the whole workload's matrix (2,000 queries x 100,000 documents) would be 1.6 GB, the
    searched sample's a quarter of it."""
    position = {d.id: i for i, d in enumerate(workload.documents)}
    picked = [workload.queries[i] for i in (range(len(workload.queries)) if rows is None else rows)]
    out = np.zeros((len(picked), len(workload.documents)))
    for row, query in enumerate(picked):
        for doc_id, grade in (workload.qrels.get(query.id) or {}).items():
            if doc_id in position:
                out[row, position[doc_id]] = grade
    return out


def _clean(ids: list[int]) -> np.ndarray:
    return np.asarray([i for i in ids if i >= 0], dtype=np.int64)


def _none(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def score(found: list[list[int]], relevance: np.ndarray, judged: np.ndarray) -> dict[str, list[float | None]]:
    """Per-query nDCG@10 and recall@5 of the top-k lists (None for a query without a relevant document)."""
    ndcg, recall = [], []
    for row, ids in enumerate(found):
        ranking = _clean(ids)
        if not judged[row]:
            ndcg.append(None)
            recall.append(None)
            continue
        ndcg.append(_none(ndcg_at_k(ranking, relevance[row])))
        recall.append(_none(recall_at_k(ranking, relevance[row], RECALL_K)))
    return {"ndcg_at_10": ndcg, "recall_at_5": recall}


def overlaps(found: list[list[int]], reference: list[list[int]]) -> list[float | None]:
    return [_none(jaccard(_clean(a)[:OVERLAP_K].tolist(), _clean(b)[:OVERLAP_K].tolist()))
            for a, b in zip(found, reference, strict=True)]


def hnsw_recall(approx: list[list[int]], exact: list[list[int]]) -> list[float]:
    out = []
    for a, b in zip(approx, exact, strict=True):
        want = set(_clean(b).tolist())
        out.append(len(set(_clean(a).tolist()) & want) / len(want) if want else 1.0)
    return out


def _cells(entry: dict[str, Any], relevance: np.ndarray, judged: np.ndarray) -> list[dict[str, Any]]:
    shares = sorted(entry["shares"].values(), key=lambda s: s["share"])
    reference = shares[0]["legacy"]  # share 0, legacy queries: the legacy-only search
    cells = []
    for share in shares:
        for source in ("legacy", "candidate"):
            for method in ("exact", "hnsw"):
                found = share[source].get(method)
                if found is None:
                    continue
                cell = {"queries": source, "share": share["share"], "method": method,
                        **score(found, relevance, judged),
                        "top5_overlap": overlaps(found, reference[method])}
                if method == "hnsw":
                    cell["hnsw_recall"] = hnsw_recall(found, share[source]["exact"])
                cells.append(cell)
    return cells


def _distances(entry: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for distance, sides in entry["by_distance"].items():
        reference = sides["legacy"]["legacy"]
        out.append({"distance": distance, "cross_overlap": overlaps(sides["legacy"]["candidate"], reference),
                    "full_overlap": overlaps(sides["candidate"]["candidate"], reference)})
    return out


def _adapter(docs: dict[str, np.ndarray], queries: dict[str, np.ndarray], config: Any, relevance: np.ndarray,
             judged: np.ndarray) -> dict[str, Any]:
    got = adapter_searches(docs["legacy"], docs["candidate"], queries["candidate"], queries["legacy"],
                           config.distance, config.k, config.adapter_train_share, config.seed)
    test = np.asarray(got["test"])
    # a query counts where a held-out document is relevant to it
    held = relevance[:, test].max(axis=1) > 0 if relevance.size else np.zeros(len(judged), bool)
    basis = "ndcg_at_10" if held.any() else "top5_overlap"
    per_query: dict[str, list[float | None]] = {}
    masked = None
    if basis == "ndcg_at_10":  # once for the four searches: a (queries, documents) matrix at corpus scale
        masked = np.zeros_like(relevance)
        masked[:, test] = relevance[:, test]
    for name, found in got["searches"].items():
        if masked is not None:
            per_query[name] = score(found, masked, held)["ndcg_at_10"]
        else:
            per_query[name] = overlaps(found, got["searches"]["full"])
    return {"identity": got["identity"], "from_identity": got["from_identity"], "train_docs": len(got["train"]),
            "test_docs": len(test), "residual_train": got["residual_train"], "residual_test": got["residual_test"],
            "residual_unmapped": got["residual_unmapped"], "basis": basis, "per_query": per_query}


def _norm_ratio(legacy: np.ndarray, candidate: np.ndarray) -> dict[str, float]:
    a = np.linalg.norm(np.asarray(candidate, dtype=np.float64), axis=1)
    b = np.linalg.norm(np.asarray(legacy, dtype=np.float64), axis=1)
    ratio = a / np.where(b == 0, 1.0, b)
    return {"min": float(ratio.min()), "median": float(np.median(ratio)), "max": float(ratio.max())}


def score_candidate(entry: dict[str, Any], docs: dict[str, np.ndarray], queries: dict[str, np.ndarray],
                    config: Any, relevance: np.ndarray) -> dict[str, Any]:
    """One candidate's measured searches (``entry`` of the capture) scored, with the adapter fitted on its
    vectors (``docs``/``queries`` keyed legacy, candidate); ``relevance``: (queries, documents) grades."""
    judged = relevance.max(axis=1) > 0 if relevance.size else np.zeros(len(queries["legacy"]), bool)
    return {"measured": True, "dims": int(docs["legacy"].shape[1]),
            "cells": _cells(entry, relevance, judged), "distances": _distances(entry),
            "adapter": _adapter(docs, queries, config, relevance, judged),
            "norm_ratio": _norm_ratio(docs["legacy"], docs["candidate"]),
            "seconds": entry.get("seconds") or {}}


def index_section(experiment: Any, attempt: Any, workload: Any) -> dict[str, Any]:
    """summary.json's ``index``: per candidate, every grid cell per query, the distance checks and the adapter."""
    if not experiment.index.enabled:
        return not_measured("index_off")
    if not attempt.has(CAPTURE):
        return not_measured("index_not_run")
    capture = attempt.read_json(CAPTURE)
    if not capture.get("measured"):
        return {k: capture[k] for k in ("measured", "why", "reason") if k in capture}
    rows = np.asarray(capture.get("query_rows", range(len(workload.queries))), dtype=np.int64)
    relevance = grades(workload, rows)
    judged = relevance.max(axis=1) > 0 if relevance.size else np.zeros(len(rows), bool)
    files = capture.get("queries") or {}
    legacy = experiment.legacy
    by_candidate: dict[str, Any] = {}
    for name, entry in capture["by_candidate"].items():
        if not entry.get("measured"):
            by_candidate[name] = {k: entry[k] for k in ("measured", "why", "reason") if k in entry}
            continue
        docs = {"legacy": attempt.read_array(f"{legacy}/doc_vectors.npy", mmap=True)[0],
                "candidate": attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0]}
        # each candidate's own query file (its derived shim's); a capture without them names the primary's only
        mine = (files.get("by_candidate") or {}).get(name) or files.get("candidate")
        queries = {"legacy": attempt.read_array(f"{legacy}/{files.get('legacy')}")[rows],
                   "candidate": (attempt.read_array(f"{name}/{mine}")
                                 if attempt.has(f"{name}/{mine}")
                                 else attempt.read_array(f"{name}/{files.get('legacy')}"))[rows]}
        by_candidate[name] = score_candidate(entry, docs, queries, experiment.index, relevance)
    return {"measured": True, "distance": capture["distance"], "k": capture["k"], "ef_search": capture["ef_search"],
            "shares": capture["shares"], "hnsw_plan": capture.get("hnsw_plan"),
            "seed": capture["seed"], "judged": bool(judged.any()),
            "queries": len(rows), "store": capture.get("store"), "by_candidate": by_candidate,
            "options": options_section(capture, relevance)}
