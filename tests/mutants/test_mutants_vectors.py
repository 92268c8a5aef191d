"""Behaviour of vectors.py that the mutation run (scripts/mutation.py, session `vectors`) found unchecked: answers
of different shapes or none at all give a recorded verdict (never an exception), the five worst documents, languages
read from JSON (equal strings that are not the same object), the non-finite note. Expected values by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

from embedswap.stats.vectors import comparable, compare


def test_two_answers_of_different_row_counts_are_a_verdict_not_an_exception() -> None:
    out = compare(np.ones((2, 3)), np.ones((3, 3)), ["en"] * 2, ["a", "b"])
    assert out["measured"] is False and out["reason"]["code"] == "vector_shapes_differ"
    assert out["reason"]["params"] == {"a": [2, 3], "b": [3, 3]}
    assert comparable(np.ones((2, 4)), np.ones((2, 3)))["reason"]["code"] == "vector_shapes_differ"
    assert comparable(np.ones(3), np.ones(3))["reason"]["code"] == "vector_shapes_differ"  # not rows of vectors
    assert comparable(np.ones((1, 2, 3)), np.ones((1, 2, 3)))["reason"]["code"] == "vector_shapes_differ"
    assert comparable(np.ones((2, 3)), np.ones((2, 3))) is None


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_an_empty_answer_is_named_empty(shape: tuple[int, int]) -> None:
    out = compare(np.ones(shape), np.ones(shape), ["en"] * shape[0], [str(i) for i in range(shape[0])])
    assert out["measured"] is False and out["reason"]["code"] == "vectors_empty"
    assert out["reason"]["params"] == {"legacy": list(shape), "candidate": list(shape)}


def test_the_five_worst_documents_lowest_first() -> None:
    legacy = np.tile([1.0, 0.0], (7, 1))
    angles = np.array([0.0, 0.6, 0.1, 0.5, 0.2, 0.4, 0.3])
    candidate = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    ids = list("abcdefg")
    out = compare(legacy, candidate, ["en"] * 7, ids)
    assert [w["doc_id"] for w in out["worst"]] == ["b", "d", "f", "g", "e"]
    assert out["worst"][0]["cosine"] == pytest.approx(np.cos(0.6))


def test_languages_read_from_json_are_grouped_by_value() -> None:
    # json.loads gives each "ko" its own string object: grouping must compare values, not identity
    langs = json.loads('["ko", "en", "ko", "ko"]')
    legacy = np.array([[1.0, 0.0]] * 4)
    candidate = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    out = compare(legacy, candidate, langs, ["a", "b", "c", "d"])
    half = 1 / np.sqrt(2)
    assert out["by_language"]["ko"] == pytest.approx({"min": half, "median": 1.0, "max": 1.0, "n": 3})
    assert out["by_language"]["en"] == pytest.approx({"min": 0.0, "median": 0.0, "max": 0.0, "n": 1})


def test_non_finite_rows_are_counted_with_their_reason_and_left_out() -> None:
    legacy = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    candidate = np.array([[1.0, 0.0], [np.nan, 0.0], [0.0, 0.0]])
    out = compare(legacy, candidate, ["en", "en", "ko"], ["a", "b", "c"])
    assert out["measured"] is True
    note = out["non_finite"]
    assert set(note) == {"n", "why", "reason"}  # the not-measured note without its measured flag
    assert note["n"] == 2 and note["reason"] == {"code": "vectors_non_finite", "params": {"n": 2, "total": 3}}
    assert out["cosine"] == {"min": 1.0, "median": 1.0, "max": 1.0}
    assert out["by_language"]["ko"] == {"min": None, "median": None, "max": None, "n": 0}
    assert [d["cosine"] for d in out["per_document"]] == [1.0, None, None]
    assert [w["doc_id"] for w in out["worst"]] == ["a"]
    assert compare(legacy, legacy, ["en"] * 3, ["a", "b", "c"])["non_finite"] is None
    dead = compare(legacy, np.zeros((3, 2)), ["en"] * 3, ["a", "b", "c"])
    assert dead["measured"] is False and dead["reason"] == {"code": "vectors_non_finite",
                                                            "params": {"n": 3, "total": 3}}


def test_repeat_stability_compares_every_repeat_with_the_first() -> None:
    from embedswap.stats.vectors import repeat_stability

    e0, e1 = [1.0, 0.0], [0.0, 1.0]
    # repeats 1 and 2 agree with each other, not with repeat 0: the first repeat is the reference
    assert repeat_stability(np.array([[e0], [e1], [e1]])) == pytest.approx(0.0)
    assert repeat_stability(np.array([[e0], [e0], [e1]])) == pytest.approx(0.0)
    # only a stack of (repeats, documents, dim) is read
    assert repeat_stability(np.ones((3, 4))) is None
    assert repeat_stability(np.ones((2, 1, 1, 2))) is None


def test_a_dead_servers_request_carries_no_index_order() -> None:
    from embedswap.stats.vectors import index_order_ok

    assert index_order_ok([{"status": 0, "indices": None, "n_vectors": None}]) is True
    assert index_order_ok([{"status": 100, "indices": None, "n_vectors": None}]) is True
