"""embedswap.stats.vectors with hand-made inputs (issue 23: mutants of token_total / index_order_ok / compare survived the
property tests alone)."""

from __future__ import annotations

import numpy as np
import pytest

from embedswap.stats.vectors import compare, index_order_ok, norms, repeat_stability, spread, token_total


def req(repeat: int, tokens: int | None, status: int = 200) -> dict:
    return {"repeat": repeat, "prompt_tokens": tokens, "status": status}


def test_token_total_counts_the_first_repeat_only() -> None:
    assert token_total([req(0, 10), req(0, 5), req(1, 100), req(2, 1000)]) == 15
    assert token_total([req(1, 10)]) is None  # no first repeat
    assert token_total([]) is None
    assert token_total([req(0, 10), req(0, None)]) is None  # a batch without usage
    assert token_total([req(0, 10), req(0, 5, status=500)]) is None  # a failed batch
    assert token_total([req(0, 10), req(1, 5, status=500)]) == 10  # a later repeat's failure does not count


def test_index_order() -> None:
    ok = {"status": 200, "n_vectors": 3, "indices": [0, 1, 2]}
    assert index_order_ok([ok, {"status": 500, "indices": None}]) is True  # failed requests carry no order
    assert index_order_ok([ok, {"status": 200, "n_vectors": 2, "indices": [1, 0]}]) is False
    assert index_order_ok([{"status": 200, "n_vectors": 3, "indices": [0, 1]}]) is False
    assert index_order_ok([{"status": 200, "n_vectors": None, "indices": []}]) is True


def test_compare_by_hand() -> None:
    legacy = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    candidate = np.array([[1.0, 0.0], [1.0, 1.0], [2.0, 2.0]])  # cosines 1, 1/sqrt(2), 1
    out = compare(legacy, candidate, ["en", "ko", "en"], ["a", "b", "c"])
    half = 1 / np.sqrt(2)
    assert out["cosine"] == pytest.approx({"min": half, "median": 1.0, "max": 1.0})
    assert out["by_language"]["en"] == pytest.approx({"min": 1.0, "median": 1.0, "max": 1.0, "n": 2})
    assert out["by_language"]["ko"] == pytest.approx({"min": half, "median": half, "max": half, "n": 1})
    assert [w["doc_id"] for w in out["worst"]][0] == "b" and len(out["worst"]) == 3
    assert out["per_document"][1] == {"doc_id": "b", "lang": "ko", "cosine": pytest.approx(half)}


def test_spread_norms_and_repeats_by_hand() -> None:
    assert spread([]) == {"min": None, "median": None, "max": None}
    assert spread([3.0, 1.0, 2.0, 10.0]) == {"min": 1.0, "median": 2.5, "max": 10.0}
    out = norms(np.array([[3.0, 4.0], [0.6, 0.8], [1.0005, 0.0]]))
    assert out["first"] == 5.0 and out["not_unit_length"] == [0]  # 1.0005 is within the 1e-3 tolerance
    assert norms(np.array([[1.0011, 0.0]]))["not_unit_length"] == [0]
    one = np.array([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]]])
    assert repeat_stability(one) == pytest.approx(0.0)
    assert repeat_stability(one[:2]) == pytest.approx(1.0)
    assert repeat_stability(one[:1]) is None and repeat_stability(one[0]) is None


def test_shapes_that_numpy_would_broadcast_are_refused() -> None:
    from embedswap.stats.vectors import rowwise_cosine

    with pytest.raises(ValueError, match=r"cannot compare vectors of shapes \(1, 3\) and \(4, 3\)"):
        rowwise_cosine(np.ones((1, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="cannot compare vectors of shapes"):
        rowwise_cosine(np.ones((4, 3)), np.ones((1, 3)))


def test_a_dead_servers_batch_has_no_token_total() -> None:
    assert token_total([req(0, 10), req(0, 5, status=0)]) is None  # status 0: no answer at all
    assert token_total([req(0, 10), req(0, 5, status=204)]) is None
