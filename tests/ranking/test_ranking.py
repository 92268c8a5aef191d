import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from embedswap.captures import json_bytes, new_attempt
from embedswap.ranking.metrics import (evaluate, jaccard, mrr_at_k, ndcg_at_k, ranking_from, recall_at_k,
                                      top_k_overlap)
from embedswap.summary.sections.ranking import ranking_section
from embedswap.measure.workload import Document, Query, Workload


# --- nDCG ------------------------------------------------------------------------------------------------------------
def test_perfect_ranking_has_ndcg_one() -> None:
    grades = np.array([2, 1, 0, 0])
    assert ndcg_at_k(np.array([0, 1, 2, 3]), grades) == pytest.approx(1.0)
    assert ndcg_at_k(np.array([0.9, 0.5, 0.1, 0.0]), grades) == pytest.approx(1.0)  # scores, same order


def test_reversed_ranking_computed_by_hand() -> None:
    # grades 2, 1, 0 ranked in reverse: ranks 1..3 hold grades 0, 1, 2
    # DCG  = (2^0-1)/log2(2) + (2^1-1)/log2(3) + (2^2-1)/log2(4) = 0 + 0.6309298 + 1.5      = 2.1309298
    # IDCG = (2^2-1)/log2(2) + (2^1-1)/log2(3) + 0                = 3 + 0.6309298           = 3.6309298
    assert ndcg_at_k(np.array([2, 1, 0]), np.array([2, 1, 0]), gain="exp") == pytest.approx(2.1309298 / 3.6309298,
                                                                                             abs=1e-7)
    assert ndcg_at_k(np.array([0.1, 0.5, 0.9]), np.array([2, 1, 0]), gain="exp") == pytest.approx(0.5868827, abs=1e-7)
    # trec_eval's linear gain (the default): DCG = 0 + 1/log2(3) + 2/log2(4) = 1.6309298, IDCG = 2 + 0.6309298
    assert ndcg_at_k(np.array([2, 1, 0]), np.array([2, 1, 0])) == pytest.approx(1.6309298 / 2.6309298, abs=1e-7)
    with pytest.raises(ValueError):
        ndcg_at_k(np.array([2, 1, 0]), np.array([2, 1, 0]), gain="square")


def test_ndcg_and_recall_match_trec_eval() -> None:
    """pytrec_eval (trec_eval's own code) as the oracle: random graded judgements, distinct scores (trec_eval
    breaks ties by document id, this kit by document order), 50 queries over 40 documents."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(3)
    qrels, run, ours = {}, {}, {}
    for q in range(50):
        grades = rng.choice([0, 0, 0, 1, 2], size=40)
        grades[rng.integers(40)] = 2  # every query has something relevant
        scores = rng.permutation(40) / 40 + rng.random(40) * 1e-3
        qrels[f"q{q}"] = {f"d{i}": int(g) for i, g in enumerate(grades) if g > 0}
        run[f"q{q}"] = {f"d{i}": float(s) for i, s in enumerate(scores)}
        ours[f"q{q}"] = (ndcg_at_k(scores, grades, 10), recall_at_k(scores, grades, 5))
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.5"}).evaluate(run)
    for q, (ndcg, recall) in ours.items():
        assert ndcg == pytest.approx(oracle[q]["ndcg_cut_10"], abs=1e-6)
        assert recall == pytest.approx(oracle[q]["recall_5"], abs=1e-6)
    # the exponential gain differs from trec_eval's on the same data (the 0.1181 vs 0.1266 kind)
    assert any(abs(ndcg_at_k(np.array(list(run[q].values())), np.array([qrels[q].get(f"d{i}", 0) for i in range(40)]),
                             10, gain="exp") - oracle[q]["ndcg_cut_10"]) > 1e-3 for q in ours)


def test_mrr_matches_trec_eval_on_the_run_cut_to_ten() -> None:
    """pytrec_eval's ``recip_rank`` has no cut-off: given each query's top 10 only, it is MRR@10. Sparse
    judgements so that some queries have no relevant document in their top 10 (0.0 on both sides)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(5)
    qrels, run, ours = {}, {}, {}
    for q in range(60):
        grades = np.zeros(40, dtype=int)
        grades[rng.choice(40, size=int(rng.integers(1, 4)), replace=False)] = rng.choice([1, 2])
        scores = rng.permutation(40) / 40 + rng.random(40) * 1e-3
        top = ranking_from(scores)[:10]
        qrels[f"q{q}"] = {f"d{i}": int(g) for i, g in enumerate(grades) if g > 0}
        run[f"q{q}"] = {f"d{i}": float(scores[i]) for i in top}
        ours[f"q{q}"] = mrr_at_k(scores, grades, 10)
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    for q, mrr in ours.items():
        assert mrr == pytest.approx(oracle[q]["recip_rank"], abs=1e-9)
    assert any(v == 0.0 for v in ours.values()) and any(0 < v < 1 for v in ours.values())


def test_mrr_edge_cases() -> None:
    grades = np.zeros(12)
    grades[0] = 1
    assert mrr_at_k(np.arange(12), grades) == 1.0  # first relevant at rank 1
    grades = np.zeros(12)
    grades[10] = 2
    assert mrr_at_k(np.arange(12), grades) == 0.0  # at rank 11: outside the top 10
    assert mrr_at_k(np.arange(12), grades, k=11) == pytest.approx(1 / 11)
    grades = np.array([0, 0, 1, 2])
    assert mrr_at_k(np.array([3, 2, 1, 0]), grades) == 1.0  # the first hit counts, whatever its grade
    assert mrr_at_k(np.array([0, 1, 2, 3]), grades) == pytest.approx(1 / 3)
    assert mrr_at_k(np.array([0, 1, 2, 3]), grades, min_relevance=2) == pytest.approx(1 / 4)
    assert mrr_at_k(np.array([0.1, 0.2, 0.9, 0.3]), grades) == 1.0  # scores: document 2 first
    assert math.isnan(mrr_at_k(np.arange(4), np.zeros(4)))  # no relevant document: undefined, as nDCG


def test_ndcg_cut_at_k_and_graded() -> None:
    # the only relevant document (grade 1) at rank 3: DCG = 1/log2(4) = 0.5, IDCG = 1
    assert ndcg_at_k(np.array([1, 2, 0]), np.array([1, 0, 0])) == pytest.approx(0.5)
    # outside the cut-off it counts nothing
    assert ndcg_at_k(np.array([1, 2, 0]), np.array([1, 0, 0]), k=2) == 0.0
    # a grade-2 document first beats a grade-1 document first
    grades = np.array([1, 2, 0])
    assert ndcg_at_k(np.array([1, 0, 2]), grades) == pytest.approx(1.0)
    assert ndcg_at_k(np.array([0, 1, 2]), grades) < 1.0
    assert math.isnan(ndcg_at_k(np.array([0, 1]), np.array([0, 0])))  # nothing relevant: undefined


def test_scores_ties_keep_document_order() -> None:
    assert ranking_from(np.array([0.5, 0.9, 0.5])).tolist() == [1, 0, 2]
    with pytest.raises(ValueError):
        ranking_from(np.zeros((2, 2)))


# --- recall and overlap ------------------------------------------------------------------------------------------------
def test_recall_counts_grade_one_as_relevant() -> None:
    grades = np.array([2, 0, 0, 1, 0, 0, 1])
    ranking = np.array([0, 1, 2, 3, 4, 5, 6])  # relevant at ranks 1, 4, 7
    assert recall_at_k(ranking, grades, k=5) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, grades, k=5, min_relevance=2) == pytest.approx(1.0)
    assert recall_at_k(ranking, grades, k=1) == pytest.approx(1 / 3)
    assert math.isnan(recall_at_k(ranking, np.zeros(7)))


def test_top_k_overlap_is_jaccard() -> None:
    a = np.array([0, 1, 2, 3, 4, 5, 6])
    assert top_k_overlap(a, a) == 1.0
    assert top_k_overlap(a, np.array([4, 3, 2, 1, 0, 6, 5])) == 1.0  # same set, other order
    # top-5 {0,1,2,3,4} vs {0,1,2,5,6}: 3 shared, 7 in the union
    assert top_k_overlap(a, np.array([0, 1, 2, 5, 6, 3, 4])) == pytest.approx(3 / 7)
    assert top_k_overlap(a, np.array([5, 6, 0, 1, 2]), k=2) == 0.0  # {0,1} vs {5,6}
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)


# --- evaluate ----------------------------------------------------------------------------------------------------------
def _basis(n: int, dim: int) -> np.ndarray:
    return np.eye(dim)[:n]


def test_evaluate_per_query_and_means() -> None:
    docs = _basis(4, 4)
    queries = np.array([[1.0, 0.2, 0.0, 0.0],    # q1: d1 then d2
                        [0.0, 0.0, 0.1, 1.0]])   # q2: d4 then d3
    qrels = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 2}}
    result = evaluate(docs, queries, ["q1", "q2"], ["d1", "d2", "d3", "d4"], qrels)
    q1, q2 = result["per_query"]["q1"], result["per_query"]["q2"]
    assert q1["ndcg_at_10"] == pytest.approx(1.0) and q1["recall_at_5"] == 1.0 and q1["mrr_at_10"] == 1.0
    assert q1["top5"][:2] == ["d1", "d2"]
    # q2: the grade-2 document at rank 2: 3/log2(3) / 3
    assert q2["ndcg_at_10"] == pytest.approx(1 / math.log2(3))
    assert result["ndcg_at_10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert q2["mrr_at_10"] == 0.5 and result["mrr_at_10"] == pytest.approx(0.75)
    assert result["judged_queries"] == 2 and result["queries"] == 2


def test_evaluate_skips_unjudged_queries_in_means() -> None:
    result = evaluate(_basis(3, 3), _basis(2, 3), ["q1", "q2"], ["a", "b", "c"], {"q1": {"a": 2}})
    assert result["per_query"]["q2"]["ndcg_at_10"] is None and result["per_query"]["q2"]["mrr_at_10"] is None
    assert result["ndcg_at_10"] == pytest.approx(1.0) and result["judged_queries"] == 1


# --- the summary section -----------------------------------------------------------------------------------------------
def _workload() -> Workload:
    docs = [Document(f"d{i}", f"text {i}") for i in range(8)]
    queries = [Query(f"q{i}", f"query {i}") for i in range(4)]
    qrels = {f"q{i}": {f"d{i}": 2, f"d{i + 4}": 1} for i in range(4)}
    return Workload(documents=docs, queries=queries, qrels=qrels)


def _experiment() -> SimpleNamespace:
    return SimpleNamespace(legacy="legacy", candidates=["vllm", "dynamo"], primary_candidate="vllm")


def _write_target(attempt, name: str, docs: np.ndarray, naive: np.ndarray | None, shim: np.ndarray | None) -> None:
    attempt.write_array(f"{name}/doc_vectors.npy", np.stack([docs, docs]).astype(np.float32))
    if naive is not None:
        attempt.write_array(f"{name}/query_vectors_server_instruction.npy", naive.astype(np.float32))
    if shim is not None:
        attempt.write_array(f"{name}/query_vectors_client_prefixed.npy", shim.astype(np.float32))


def test_ranking_section_legacy_naive_shim(tmp_path) -> None:
    attempt = new_attempt(tmp_path)
    docs = np.eye(8)
    good = np.eye(8)[:4] + 0.5 * np.eye(8)[4:]          # each query: its grade-2 doc, then its grade-1 doc
    bad = np.roll(np.eye(8)[:4], 1, axis=1)              # the ignored prompt: every query lands on a wrong doc
    _write_target(attempt, "legacy", docs, good, good)
    _write_target(attempt, "vllm", docs, bad, good)
    section = ranking_section(_experiment(), attempt, _workload())
    assert section["measured"] is True
    assert section["legacy"]["ndcg_at_10"] == pytest.approx(1.0)
    assert section["legacy"]["top5_overlap"] == 1.0
    assert section["candidate_shim"]["ndcg_at_10"] == pytest.approx(1.0)
    assert section["candidate_shim"]["top5_overlap"] == pytest.approx(1.0)
    assert section["candidate_naive"]["ndcg_at_10"] < 0.8
    assert section["candidate_naive"]["top5_overlap"] < 1.0
    assert section["deltas"]["candidate_shim"]["ndcg_at_10"] == pytest.approx(0.0)
    assert section["deltas"]["candidate_naive"]["ndcg_at_10"] < 0
    assert section["by_candidate"]["dynamo"]["measured"] is False  # not captured: says so, does not fail
    assert "source" in section["candidate_naive"]
    json.loads(json_bytes(section))  # summary.json forbids NaN


def test_ranking_section_not_measured_without_judgements_or_captures(tmp_path) -> None:
    attempt = new_attempt(tmp_path)
    workload = _workload()
    no_qrels = Workload(documents=workload.documents, queries=workload.queries)
    no_queries = Workload(documents=workload.documents)
    assert ranking_section(_experiment(), attempt, no_queries)["measured"] is False
    missing = ranking_section(_experiment(), attempt, workload)
    assert missing["measured"] is False and "legacy" in missing["why"]
    _write_target(attempt, "legacy", np.eye(8), np.eye(8)[:4], None)
    missing = ranking_section(_experiment(), attempt, workload)
    assert missing["measured"] is False and "vllm" in missing["why"]
    # without judgements the rankings are still compared (agreement with legacy), but nothing is judged
    _write_target(attempt, "vllm", np.eye(8), np.eye(8)[:4], np.eye(8)[:4])
    unjudged = ranking_section(_experiment(), attempt, no_qrels)
    assert unjudged["measured"] is True and unjudged["judged"] is False
    assert unjudged["judged_why"]["reason"]["code"] == "no_qrels"
    assert unjudged["candidate_naive"]["agreement"]["queries"] == 4
    assert unjudged["candidate_naive"]["ndcg_at_10"] is None  # no judged query: no mean


def test_ranking_section_rejects_mismatched_shapes(tmp_path) -> None:
    attempt = new_attempt(tmp_path)
    _write_target(attempt, "legacy", np.eye(8), np.eye(8)[:4], None)
    _write_target(attempt, "vllm", np.eye(8), np.eye(8)[:3], np.eye(8)[:4])  # one query vector missing
    section = ranking_section(_experiment(), attempt, _workload())
    assert section["measured"] is True
    assert section["candidate_naive"]["measured"] is False and "shape" in section["candidate_naive"]["why"]
    assert section["candidate_shim"]["measured"] is True


def test_rbo_by_hand() -> None:
    from embedswap.ranking.agreement import rbo

    assert rbo(list("abcde"), list("abcde")) == pytest.approx(1.0)
    assert rbo(list("abc"), list("xyz")) == pytest.approx(0.0)
    # depth 2, p 0.5: X1 = 0, X2 = 2 -> (2/2) * 0.25 + (0.5/0.5) * (0 * 0.5 + 1 * 0.25) = 0.5
    assert rbo(["a", "b"], ["b", "a"], p=0.5) == pytest.approx(0.5)
    # a swap lower down costs less than a swap at the top
    assert rbo(list("abcdefghij"), list("abcdefghji")) > rbo(list("abcdefghij"), list("bacdefghij"))


def test_ranking_without_judgements_reports_agreement_with_legacy(tmp_path) -> None:
    """No qrels: nDCG/recall are None (said why), the agreement with the legacy ranking is measured."""
    attempt = new_attempt(tmp_path)
    workload = _workload()
    no_qrels = Workload(documents=workload.documents, queries=workload.queries)
    docs = np.eye(8)
    good = np.eye(8)[:4] + 0.5 * np.eye(8)[4:]
    bad = np.roll(np.eye(8)[:4], 1, axis=1)  # every query's top 1 moves
    _write_target(attempt, "legacy", docs, good, good)
    _write_target(attempt, "vllm", docs, bad, good)
    section = ranking_section(_experiment(), attempt, no_qrels)
    assert section["measured"] is True and section["judged"] is False
    assert section["judged_why"]["reason"]["code"] == "no_qrels"
    assert section["legacy"]["ndcg_at_10"] is None and section["legacy"]["judged_queries"] == 0
    shim, naive = section["candidate_shim"]["agreement"], section["candidate_naive"]["agreement"]
    assert shim["queries"] == 4 and shim["top1_changed"]["mean"] == 0.0 and shim["rbo"]["mean"] == pytest.approx(1.0)
    assert shim["overlap_at_10"]["mean"] == 1.0
    assert naive["top1_changed"]["mean"] == 1.0 and naive["overlap_at_1"]["mean"] == 0.0
    assert naive["rbo"]["mean"] < shim["rbo"]["mean"]
    assert naive["rbo"]["low"] <= naive["rbo"]["mean"] <= naive["rbo"]["high"]
    json.loads(json_bytes(section))
