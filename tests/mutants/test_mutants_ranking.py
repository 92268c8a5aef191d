"""Behaviour of ranking.py (metrics, the judgement-free agreement, evaluate) that the mutation run
(scripts/mutation.py, session `ranking`) found unchecked. Every expected value is computed by hand in a comment."""
from __future__ import annotations

import math

import numpy as np
import pytest

from embedswap.summary.sections.ranking import _deltas
from embedswap.ranking.metrics import (
    _mean, cosine_scores, dcg, evaluate, jaccard, ndcg_at_k, overlap_with, ranking_from, recall_at_k, top_k,
    top_k_overlap,
)
from embedswap.ranking.agreement import _mean_with_interval, agreement, rbo


def _evaluated(tops: dict[str, list[str]]) -> dict:
    return {"per_query": {q: {"top10": top, "top5": top[:5]} for q, top in tops.items()}}


def test_ranking_from_integers_floats_and_bad_input() -> None:
    assert ranking_from(np.array([2, 0, 1], dtype=np.uint8)).tolist() == [2, 0, 1]  # a ranking already
    assert ranking_from(np.array([2, 0, 1])).dtype == np.int64
    assert ranking_from(np.array([0.1, 0.3, 0.2])).tolist() == [1, 2, 0]  # scores: highest first
    assert ranking_from(np.array([-1.0, -3.0, -2.0])).tolist() == [0, 2, 1]
    assert ranking_from(np.array([False, True])).tolist() == [1, 0]  # booleans are scores
    with pytest.raises(ValueError, match="expected numbers, got dtype <U1"):
        ranking_from(np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"got shape \(1, 2\)"):
        ranking_from([[0.1, 0.2]])
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        ranking_from(0.5)


def test_dcg_by_hand() -> None:
    grades = np.array([3.0, 2.0, 0.0, 1.0])
    # linear: 3/log2(2) + 2/log2(3) + 0 + 1/log2(5) = 3 + 1.2618595 + 0.4306766
    assert dcg(grades) == pytest.approx(3 + 2 / math.log2(3) + 1 / math.log2(5))
    # exp: 7/1 + 3/log2(3) + 0 + 1/log2(5)
    assert dcg(grades, "exp") == pytest.approx(7 + 3 / math.log2(3) + 1 / math.log2(5))
    assert dcg(np.array([])) == 0.0


def test_ndcg_relevance_must_be_one_grade_per_document() -> None:
    with pytest.raises(ValueError, match=r"one relevance grade per document \(1-D\)"):
        ndcg_at_k(np.array([0, 1]), np.array([[1, 0]]))
    with pytest.raises(ValueError, match="gain must be 'linear' or 'exp', got 'square'"):
        ndcg_at_k(np.array([0, 1]), np.array([1, 0]), gain="square")


def test_ndcg_normalises_by_the_ideal_top_k_only() -> None:
    grades = np.array([0, 1, 2, 2])
    # k=2, ranking [1, 0]: DCG = 1/1 + 0 = 1; ideal top 2 = grades 2, 2: 2 + 2/log2(3)
    assert ndcg_at_k(np.array([1, 0, 2, 3]), grades, k=2) == pytest.approx(1 / (2 + 2 / math.log2(3)))
    # the ideal is the best ordering (descending), not the grades as listed
    assert ndcg_at_k(np.array([2, 3, 1, 0]), grades, k=4) == pytest.approx(1.0)
    # a relevant document at rank 1 of 2 with k=1: DCG = IDCG = 2
    assert ndcg_at_k(np.array([3, 2]), grades, k=1) == pytest.approx(1.0)
    assert math.isnan(ndcg_at_k(np.array([0, 1]), np.array([0.0, 0.0]), k=1))


def test_recall_threshold_and_cut() -> None:
    grades = np.array([1, 2, 0, 1])
    assert recall_at_k(np.array([2, 0, 1, 3]), grades, k=2) == pytest.approx(1 / 3)  # d0 only, of d0 d1 d3
    assert recall_at_k(np.array([2, 0, 1, 3]), grades, k=3) == pytest.approx(2 / 3)
    assert recall_at_k(np.array([2, 0, 1, 3]), grades, k=3, min_relevance=2) == pytest.approx(1.0)
    assert recall_at_k(np.array([2, 0, 3, 1]), grades, k=3, min_relevance=2) == 0.0
    assert math.isnan(recall_at_k(np.array([0, 1]), np.array([1, 1]), min_relevance=3))


def test_top_k_and_overlap_edges() -> None:
    assert top_k(np.array([0.1, 0.9, 0.5]), k=2).tolist() == [1, 2]
    assert top_k(np.arange(8)).tolist() == [0, 1, 2, 3, 4]  # five by default
    assert math.isnan(top_k_overlap(np.array([], dtype=int), np.array([], dtype=int)))
    # default k 5: {0..4} vs {1..5}: 4 shared of 6
    assert top_k_overlap(np.arange(7), np.arange(1, 8)) == pytest.approx(4 / 6)
    assert jaccard([], []) != jaccard([], [])  # nan: two empty lists have no overlap to speak of
    assert jaccard(["a"], ["a", "a"]) == 1.0
    assert jaccard(["a", "b", "c"], ["c", "d"]) == pytest.approx(1 / 4)


def test_rbo_against_the_definition_by_hand() -> None:
    assert math.isnan(rbo([], ["a"]))
    # depth 1, p 0.5, same first item: overlap 1 -> 1/1 * 0.5 + (0.5/0.5) * (1/1 * 0.5) = 1.0
    assert rbo(["a"], ["a"], p=0.5) == pytest.approx(1.0)
    # a b c vs a c b, p 0.5: X1 = 1, X2 = 1 (b, c not yet seen by the other), X3 = 3
    #   sum = 1/1*0.5 + 1/2*0.25 + 3/3*0.125 = 0.75; rbo = 3/3*0.125 + 1 * 0.75 = 0.875
    assert rbo(list("abc"), list("acb"), p=0.5) == pytest.approx(0.875)
    # a b c vs c b a, p 0.5: X1 = 0, X2 = 1 (b = b), X3 = 3 -> sum = 0 + 0.125 + 0.125; rbo = 0.125 + 0.25
    assert rbo(list("abc"), list("cba"), p=0.5) == pytest.approx(0.375)
    # the shorter list sets the depth: a b vs a b z -> identical at depth 2
    assert rbo(list("ab"), list("abz"), p=0.5) == pytest.approx(1.0)
    # p 0.9 by default: a b vs b a: X1 = 0, X2 = 2 -> 2/2*0.81 + (0.1/0.9)*(0 + 1*0.81) = 0.9
    assert rbo(["a", "b"], ["b", "a"]) == pytest.approx(0.9)


def test_cosine_scores_normalise_both_sides_and_check_shapes() -> None:
    docs = np.array([[2.0, 0.0], [0.0, 0.0], [3.0, 4.0]])  # a zero document scores 0, not nan
    queries = np.array([[0.0, 5.0]])
    assert cosine_scores(docs, queries).tolist() == [[0.0, 0.0, pytest.approx(0.8)]]
    assert cosine_scores(docs, queries).shape == (1, 3)
    with pytest.raises(ValueError, match=r"expected 2-D arrays, got docs \(2,\) and queries \(1, 2\)"):
        cosine_scores(np.ones(2), queries)
    with pytest.raises(ValueError, match="expected 2-D arrays"):
        cosine_scores(docs, np.ones(2))
    with pytest.raises(ValueError, match="dimensions differ: documents 2, queries 3"):
        cosine_scores(docs, np.ones((1, 3)))
    with pytest.raises(ValueError, match="dimensions differ: documents 2, queries 1"):
        cosine_scores(docs, np.ones((1, 1)))  # either side may be the wider one
    with pytest.raises(ValueError, match=r"expected 2-D arrays, got docs \(3, 2, 1\)"):
        cosine_scores(np.ones((3, 2, 1)), queries)
    with pytest.raises(ValueError, match="expected 2-D arrays"):
        cosine_scores(docs, np.ones((1, 2, 1)))


def test_mean_leaves_out_what_is_not_finite() -> None:
    assert _mean([1.0, float("nan"), 3.0]) == 2.0
    assert _mean([float("nan")]) is None and _mean([]) is None


def test_evaluate_by_hand() -> None:
    docs = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    queries = np.array([[0.0, 2.0], [1.0, 0.0], [1.0, 1.0]])
    qrels = {"qa": {"d0": 1, "nope": 2}, "qb": {"d0": 0}, "qc": {"d1": 2}}
    out = evaluate(docs, queries, ["qa", "qb", "qc"], ["d0", "d1", "d2"], qrels)
    qa, qb, qc = (out["per_query"][q] for q in ("qa", "qb", "qc"))
    # qa: scores 0, 0.8, 1 -> d2, d1, d0; its relevant d0 at rank 3: nDCG = (1/log2(4)) / 1 = 0.5
    assert qa["top5"] == ["d2", "d1", "d0"] and qa["top10"] == ["d2", "d1", "d0"]
    assert qa["ndcg_at_10"] == pytest.approx(0.5) and qa["recall_at_5"] == 1.0
    assert qa["mrr_at_10"] == pytest.approx(1 / 3)
    assert qa["top1_score"] == pytest.approx(1.0)
    # qb: judged 0 only: ranked but not judged
    assert qb["ndcg_at_10"] is None and qb["recall_at_5"] is None and qb["mrr_at_10"] is None and qb["top5"][0] == "d0"
    # qc: (1,1)/sqrt2 -> d1 scores 1.4/sqrt2 = 0.98995, first: nDCG 1
    assert qc["top5"][0] == "d1" and qc["ndcg_at_10"] == pytest.approx(1.0)
    assert qc["top1_score"] == pytest.approx(1.4 / math.sqrt(2))
    assert out["ndcg_at_10"] == pytest.approx(0.75) and out["recall_at_5"] == 1.0
    assert out["mrr_at_10"] == pytest.approx((1 / 3 + 1) / 2)
    assert (out["queries"], out["judged_queries"]) == (3, 2)


def test_evaluate_cuts_and_counts() -> None:
    n = 12
    docs = np.eye(n)
    query = np.arange(n, 0, -1, dtype=float)[None, :]  # d0 best ... d11 worst
    ids = [f"d{i}" for i in range(n)]
    out = evaluate(docs, query, ["q"], ids, {"q": {"d11": 1, "d0": 1}})
    row = out["per_query"]["q"]
    assert row["top5"] == ids[:5] and row["top10"] == ids[:10]
    assert row["recall_at_5"] == 0.5  # d0 found, d11 not
    # nDCG@10: DCG = 1; IDCG = 1 + 1/log2(3)
    assert row["ndcg_at_10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    smaller = evaluate(docs, query, ["q"], ids, {"q": {"d11": 1, "d0": 1}}, ndcg_k=1, recall_k=12, overlap_k=2)
    assert smaller["per_query"]["q"]["top5"] == ["d0", "d1"]
    assert smaller["per_query"]["q"]["recall_at_5"] == 1.0 and smaller["per_query"]["q"]["ndcg_at_10"] == 1.0
    with pytest.raises(ValueError, match="2 query ids but 1 query vectors"):
        evaluate(docs, query, ["q", "r"], ids, {})
    with pytest.raises(ValueError, match="11 document ids but 12 document vectors"):
        evaluate(docs, query, ["q"], ids[:11], {})


def test_overlap_with_the_reference() -> None:
    ref = _evaluated({"q1": list("abcde"), "q2": list("abcde")})
    other = _evaluated({"q1": list("abcxy"), "q2": list("abcde"), "q9": list("abcde")})
    mean, per_query = overlap_with(ref, other)
    assert per_query == {"q1": pytest.approx(3 / 7), "q2": 1.0}  # q9 has no reference: left out
    assert mean == pytest.approx((3 / 7 + 1) / 2)


def test_deltas_are_candidate_minus_legacy() -> None:
    legacy = {"measured": True, "ndcg_at_10": 0.5, "recall_at_5": None, "mrr_at_10": 1.0}
    variant = {"measured": True, "ndcg_at_10": 0.75, "recall_at_5": 0.4, "mrr_at_10": 0.5}
    none = {"ndcg_at_10": None, "recall_at_5": None, "mrr_at_10": None}
    assert _deltas(legacy, variant) == {"ndcg_at_10": 0.25, "recall_at_5": None, "mrr_at_10": -0.5}
    assert _deltas(variant, legacy) == {"ndcg_at_10": -0.25, "recall_at_5": None, "mrr_at_10": 0.5}
    assert _deltas({**legacy, "measured": False}, variant) == none
    assert _deltas(legacy, {**variant, "measured": False}) == none
    assert _deltas(legacy, {**variant, "ndcg_at_10": None})["ndcg_at_10"] is None


# the bootstrap (scipy, 2,000 resamples) is the slowest part: last, so most mutants fail before it
def test_agreement_per_query_by_hand() -> None:
    ref = _evaluated({"q1": list("abcdefghij"), "q2": list("abcdefghij"), "q3": list("abc")})
    other = _evaluated({"q1": list("abcdefghij"),  # the same
                        "q2": list("bacdexyzuv"),  # top 1 changed; top 5 the same set; 5 of 10 shared
                        "q3": list("cab"),         # a corpus of 3: overlap over the whole ranking
                        "q4": list("abc")})        # not in the reference: left out
    out = agreement(ref, other)
    assert out["queries"] == 3 and out["k"] == [1, 5, 10] and out["rbo_p"] == 0.9
    q1, q2, q3 = (out["per_query"][q] for q in ("q1", "q2", "q3"))
    assert q1 == {"overlap_at_1": 1.0, "overlap_at_5": 1.0, "overlap_at_10": 1.0, "rbo": pytest.approx(1.0),
                  "top1_changed": 0.0}
    assert (q2["overlap_at_1"], q2["overlap_at_5"], q2["overlap_at_10"], q2["top1_changed"]) == (0.0, 1.0, 0.5, 1.0)
    assert 0.0 < q2["rbo"] < 1.0
    # depth 3: overlap@5 = |{a,b,c} ∩ {c,a,b}| / min(5, 3) = 1; overlap@1 = {a} vs {c} = 0
    assert (q3["overlap_at_1"], q3["overlap_at_5"], q3["overlap_at_10"], q3["top1_changed"]) == (0.0, 1.0, 1.0, 1.0)
    assert out["overlap_at_10"]["mean"] == pytest.approx(2.5 / 3) and out["overlap_at_10"]["n"] == 3
    assert out["top1_changed"]["mean"] == pytest.approx(2 / 3)
    assert "q4" not in out["per_query"]


def test_agreement_skips_queries_without_a_ranking_on_either_side() -> None:
    ref = {"per_query": {"q1": {"top10": ["a"]}, "q2": {"top10": []}, "q3": None}}
    other = _evaluated({"q1": ["a"], "q2": ["a"], "q3": ["a"]})
    other["per_query"]["q4"] = {"top10": None}
    out = agreement(ref, other)
    assert list(out["per_query"]) == ["q1"] and out["queries"] == 1
    empty = agreement(ref, {"per_query": {}})
    assert empty["queries"] == 0 and empty["rbo"] == {"mean": None, "low": None, "high": None, "n": 0}


def test_mean_with_interval() -> None:
    assert _mean_with_interval([0.25]) == {"mean": 0.25, "low": 0.25, "high": 0.25, "n": 1}
    assert _mean_with_interval([0.5, 0.5, 0.5]) == {"mean": 0.5, "low": 0.5, "high": 0.5, "n": 3}
    out = _mean_with_interval([0.0, 1.0] * 10)
    assert out["mean"] == 0.5 and out["n"] == 20
    # a 95 % bootstrap interval of a mean of 20 coin flips: about 0.5 ± 0.22, strictly inside [0, 1]
    assert 0.2 < out["low"] < 0.45 and 0.55 < out["high"] < 0.8
    assert _mean_with_interval([0.0, 1.0] * 10) == out  # seeded: the same interval each time


def test_the_top1_is_compared_by_value_as_read_from_json() -> None:
    import json

    ref = {"per_query": {"q": {"top10": json.loads('["d1", "d2"]')}}}
    other = {"per_query": {"q": {"top10": json.loads('["d1", "d3"]')}}}  # equal strings, not the same objects
    assert agreement(ref, other)["per_query"]["q"]["top1_changed"] == 0.0


def test_cosine_scores_refuses_arrays_that_are_not_matrices_on_either_side() -> None:
    docs, queries = np.ones((3, 4)), np.ones((2, 4))
    with pytest.raises(ValueError, match="2-D"):
        cosine_scores(docs, np.ones((2, 3, 4)))  # a stack of query matrices: not a query matrix
    with pytest.raises(ValueError, match="2-D"):
        cosine_scores(np.ones((2, 3, 4)), queries)
    with pytest.raises(ValueError, match="2-D"):
        cosine_scores(docs, np.ones(4))


def test_evaluate_refuses_a_stack_of_query_matrices() -> None:
    with pytest.raises(ValueError, match="2-D"):  # (2, 3, 4): 2 "queries" of 3x4 each
        evaluate(np.ones((3, 4)), np.ones((2, 3, 4)), ["q0", "q1"], ["d0", "d1", "d2"], {})
