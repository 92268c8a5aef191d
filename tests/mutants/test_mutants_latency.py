"""Behaviour of load.py's statistics (percentile, run_stats, point_stats) that the mutation run
(scripts/mutation.py, session `latency_stats`) found unchecked. Expected values worked out by hand."""
from __future__ import annotations

import pytest

from embedswap.measure.load import RequestRecord, RunStats, percentile, point_stats, run_stats


def rec(ms: float, status: int = 200, docs: int = 8, tokens: int | None = 100, error: str | None = None):
    return RequestRecord("x", 0, 0, 0.0, ms, status, docs, tokens, error)


def test_percentile_linear_by_hand() -> None:
    assert percentile([], 50) is None
    assert percentile([7.0], 99) == 7.0
    # linear interpolation on [10, 20, 30, 40]: p50 at rank 1.5 -> 25; p90 at rank 2.7 -> 37; p0 / p100 the ends
    assert percentile([40.0, 10.0, 30.0, 20.0], 50) == pytest.approx(25.0)
    assert percentile([10.0, 20.0, 30.0, 40.0], 90) == pytest.approx(37.0)
    assert percentile([10.0, 20.0, 30.0, 40.0], 0) == 10.0 and percentile([10.0, 20.0, 30.0, 40.0], 100) == 40.0


def test_an_answer_with_an_error_is_not_ok_even_with_status_200() -> None:
    assert rec(1.0).ok is True
    assert rec(1.0, error="bad vectors").ok is False
    assert rec(1.0, status=201).ok is False
    stats = run_stats([rec(10.0), rec(1000.0, error="bad vectors"), rec(30.0, status=0)], wall_s=2.0)
    assert (stats.requests, stats.errors) == (3, 2)
    assert stats.error_rate == pytest.approx(2 / 3)
    assert stats.p50_ms == 10.0 and stats.p99_ms == 10.0 and stats.mean_ms == 10.0
    assert stats.docs_per_s == pytest.approx(8 / 2.0)  # only the answered request's documents
    assert stats.tokens_per_s == pytest.approx(100 / 2.0)
    assert stats.wall_s == 2.0


def test_run_stats_mean_throughput_and_missing_usage() -> None:
    stats = run_stats([rec(10.0, docs=2, tokens=None), rec(20.0, docs=4, tokens=30), rec(60.0, docs=6, tokens=50)],
                      wall_s=4.0)
    assert stats.mean_ms == pytest.approx(30.0)
    assert stats.p50_ms == 20.0
    assert stats.p90_ms == pytest.approx(52.0)  # rank 1.8: 20 + 0.8 * 40
    assert stats.docs_per_s == pytest.approx(12 / 4.0)
    assert stats.tokens_per_s == pytest.approx(80 / 4.0)  # the batch without usage adds no tokens
    no_usage = run_stats([rec(10.0, tokens=None)], wall_s=1.0)
    assert no_usage.tokens_per_s is None and no_usage.docs_per_s == 8.0


def test_run_stats_with_nothing_answered_or_no_time() -> None:
    empty = run_stats([], wall_s=1.0)
    assert (empty.requests, empty.errors, empty.error_rate) == (0, 0, 0.0)
    assert empty.p50_ms is None and empty.mean_ms is None and empty.docs_per_s is None and empty.tokens_per_s is None
    failed = run_stats([rec(5.0, status=500)], wall_s=1.0)
    assert failed.error_rate == 1.0 and failed.p50_ms is None and failed.docs_per_s is None
    instant = run_stats([rec(5.0)], wall_s=0.0)
    assert instant.docs_per_s is None and instant.tokens_per_s is None and instant.p50_ms == 5.0


def stats(p50: float | None, docs: float | None = 1.0, requests: int = 10, errors: int = 0) -> RunStats:
    return RunStats(requests=requests, errors=errors, error_rate=errors / requests, p50_ms=p50, p90_ms=p50,
                    p99_ms=p50, mean_ms=p50, docs_per_s=docs, tokens_per_s=None, wall_s=1.0)


def test_point_stats_medians_errors_and_spread() -> None:
    point = point_stats("sequential", 1, [stats(10.0, requests=10, errors=1), stats(None, requests=20, errors=3),
                                          stats(40.0, requests=10, errors=0), stats(20.12345, requests=10)])
    assert (point.run, point.concurrency, point.repeats, point.requests_per_repeat) == ("sequential", 1, 4, 10)
    assert point.p50_ms == 20.12345  # median of the three present values 10, 40, 20.12345
    assert point.errors == 4 and point.error_rate == pytest.approx(4 / 50)
    assert point.tokens_per_s is None  # no repeat had usage
    assert point.spread["p50_ms"] == [10.0, None, 40.0, 20.123]  # rounded to 3 places, in repeat order
    assert point.spread["tokens_per_s"] == [None, None, None, None]
    # an even number of present values: the mean of the middle two
    assert point_stats("c", 4, [stats(10.0), stats(30.0)]).p50_ms == 20.0
    d = point_stats("c", 4, [stats(10.0)]).as_dict()
    assert d["run"] == "c" and d["spread"]["p50_ms"] == [10.0]


def test_point_stats_of_no_repeats() -> None:
    point = point_stats("concurrent", 8, [])
    assert (point.repeats, point.requests_per_repeat, point.errors, point.error_rate) == (0, 0, 0, 0.0)
    assert point.p50_ms is None and point.spread["p50_ms"] == []


def test_throughput_is_a_true_division_and_p99_is_the_99th() -> None:
    stats = run_stats([rec(10.0, docs=4, tokens=50), rec(20.0, docs=4, tokens=50)], wall_s=3.0)
    assert stats.docs_per_s == pytest.approx(8 / 3.0) and stats.tokens_per_s == pytest.approx(100 / 3.0)
    short = run_stats([rec(10.0, docs=4, tokens=50)], wall_s=0.5)  # under a second of wall still counts
    assert short.docs_per_s == 8.0 and short.tokens_per_s == 100.0
    # p99 of 1..100 ms by linear interpolation: rank 98.01 -> 99.01 (not the maximum, not p98)
    hundred = run_stats([rec(float(v)) for v in range(1, 101)], wall_s=1.0)
    assert hundred.p99_ms == pytest.approx(99.01) and hundred.p90_ms == pytest.approx(90.1)


def test_requests_per_repeat_is_the_first_repeats() -> None:
    assert point_stats("c", 4, [stats(10.0, requests=30), stats(10.0, requests=29)]).requests_per_repeat == 30
