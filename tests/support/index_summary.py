"""A summary that draws the index section and its figure: two candidates on an inner-product index, one whose
queries rank as the legacy server's (keep the index), one whose queries rank worse (re-embed). Used by
tests/index/test_index_report.py and the figures' language test."""

from __future__ import annotations

import copy
from typing import Any

from embedswap.analysis import decide, decisions_json
from embedswap.summary.model import validate_body


def _cells(cross: list[float], full: list[float], n: int) -> list[dict[str, Any]]:
    cells = []
    for method in ("exact", "hnsw"):
        for queries, share, values in (("legacy", 0.0, [0.5] * n), ("candidate", 0.0, cross),
                                       ("candidate", 0.5, [(a + b) / 2 for a, b in zip(cross, full, strict=True)]),
                                       ("candidate", 1.0, full), ("legacy", 1.0, [0.5] * n)):
            cells.append({"queries": queries, "share": share, "method": method, "ndcg_at_10": values,
                          "recall_at_5": values, "top5_overlap": [1.0 if values is full else 0.6] * n,
                          "hnsw_recall": [0.98] * n if method == "hnsw" else []})
    return cells


def _candidate(cross: list[float], full: list[float], *, ip_changes: bool) -> dict[str, Any]:
    n = len(cross)
    return {"measured": True, "dims": 384, "cells": _cells(cross, full, n),
            "distances": [{"distance": d, "cross_overlap": [1.0] * n,
                           "full_overlap": [0.4] * n if ip_changes and d != "cosine" else [1.0] * n}
                          for d in ("cosine", "inner_product", "l2")],
            "adapter": {"identity": False, "from_identity": 0.3, "train_docs": 20, "test_docs": 20,
                        "residual_train": 0.1, "residual_test": 0.2, "residual_unmapped": 0.9, "basis": "ndcg_at_10",
                        "per_query": {"legacy": [0.5] * n, "cross": cross, "adapter": cross, "full": full}}}


def summary_with_index(complete_upgraded: dict[str, Any]) -> dict[str, Any]:
    """The complete summary with an index part: vllm keeps the index, dynamo re-embeds it."""
    summary = copy.deepcopy(complete_upgraded)
    n = 30
    same = [0.5 + 0.001 * (i % 3) for i in range(n)]
    worse = [0.2 + 0.01 * (i % 5) for i in range(n)]
    summary["experiment"]["config"]["index"] = {"distance": "inner_product", "corpus_size": 2_000_000,
                                                "window_hours": 8}
    summary["index"] = {
        "measured": True, "distance": "inner_product", "k": 10, "ef_search": 40, "shares": [0, 0.5, 1], "seed": 0,
        "judged": True, "queries": n,
        "store": {"kind": "embedded", "server_version": "18.4", "pgvector_version": "0.8.5"},
        "by_candidate": {"vllm": _candidate(same, same, ip_changes=True),
                         "dynamo": _candidate(worse, same, ip_changes=False)}}
    summary["decisions"] = decisions_json(decide(validate_body(summary)))
    return summary
