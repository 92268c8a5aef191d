"""Behaviour of analysis/intervals.py that the mutation run (scripts/mutation.py, session `intervals`) found
unchecked: the sample-size rule, the expanded tail, which repeats are kept, the per-repeat figures, the pooled
values, the replicates' structure, the ratio's verdicts and interval. Values by hand or from a fixed seed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from embedswap.summary.types_latency import RunRequests
from embedswap.analysis.intervals import (SEED, Requests, _bounds, estimate, expanded_tail, min_n, near_max, ratio,
                                          repeats_overlap, seed_for, direction)


def test_min_n_and_near_max_by_hand() -> None:
    # 1 - max(q, 1-q)**n >= 0.975: the rule is symmetric in q
    assert min_n(0.1) == min_n(0.9) == 36
    assert min_n(0.5, confidence=0.5) == 2  # tail 0.25: ln 0.25 / ln 0.5 = 2 exactly
    assert min_n(0.9, confidence=0.9) == 29  # ln 0.05 / ln 0.9 = 28.4
    # near_max: (n - 1) q > n - 1.5, i.e. more than half the weight on the largest value
    assert near_max(1, 0.99) is True  # one value is its own maximum
    assert near_max(0, 0.99) is False
    assert near_max(50, 0.99) is True and near_max(51, 0.99) is False  # 48.51 > 48.5; 49.5 > 49.5 is not
    assert near_max(3, 0.75) is False  # (2)(0.75) = 1.5 = 3 - 1.5: exactly half is not more


def test_seed_for_is_stable_and_per_point() -> None:
    import zlib

    assert seed_for("vllm", "sequential") == SEED + zlib.crc32(b"vllm/sequential")
    assert seed_for("vllm", "sequential") != seed_for("vllm", "concurrent")


def test_requests_keep_only_repeats_with_requests_and_time() -> None:
    r = Requests([[10.0, 20.0], [], [30.0], [40.0]], [[1, 1], [], [2], [3]], [1.0, 1.0, 0.0, 2.0])
    assert [list(x) for x in r.latency] == [[10.0, 20.0], [40.0]]
    assert [list(x) for x in r.docs] == [[1.0, 1.0], [3.0]] and r.wall == [1.0, 2.0]
    assert r.n_ok == 3
    assert list(r.pooled_ok()) == [10.0, 20.0, 40.0]


def test_of_stored_requests() -> None:
    assert Requests.of(None) is None and Requests.of(RunRequests(latency_ms=[])) is None
    assert Requests.of(RunRequests(latency_ms=[[1.0]], docs=[[1]], wall_s=[0.0])) is None  # no time: nothing
    r = Requests.of(RunRequests(latency_ms=[[5.0, 7.0]], docs=[[2, 0]], wall_s=[0.5]))
    assert r.n_ok == 1 and list(r.pooled_ok()) == [5.0]


def test_values_and_per_repeat_by_hand() -> None:
    r = Requests([[10.0, 20.0, 30.0, 1000.0], [40.0, 50.0]], [[2, 2, 2, 0], [4, 4]], [2.0, 1.0])
    values = r.values()
    # answered requests 10, 20, 30, 40, 50 (the failed 1000 ms one is left out): p50 30, p90 46, p99 49.6
    assert values["p50"] == pytest.approx(30.0) and values["p90"] == pytest.approx(46.0)
    assert values["p99"] == pytest.approx(49.6)
    assert values["docs_per_s"] == pytest.approx(14 / 3.0)  # pooled documents over pooled wall
    per = r.per_repeat()
    assert per["p50"] == [20.0, 45.0] and per["p99"] == pytest.approx([29.8, 49.9])
    assert per["docs_per_s"] == [3.0, 8.0]
    failed = Requests([[10.0]], [[0]], [1.0])
    assert failed.values() == {"p50": None, "p90": None, "p99": None, "docs_per_s": None}
    assert failed.per_repeat() == {"p50": [], "p99": [], "docs_per_s": []}


def test_replicates_of_a_constant_server_are_constant() -> None:
    r = Requests([[100.0] * 5, [100.0] * 5], [[8] * 5, [8] * 5], [0.5, 0.5])
    reps = r.replicates(3, resamples=50)
    assert set(reps) == {"p50", "p90", "p99", "docs_per_s"}
    for key in ("p50", "p90", "p99"):
        assert reps[key].shape == (50,) and np.allclose(reps[key], 100.0)
    assert np.allclose(reps["docs_per_s"], 80 / 1.0)  # 80 documents in 1 s of wall, whatever is drawn


def test_replicates_resample_inside_each_repeat() -> None:
    # repeat 0 is all 10 ms, repeat 1 all 1000 ms: a stratified draw keeps five of each, so p50 is always 505
    r = Requests([[10.0] * 5, [1000.0] * 5], [[1] * 5, [1] * 5], [1.0, 1.0])
    reps = r.replicates(4, resamples=100)
    assert np.allclose(reps["p50"], 505.0)
    assert np.allclose(reps["docs_per_s"], 10 / 2.0)
    # the wall of a replicate scales with its request time: one slow request drawn twice takes longer
    slow = Requests([[10.0, 10.0, 10.0, 100.0]], [[1, 1, 1, 1]], [1.0])
    reps = slow.replicates(5, resamples=400)
    assert reps["docs_per_s"].min() < 4.0 / 1.0 < reps["docs_per_s"].max()
    same = slow.replicates(5, resamples=400)
    assert np.array_equal(reps["docs_per_s"], same["docs_per_s"])  # seeded


def test_replicates_skip_failed_requests() -> None:
    r = Requests([[10.0, 20.0, 9999.0]], [[1, 1, 0]], [1.0])
    reps = r.replicates(6, resamples=300)
    finite = reps["p50"][np.isfinite(reps["p50"])]
    assert finite.max() <= 20.0 and finite.min() >= 10.0  # the failed 9999 ms request never counts


def test_expanded_tail() -> None:
    assert expanded_tail(1) == pytest.approx(0.025) and expanded_tail(0) == pytest.approx(0.025)
    # df 2: z = sqrt(3/2) * t_0.975(2) = 1.2247 * 4.3027 = 5.2697 -> tail 6.8e-8
    assert expanded_tail(2) == pytest.approx(6.83e-8, rel=0.02)
    # df 29: sqrt(30/29) * 2.0452 = 2.0802 -> 0.01875
    assert expanded_tail(29) == pytest.approx(0.01875, rel=0.01)
    assert expanded_tail(29) < expanded_tail(200) < 0.025
    assert expanded_tail(29, confidence=0.5) > expanded_tail(29)


def test_bounds_ignore_nan_replicates() -> None:
    reps = np.array([np.nan, *np.arange(1.0, 101.0)])
    low, high = _bounds(reps, 1)  # df < 2: the plain 2.5 / 97.5 percentiles
    assert low == pytest.approx(np.percentile(np.arange(1.0, 101.0), 2.5))
    assert high == pytest.approx(np.percentile(np.arange(1.0, 101.0), 97.5))


def test_estimate_by_hand() -> None:
    rng = np.random.default_rng(1)
    lat = [list(rng.uniform(90, 110, 20)), list(rng.uniform(90, 110, 20))]
    r = Requests(lat, [[4] * 20, [4] * 19 + [0]], [1.0, 2.0])
    est, reps = estimate(r, 9, resamples=300)
    assert (est.n, est.requests, est.repeats) == (39, 40, 2)
    p50, p90, p99, docs = est.p50, est.p90, est.p99, est.docs_per_s
    assert p50.estimable and p50.n_min == 6 and p50.low < p50.value < p50.high
    assert 90 <= p50.low and p50.high <= 110
    assert p90.estimable and p90.n_min == 36 and p90.near_max is False
    assert p99.estimable is False and p99.low is None and p99.high is None and p99.n_min == 368
    assert p99.near_max is True and p99.value == pytest.approx(np.percentile(r.pooled_ok(), 99))
    assert docs.n_min == 1 and docs.estimable and docs.near_max is False
    assert docs.value == pytest.approx(156 / 3.0) and docs.low < docs.value < docs.high
    assert est.per_repeat["docs_per_s"] == [80.0, 38.0]  # 80 docs in 1 s, 76 in 2 s
    assert reps["p50"].shape == (300,)
    # nothing answered: no replicates, nothing estimable
    none, reps = estimate(Requests([[10.0]], [[0]], [1.0]), 1, 50)
    assert reps == {} and none.n == 0 and none.p50.estimable is False and none.p50.value is None
    # five answered requests: one short of a p50 interval
    five, _ = estimate(Requests([[1.0, 2.0, 3.0, 4.0, 5.0]], [[1] * 5], [1.0]), 1, 50)
    assert five.p50.estimable is False and five.p50.value == 3.0
    six, _ = estimate(Requests([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], [[1] * 6], [1.0]), 1, 50)
    assert six.p50.estimable is True


@pytest.mark.parametrize(("low", "high", "lower_is_better", "expected"), [
    (1.0, 1.2, True, "no_difference"), (0.8, 1.0, True, "no_difference"),  # touching 1 is covering it
    (0.7, 0.9, True, "faster"), (0.7, 0.9, False, "slower"), (1.1, 1.2, False, "faster"),
    (1.1, None, True, "missing"),
])
def test_direction_table(low, high, lower_is_better, expected) -> None:
    assert direction(low, high, lower_is_better) == expected


def test_repeats_overlap_edges() -> None:
    assert repeats_overlap([1.0, 2.0], [2.0, 3.0]) is True  # touching
    assert repeats_overlap([1.0, 3.0], [2.0, 4.0]) is True  # overlapping
    assert repeats_overlap([1.0, float("2")], [float("2"), 3.0]) is True  # touching, equal values from two sources
    assert repeats_overlap([3.0, 4.0], [1.0, 2.0]) is False
    assert repeats_overlap(None, [1.0, 2.0]) is None and repeats_overlap([1.0, 2.0], []) is None
    assert repeats_overlap([1.0, 2.0], [1.5]) is None


def _point(scale: float, n: int = 20, repeats: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    lat = [list(rng.uniform(95, 105, n) * scale) for _ in range(repeats)]
    return estimate(Requests(lat, [[1] * n] * repeats, [sum(x) / 1000 for x in lat]), seed + 1, 400)


def test_ratio_by_hand() -> None:
    slow, base = _point(2.0, seed=1), _point(1.0, seed=2)
    out = ratio(slow, base)
    assert out.model_fields_set == {"p50", "p99", "docs_per_s"}
    p50 = out.p50
    assert p50.value == pytest.approx(slow[0].p50.value / base[0].p50.value)
    assert 1.8 < p50.low <= p50.value <= p50.high < 2.2
    assert p50.direction == "slower" and p50.n == [40, 40]
    assert p50.repeats_overlap is False
    docs = out.docs_per_s
    assert docs.direction == "slower" and 0.45 < docs.low < docs.high < 0.55  # half the throughput
    assert out.p99.direction == "too_few" and out.p99.low is None  # 40 requests carry no p99 interval
    assert ratio(base, slow).p50.direction == "faster"
    same = ratio(_point(1.0, seed=3), _point(1.0, seed=4))
    assert same.p50.direction == "no_difference"


def test_ratio_missing_sides() -> None:
    base = _point(1.0)
    # a side is always estimate()'s output: one whose every request failed has no figure (n 0)
    empty = estimate(Requests([[10.0, 12.0]], [[0, 0]], [1.0]), SEED)
    out = ratio(empty, base)
    assert out.model_fields_set == {"p50", "p99", "docs_per_s"}
    assert all(getattr(out, k).direction == "missing" and getattr(out, k).value is None for k in out.model_fields_set)
    assert out.p50.n == [0, 40] and out.p50.repeats_overlap is None
    assert ratio(base, empty).p50.direction == "missing"  # nor as the reference
    zero = (base[0].model_copy(update={"p50": base[0].p50.model_copy(update={"value": 0.0})}), base[1])
    assert ratio(base, zero).p50.direction == "missing"  # no ratio to a zero reference
    assert ratio(zero, base).p50.value == 0.0
    few = (base[0].model_copy(update={"p50": base[0].p50.model_copy(update={"estimable": False})}), base[1])
    assert ratio(few, base).p50.direction == "too_few"
    assert ratio(base, few).p50.direction == "too_few"
    assert math.isclose(ratio(base, base).p50.value, 1.0)


def test_a_ratio_interval_is_the_expanded_one() -> None:
    # the ratio's interval takes the small-sample expanded tail (df = n - repeats), so it is wider than the plain
    # 2.5 / 97.5 percentiles of the same replicate ratios
    slow, base = _point(1.1, n=8, repeats=3, seed=5), _point(1.0, n=8, repeats=3, seed=6)
    out = ratio(slow, base).p50
    plain = np.percentile(slow[1]["p50"] / base[1]["p50"], [2.5, 97.5])
    assert out.low < plain[0] and out.high > plain[1]
