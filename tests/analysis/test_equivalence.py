"""embedswap.stats.equivalence: the issue's case is inconclusive (not unchanged), twins are equivalent, a worse
candidate is different, a shedding server failed, Holm and slices as computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from embedswap.stats.equivalence import (Verdict, combine, holm, n_needed, overlap_verdict, paired_verdict,
                                            sliced_verdict)
from embedswap.stats.latency_equivalence import classify_status, error_gate, log_ratio_interval, ratio_verdict
from embedswap.analysis.ranking_tests import paired_test

# The issue: 24 queries, candidate - legacy per query. nDCG@10 mean -0.06, recall@5 mean -0.05, top-5 overlap
# mean 0.96 (23/24 = 0.958 in steps of 1/5); most queries unchanged, a few move a lot (a realistic spread).
NDCG = [-0.50, -0.45, -0.35, -0.30, -0.25, -0.15, -0.10, -0.04, 0.10, 0.15, 0.20, 0.25] + [0.0] * 12
RECALL = [-0.5, -0.5, -0.25, -0.25, -0.2, -0.2, 0.25, 0.2, 0.25] + [0.0] * 15
OVERLAP = [0.6, 0.8, 0.8, 0.8] + [1.0] * 20


def test_issue_case_is_inconclusive_with_the_queries_that_would_decide_it() -> None:
    assert len(NDCG) == len(RECALL) == len(OVERLAP) == 24
    assert np.mean(NDCG) == pytest.approx(-0.06) and np.mean(RECALL) == pytest.approx(-0.05)
    assert np.mean(OVERLAP) == pytest.approx(0.96, abs=0.005)
    # the existing paired test finds no difference: today's verdict would be "unchanged"
    zeros = np.zeros(24)
    assert paired_test(zeros, np.array(NDCG)).verdict == "no_difference"
    assert paired_test(zeros, np.array(RECALL)).verdict == "no_difference"

    verdicts = {"ndcg_at_10": paired_verdict(NDCG, 0.02), "recall_at_5": paired_verdict(RECALL, 0.02),
                "top5_overlap": overlap_verdict(OVERLAP, 0.05)}
    for name, v in verdicts.items():
        assert v.code == "inconclusive", (name, v)
        assert not v.acceptable
        assert v.n == 24 and v.n_needed is not None and v.n_needed > 24, (name, v)
        assert v.params["n_if_identical"] > 24
    overall = combine(verdicts)
    assert overall.code == "inconclusive" and overall.slices == list(verdicts)
    assert overall.n_needed == max(v.n_needed for v in verdicts.values())  # type: ignore[type-var]


def test_identical_values_are_equivalent() -> None:
    v = paired_verdict(np.zeros(24), 0.02)
    assert (v.code, v.estimate, v.low, v.high, v.n_needed) == ("equivalent", 0.0, 0.0, 0.0, None)
    noisy = np.random.default_rng(3).normal(0, 1e-3, 24)  # numeric noise only
    assert paired_verdict(noisy, 0.02).code == "equivalent"
    assert overlap_verdict(np.ones(24), 0.05).code == "equivalent"


def test_clearly_worse_candidate_is_different_worse() -> None:
    deltas = np.random.default_rng(5).normal(-0.10, 0.05, 50)
    v = paired_verdict(deltas, 0.02)
    assert (v.code, v.direction) == ("different", "worse")
    assert v.high < 0 and v.estimate < -0.02 and v.p_difference < 0.05
    assert paired_verdict(np.full(24, -0.06), 0.02).direction == "worse"  # every query lost the same
    assert paired_verdict(-deltas, 0.02).direction == "better"
    assert paired_verdict(-deltas, 0.02, better_is_harmless=True).code == "non_inferior"


def test_interval_is_the_t_interval_at_one_minus_two_alpha() -> None:
    d = np.array(NDCG)
    v = paired_verdict(d, 0.02)
    half = stats.t.ppf(0.95, 23) * d.std(ddof=1) / math.sqrt(24)
    assert (v.low, v.high) == pytest.approx((d.mean() - half, d.mean() + half))


def test_shedding_server_failed_naming_429_and_retry_after() -> None:
    gate = error_gate({200: 44, 429: 76}, 0.01, retry_after={429: "2"})
    assert gate.code == "failed" and gate.reason == "error_rate_above_margin"
    assert gate.params["statuses"] == {"429": 76} and gate.params["retry_after"] == {"429": "2"}
    assert gate.estimate == pytest.approx(76 / 120) and gate.n == 120
    # a good-looking ratio from the 44 survivors does not decide the point
    v = ratio_verdict(0.80, 0.75, 0.85, 1.10, n=44, errors=gate)
    assert v.code == "failed" and v.params["statuses"] == {"429": 76} and v.params["ratio"] == 0.80


def test_error_statuses_are_named_by_class() -> None:
    assert [classify_status(s) for s in (200, "204", 429, 503, 500, "timeout", "ReadTimeout", 404)] == [
        "ok", "ok", "429", "5xx", "5xx", "timeout", "timeout", "404"]
    gate = error_gate({200: 90, 503: 4, 500: 2, "timeout": 3, 429: 1}, 0.01)
    assert gate.code == "failed" and gate.params["statuses"] == {"5xx": 6, "timeout": 3, "429": 1}
    assert error_gate({200: 400}, 0.01).code == "non_inferior"
    few = error_gate({200: 120}, 0.01)  # 0 of 120 does not bound the rate at 1 % yet
    assert few.code == "inconclusive" and few.n_needed == math.ceil(math.log(0.05) / math.log(0.99))


def test_latency_ratio_verdicts() -> None:
    assert ratio_verdict(1.02, 0.99, 1.05, 1.10, n=200).code == "equivalent"
    slower = ratio_verdict(1.30, 1.22, 1.38, 1.10, n=200)
    assert (slower.code, slower.direction) == ("different", "slower")
    faster = ratio_verdict(0.70, 0.60, 0.95, 1.10, n=200)
    assert (faster.code, faster.direction) == ("non_inferior", "faster")
    assert ratio_verdict(0.95, 0.85, 1.05, 1.10, n=200).code == "non_inferior"
    assert ratio_verdict(0.70, 0.60, 0.80, 1.10, faster_is_harmless=False).direction == "faster"
    wide = ratio_verdict(1.05, 0.90, 1.25, 1.10, n=30)
    assert wide.code == "inconclusive" and wide.n_needed > 30
    # throughput: higher is better, a lower docs/s ratio is the harmful one
    assert ratio_verdict(0.70, 0.65, 0.75, 1.10, lower_is_better=False).direction == "slower"
    # a 95 % interval (analysis.intervals) is rescaled to the 90 % one on the log scale
    v = ratio_verdict(1.0, math.exp(-1.959964 * 0.05), math.exp(1.959964 * 0.05), 1.10, confidence=0.95)
    assert math.log(v.high) == pytest.approx(1.644854 * 0.05, rel=1e-4)
    assert ratio_verdict(None, None, None, 1.10).reason == "missing_interval"


def test_log_ratio_interval_of_twins_covers_one() -> None:
    rng = np.random.default_rng(11)
    r, low, high, n = log_ratio_interval(rng.lognormal(3, 0.25, 300), rng.lognormal(3, 0.25, 300))
    assert low < 1 < high and n == 300
    assert ratio_verdict(r, low, high, 1.10, n=n).code == "equivalent"


def test_n_needed_matches_the_normal_approximation() -> None:
    z = stats.norm.ppf
    closed_same = (z(0.95) + z(0.90)) ** 2 * 0.16 ** 2 / 0.02 ** 2  # delta 0: beta split over two sides
    assert n_needed(0.16, 0.02) == pytest.approx(closed_same, rel=0.03)
    closed = (z(0.95) + z(0.80)) ** 2 * 0.16 ** 2 / (0.02 - 0.01) ** 2
    assert n_needed(0.16, 0.02, -0.01) == pytest.approx(closed, rel=0.03)
    assert n_needed(0.16, 0.02, 0.0) < n_needed(0.16, 0.02, 0.01) < n_needed(0.16, 0.02, 0.015)
    assert n_needed(0.16, 0.02, 0.02) is None and n_needed(0.0, 0.02, 0.01) == 2
    assert n_needed(0.16, 0.02, 0.03, one_sided=True) is not None  # the harmless side is unbounded


def test_holm_equals_hand_computed_values() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_a_worse_slice_makes_the_overall_not_equivalent_and_is_named() -> None:
    rng = np.random.default_rng(7)
    slices = {"en": rng.normal(0, 0.005, 60), "de": rng.normal(-0.12, 0.05, 60), "fr": rng.normal(0, 0.005, 60)}
    overall, by_slice = sliced_verdict(slices, 0.02)
    assert by_slice["en"].code == by_slice["fr"].code == "equivalent"
    assert (overall.code, overall.direction) == ("different", "worse")
    assert overall.slices == ["de"] and overall.reason == "slice_worse"
    assert by_slice["de"].params["p_holm"] < 0.05


def test_holm_downgrades_a_slice_difference_that_does_not_survive() -> None:
    borderline = Verdict(code="different", direction="worse", estimate=-0.03, low=-0.06, high=-0.001, margin=0.02, n=40,
                         p_difference=0.03)
    same = Verdict(code="equivalent", estimate=0.0, low=-0.005, high=0.005, margin=0.02, n=40, p_difference=0.5)
    overall, by_slice = sliced_verdict({"en": same, "de": borderline, "fr": same})
    assert by_slice["de"].code == "inconclusive" and by_slice["de"].reason == "not_significant_after_holm"
    assert by_slice["de"].params["p_holm"] == pytest.approx(0.09)
    assert overall.code == "inconclusive" and overall.slices == ["de"]


def test_combine_order_and_failed_first() -> None:
    eq = Verdict(code="equivalent")
    failed = Verdict(code="failed", reason="error_rate_above_margin", params={"statuses": {"429": 3}})
    assert combine({"a": eq, "b": eq}).code == "equivalent"
    assert combine({"a": eq, "b": Verdict(code="non_inferior")}).code == "non_inferior"
    assert combine({"a": Verdict(code="different", direction="worse"), "b": failed}).slices == ["b"]
    assert combine({"a": Verdict(code="different", direction="better"), "b": eq}, better_is_harmless=True).code == "non_inferior"
    assert combine({}).code == "inconclusive"
