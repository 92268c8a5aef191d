"""The report's "What happens to your index" in every language, from a summary carrying an index section (the
decisions computed as a run computes them), and the figure."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from embedswap.analysis import decide, decisions_json
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.figures_index import index_shares
from embedswap.report.markdown import render_markdown
from embedswap.summary.model import validate_body

HEADINGS = {"en": "### What happens to your index", "ko": "### 인덱스는 어떻게 되는가",
            "ja": "### インデックスはどうなるか", "zh": "### 你的索引会怎样"}


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


@pytest.fixture
def with_index(complete_upgraded: dict[str, Any]) -> dict[str, Any]:
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


def test_decisions_of_the_section(with_index: dict[str, Any]) -> None:
    decided = with_index["decisions"]["index"]
    assert decided["vllm"]["code"] == "keep_index" and decided["vllm"]["length"] == "length_only"
    assert decided["vllm"]["advice"] == "use_cosine_or_renormalise"
    assert decided["dynamo"]["code"] == "re_embed"
    # the complete fixture's measured throughput gives the cost, at the article's point
    cost = decided["dynamo"]["cost"]
    assert cost is not None and cost["point"] == "concurrent" and cost["replicas"] >= 1


@pytest.mark.parametrize("lang", LANGUAGES)
def test_section_in_every_language(with_index: dict[str, Any], lang: str) -> None:
    text = render_markdown(with_index, lang)
    part = text[text.index(HEADINGS[lang]):]
    part = part[: part.index("\n## ")]
    assert "`vllm`" in part and "`dynamo`" in part and "18.4" in part and "0.8.5" in part
    assert "{{" not in part and "{%" not in part
    assert part.count("| ---: |") >= 2  # one table per measured candidate
    if lang == "en":
        assert "**`vllm`: keep the index.**" in part and "**`dynamo`: re-embed the index.**" in part
        assert "rebuild it with cosine distance, or have the client re-normalise" in part
        assert "This is an estimate from measured parts" in part and "2,000,000 documents" in part


def test_old_summary_says_the_section_is_absent(complete: dict[str, Any]) -> None:
    text = render_markdown(complete, "en")
    part = text[text.index(HEADINGS["en"]):]
    assert "summary.json has no such section" in part[: part.index("\n## ")]


def test_figure(with_index: dict[str, Any]) -> None:
    assert index_shares(with_index) is not None


def test_mixed_index_worse_is_said(with_index: dict[str, Any]) -> None:
    summary = copy.deepcopy(with_index)
    summary["decisions"]["index"]["dynamo"]["mixed_worse"] = [0.5]
    for lang in LANGUAGES:
        part = render_markdown(summary, lang)
        part = part[part.index(HEADINGS[lang]):]
        assert "50%" in part[: part.index("\n## ")] and "{{" not in part
    assert "an index holding vectors of both servers ranks worse" in render_markdown(summary, "en")
