"""ranking.py's judgement-free agreement and its guards (issue 20), as the mutation run on the merged module
(scripts/mutation.py, session `ranking`, 2026-12-02) found them unchecked. Expected values worked out by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

from embedswap.ranking.agreement import _mean_with_interval, agreement, rbo
from embedswap.ranking.metrics import cosine_scores, evaluate


def rankings(**tops: list[str]) -> dict:
    return {"per_query": {q: {"top10": top} for q, top in tops.items()}}


def test_top1_changed_whichever_id_sorts_first() -> None:
    reference = rankings(q1=["b", "a"], q2=["a", "b"])
    other = rankings(q1=["a", "b"], q2=["b", "a"])
    result = agreement(reference, other)
    assert {q: r["top1_changed"] for q, r in result["per_query"].items()} == {"q1": 1.0, "q2": 1.0}
    assert result["top1_changed"]["mean"] == 1.0


def test_a_query_missing_from_the_reference_is_skipped_not_the_end() -> None:
    reference = rankings(q2=["a", "b"], q3=["a", "b"])
    other = rankings(q1=["a", "b"], q2=["a", "b"], q3=["b", "a"])  # q1 first: no reference ranking for it
    result = agreement(reference, other)
    assert result["queries"] == 2 and sorted(result["per_query"]) == ["q2", "q3"]
    assert result["top1_changed"]["mean"] == 0.5


def test_two_different_values_get_an_interval_not_a_point() -> None:
    two = _mean_with_interval([0.0, 1.0])
    assert two["mean"] == 0.5 and two["n"] == 2
    assert two["low"] < two["high"]
    one = _mean_with_interval([0.25])
    assert one == {"mean": 0.25, "low": 0.25, "high": 0.25, "n": 1}


def test_equal_wide_dimensions_are_equal() -> None:
    """Dimensions above CPython's small-int cache (here 300) compare by value, not by identity."""
    rng = np.random.default_rng(3)
    docs, queries = rng.normal(size=(4, 300)), rng.normal(size=(2, 300))
    scores = cosine_scores(docs, queries)
    assert scores.shape == (2, 4)
    result = evaluate(docs, queries, ["q1", "q2"], ["d1", "d2", "d3", "d4"], {})
    best = [f"d{int(i) + 1}" for i in np.argmax(scores, axis=1)]
    assert [result["per_query"][q]["top10"][0] for q in ("q1", "q2")] == best


def test_rbo_with_partial_overlap_at_the_depth() -> None:
    # a = 1 2 3, b = 1 4 2, p = 0.9. Depth 1: overlap 1, sum 1/1 * 0.9 = 0.9. Depth 2: 2 and 4 not yet seen on the
    # other side, overlap 1, sum += 1/2 * 0.81. Depth 3: 2 was seen in a, overlap 2, sum += 2/3 * 0.729.
    # RBO_ext = 2/3 * 0.729 + (0.1 / 0.9) * (0.9 + 0.405 + 0.486) = 0.486 + 0.199 = 0.685
    assert rbo([1, 2, 3], [1, 4, 2], p=0.9) == pytest.approx(0.486 + 1.791 / 9)


def test_rbo_compares_ids_by_value() -> None:
    # ids read from two JSON files are equal strings, not the same objects
    a = json.loads('["doc-1", "doc-2", "doc-3"]')
    b = json.loads('["doc-1", "doc-2", "doc-3"]')
    assert a[0] is not b[0]
    assert rbo(a, b) == pytest.approx(1.0)


def test_a_constant_metric_over_several_queries_has_no_spread() -> None:
    assert _mean_with_interval([0.5, 0.5, 0.5]) == {"mean": 0.5, "low": 0.5, "high": 0.5, "n": 3}
