"""Intervals and verdicts on seeded synthetic data with a known answer (embedswap.analysis.intervals,
embedswap.analysis.ranking_tests)."""

import numpy as np
import pytest

from embedswap.analysis.intervals import Requests, estimate, min_n, near_max, ratio, seed_for, direction
from embedswap.analysis.ranking_tests import detectable, paired_test
from typed_summary import as_typed

TRIALS = 200


def _server(rng, scale=1.0, repeats=3, n=30, concurrency=1, sigma=0.25):
    """A closed-loop run: lognormal latencies around 500 ms x scale, 8 docs a request."""
    latency = [rng.lognormal(np.log(500 * scale), sigma, n) for _ in range(repeats)]
    return Requests(latency, [[8] * n] * repeats, [lat.sum() / 1000 / concurrency for lat in latency])


def _verdicts(scale, trials=TRIALS, n=30, concurrency=1):
    rng = np.random.default_rng(11)
    out = {"p50": [], "docs_per_s": [], "p99": []}
    for trial in range(trials):
        legacy = estimate(_server(rng, 1.0, n=n, concurrency=concurrency), seed_for("l", str(trial)), 1000)
        candidate = estimate(_server(rng, scale, n=n, concurrency=concurrency), seed_for("c", str(trial)), 1000)
        r = ratio(candidate, legacy)
        for key in out:
            out[key].append(getattr(r, key).direction)
    return out


def test_sample_size_rule_known_values() -> None:
    # 1 - q**n >= 0.975: by hand ln(0.025)/ln(q) = 5.32, 35.01, 367.04
    assert (min_n(0.5), min_n(0.9), min_n(0.99)) == (6, 36, 368)
    assert near_max(30, 0.99) and near_max(40, 0.99)  # 71 % / 61 % of the weight on the largest value
    assert not near_max(120, 0.99) and not near_max(30, 0.5)


def test_identical_servers_give_no_difference_in_95_percent() -> None:
    found = _verdicts(1.0)
    assert found["p50"].count("no_difference") / TRIALS >= 0.95
    # measured over 1,000 trials: 96.3 % (p50), 94.5 % (docs/s; the ratio of two means is slightly skewed)
    assert found["docs_per_s"].count("no_difference") / TRIALS >= 0.93
    assert set(found["p99"]) == {"too_few"}  # 90 requests cannot carry a p99 interval


def test_thirty_percent_slower_is_detected() -> None:
    found = _verdicts(1.3, trials=50)
    assert found["p50"].count("slower") / 50 >= 0.95
    assert found["docs_per_s"].count("slower") / 50 >= 0.95
    assert "faster" not in found["p50"]


def test_point_interval_covers_the_true_median() -> None:
    rng = np.random.default_rng(5)
    hits = 0
    for trial in range(100):
        est, _ = estimate(_server(rng, n=40, concurrency=4), seed_for("p", str(trial)), 1000)
        assert est.n == 120 and est.p99.estimable is False and est.p90.estimable is True
        hits += est.p50.low <= 500 <= est.p50.high
    assert hits >= 90


def test_throughput_follows_docs_over_wall_and_failures_count() -> None:
    lat = [[100.0, 100.0, 100.0, 100.0]]
    est, _ = estimate(Requests(lat, [[8, 8, 0, 8]], [0.4]), 1, 200)
    assert est.docs_per_s.value == pytest.approx(24 / 0.4)
    assert est.n == 3 and est.requests == 4
    assert est.p50.value == pytest.approx(100.0)


def test_interval_direction() -> None:
    assert direction(1.1, 1.4, lower_is_better=True) == "slower"
    assert direction(1.1, 1.4, lower_is_better=False) == "faster"
    assert direction(0.9, 1.2, lower_is_better=True) == "no_difference"
    assert direction(None, 1.2, lower_is_better=True) == "missing"


def test_paired_test_known_answers() -> None:
    rng = np.random.default_rng(2)
    legacy = rng.uniform(0.3, 0.9, 24)
    same = paired_test(legacy, legacy.copy())
    assert same.verdict == "no_difference" and same.p_value == 1.0 and same.delta == 0.0
    shifted = paired_test(legacy, legacy + 0.2 + rng.normal(0, 0.1, 24))
    assert shifted.verdict == "differs" and shifted.low > 0 and shifted.p_value < 0.01
    false_alarms = sum(paired_test(legacy, legacy + rng.normal(0, 0.1, 24), seed=i).verdict == "differs"
                       for i in range(100))
    assert false_alarms <= 10  # nominal 5 of 100
    # 24 queries with a spread of 0.1 detect a mean shift of ~0.06 (80 % power): (2.069 + 0.858) * 0.1 / sqrt(24)
    assert detectable(0.1, 24) == pytest.approx(0.0597, abs=2e-3)


def test_detectable_difference_is_detected_about_80_percent() -> None:
    rng = np.random.default_rng(4)
    shift = detectable(0.1, 24)
    hits = sum(paired_test(np.zeros(24), shift + rng.normal(0, 0.1, 24), seed=i).verdict == "differs"
               for i in range(100))
    assert 65 <= hits <= 95


# --- from captures to the summary and the report --------------------------------------------------------------------
def test_summary_attaches_each_points_requests(tmp_path) -> None:
    import embedswap.summary.sections.latency as summary_mod
    from embedswap.captures import new_attempt

    attempt = new_attempt(tmp_path)
    records = [{"run": "sequential", "repeat": rep, "seq": i, "send_offset_s": 0.1 * i, "latency_ms": 100.0,
                "status": 200 if i != 2 else 500, "docs": 8, "prompt_tokens": 9, "error": None if i != 2 else "x"}
               for rep in range(2) for i in range(3)]
    attempt.write_jsonl("legacy/latency_requests.jsonl", records)
    attempt.write_json("legacy/latency_stats.json", {"sequential": {"run": "sequential", "concurrency": 1}})
    point = summary_mod.latency_stats_with_requests(attempt, "legacy")["sequential"]
    assert point["requests"]["latency_ms"] == [[100.0] * 3] * 2
    assert point["requests"]["docs"] == [[8, 8, 0]] * 2  # the failed request answered no document
    assert point["requests"]["wall_s"] == [pytest.approx(0.3)] * 2  # last answer: 0.2 s + 100 ms


def _same_latency_as_legacy(summary, name):
    """The summary with ``name``'s per-request data replaced by legacy's (an identical server)."""
    import copy

    out = copy.deepcopy(summary)
    by_target = out["latency"]["by_target"]
    for run in ("sequential", "concurrent"):
        by_target[name][run]["requests"] = copy.deepcopy(by_target["legacy"][run]["requests"])
    out.pop("decisions", None)
    return out


def test_report_never_calls_a_covered_difference_real() -> None:
    import json
    from pathlib import Path

    from embedswap.report.markdown import render_markdown
    from embedswap.analysis.upgrade import upgrade_summary

    path = Path(__file__).parents[1] / "fixtures" / "summary_complete.json"
    summary = upgrade_summary(_same_latency_as_legacy(json.loads(path.read_text(encoding="utf-8")), "vllm"))
    seq = summary["decisions"]["latency"]["ratios"]["vllm"]["intervals"]["sequential"]
    assert seq["p50"]["direction"] == "no_difference" and seq["p50"]["low"] < 1 < seq["p50"]["high"]
    dynamo = summary["decisions"]["latency"]["ratios"]["dynamo"]["intervals"]["sequential"]
    assert dynamo["p50"]["direction"] == "faster"
    en = render_markdown(as_typed(summary), "en")
    line = next(l for l in en.splitlines() if l.startswith("- `vllm`: sequential p50 went from"))
    # the verdict against the margin is stated, never "no difference detected"
    assert "1.00× [" in line and ": equivalent" in line and "faster" not in line.split("throughput")[0]
    assert "no difference detected" not in line
    ko = render_markdown(as_typed(summary), "ko")
    assert "동등합니다" in next(l for l in ko.splitlines() if l.startswith("- `vllm`:"))


def test_repeats_overlap_is_flagged() -> None:
    from embedswap.analysis.intervals import repeats_overlap

    assert repeats_overlap([442.0, 516.1, 548.6], [569.6, 516.0, 576.1]) is True
    assert repeats_overlap([10.0, 11.0], [12.0, 13.0]) is False
    assert repeats_overlap([10.0], [12.0, 13.0]) is None
    rng = np.random.default_rng(8)
    slow = ratio(estimate(_server(rng, 1.3), 1, 500), estimate(_server(rng, 1.0), 2, 500))
    assert slow.p50.direction == "slower" and slow.p50.repeats_overlap is False


def test_interleaved_blocks_widen_a_ratio_the_host_moved_between_blocks() -> None:
    """The kit's legacy server against itself with another job on the second core (issue 54): whole blocks read
    ~185 or ~350 ms. The request-level interval alone called it 1.17x slower; the blocks' interval covers 1."""
    from embedswap.analysis.intervals import block_interval

    same = [356.9, 193.0, 354.2, 348.6, 347.5, 199.5]
    beside = [367.0, 189.0, 181.0, 354.0, 208.0, 362.0]
    low, high = block_interval(same, beside)
    assert low < 1 < high and high > 1.5
    steady = block_interval([101.0, 99.0, 100.5, 100.2], [100.0, 100.0, 100.1, 99.8])
    assert steady is not None and 0.98 < steady[0] < 1 < steady[1] < 1.02  # a quiet host stays narrow
    assert block_interval([100.0], [100.0]) is None  # one block: nothing to say about blocks
    assert block_interval([100.0, 0.0], [100.0, 100.0]) is None


@pytest.mark.parametrize("n", [2, 30])
def test_a_paired_figure_too_few_to_estimate_has_no_block_interval(n: int) -> None:
    """Two interleaved blocks a side: at 2 requests a block p50 is too few (the ratio raised UnboundLocalError, seen
    in test_install.py's run), at 30 p99 is (it carried p50's block interval); a figure that is estimated keeps its
    blocks."""
    rng = np.random.default_rng(3)
    candidate = estimate(_server(rng, repeats=2, n=n), seed_for("c", "x"), 1000)
    legacy = estimate(_server(rng, repeats=2, n=n), seed_for("l", "x"), 1000)
    paired = ratio(candidate, legacy, paired=True)
    for key in ("p50", "p99", "docs_per_s"):
        figure = getattr(paired, key)
        assert (figure.blocks is None) == (figure.direction == "too_few"), (key, figure)
    assert paired.p99.direction == "too_few" and (paired.p50.direction == "too_few") == (n == 2)
