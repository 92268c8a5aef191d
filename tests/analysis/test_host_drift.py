"""Host drift: a ratio whose host drift (the calibration workload's time between the legacy and the candidate
phase, each phase's before/after, or the legacy server's A-B-A) exceeds the ratio's margin is inconclusive with
reason host_drift; the drift is stored beside it."""

from __future__ import annotations

import numpy as np
import pytest
from typed_summary import summary_body

from embedswap.analysis import decide
from embedswap.analysis.host_drift import established, host_drift, suspect
from embedswap.summary.types_latency import HostPhase, LatencyTarget


def _point(run: str, concurrency: int, p50: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    latency = [[round(float(x), 3) for x in rng.lognormal(np.log(p50), 0.1, 30)] for _ in range(3)]
    return {"run": run, "concurrency": concurrency, "repeats": 3, "requests_per_repeat": 30, "p50_ms": p50,
            "requests": {"latency_ms": latency, "docs": [[8] * 30 for _ in range(3)],
                         "wall_s": [sum(r) / 1000 / concurrency for r in latency]}}


def _target(p50: float, calibration: tuple[float, float] | None, seed: int,
            readings: list[float] | None = None) -> dict:
    out = {"measured": True, "sequential": _point("sequential", 1, p50, seed),
           "concurrent": _point("concurrent", 4, p50 * 1.5, seed + 1)}
    if calibration is not None:
        before, after = calibration
        out["host"] = {"before": {"calibration_ms": before, "load_1m": 3.9},
                       "after": {"calibration_ms": after, "load_1m": 4.1},
                       "calibration_ms": (before + after) / 2, "readings_ms": readings or []}
    return out


def _decide(legacy_cal, candidate_cal, candidate_p50: float = 60.0, legacy_readings=None, candidate_readings=None):
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": {"by_target": {"legacy": _target(100.0, legacy_cal, 1, legacy_readings),
                                                   "cand": _target(candidate_p50, candidate_cal, 11,
                                                                   candidate_readings)}}})
    return decide(body).latency.ratio("cand")


def test_a_loaded_legacy_phase_makes_the_faster_candidate_inconclusive() -> None:
    # the host was twice as slow while legacy was measured (another job loaded it): 0.6x is not the servers
    ratio = _decide((40.0, 41.0), (20.0, 20.4))
    seq = ratio.verdicts_at("sequential")
    assert ratio.drift is not None and ratio.drift.factor > 1.9
    assert ratio.drift.calibration_ratio < 0.55
    for figure in ("p50", "docs_per_s"):
        assert seq.figure(figure).code == "inconclusive" and seq.figure(figure).reason == "host_drift"
    assert ratio.verdict.code == "inconclusive"


def test_a_quiet_host_keeps_the_verdict() -> None:
    ratio = _decide((20.0, 20.3), (20.1, 20.2))
    seq = ratio.verdicts_at("sequential")
    assert ratio.drift.factor < 1.05
    assert seq.p50.code == "non_inferior" and seq.p50.direction == "faster"


def test_a_trend_within_one_phase_counts_when_its_readings_show_it() -> None:
    # the load began halfway through the candidate's phase: its readings step from 20 to 30 ms; a candidate 5 %
    # faster than legacy cannot be told from that
    ratio = _decide((20.0, 20.1), (20.0, 30.0), candidate_p50=95.0,
                    candidate_readings=[20.0, 20.2, 19.9, 20.1, 30.0, 29.8, 30.2, 30.0])
    assert ratio.drift.within["cand"] == 1.5
    assert ratio.drift.bound > 1.3 and ratio.drift.bound_source == "within:cand"
    assert ratio.verdicts_at("concurrent").p50.reason == "host_drift"


def test_two_readings_that_differ_are_the_gauges_noise_not_a_switch() -> None:
    # before 20, after 30 and nothing between: the gauge's interval covers 1, so the 0.6x verdict stands
    ratio = _decide((20.0, 20.1), (20.0, 30.0))
    assert ratio.drift.factor == 1.5  # what the gauge read, shown
    assert ratio.drift.bound == 1.0 and ratio.drift.bound_source is None
    assert ratio.verdicts_at("concurrent").p50.code == "non_inferior"  # faster is harmless


def test_a_noisy_gauge_on_a_quiet_host_does_not_refuse_a_26_percent_effect() -> None:
    # the demo's quiet host: 16.4 -> 19.1 ms within the legacy phase, 17.5-21.7 during the candidate's; the
    # switch rule read a 1.17 factor against the 1.10 margin and refused
    ratio = _decide((16.4, 19.1), (17.5, 21.7), candidate_p50=126.0,
                    legacy_readings=[16.4, 17.9, 16.8, 18.3, 17.2, 19.1],
                    candidate_readings=[17.5, 19.7, 18.1, 20.9, 18.4, 21.7])
    assert ratio.drift.factor > 1.10
    assert ratio.drift.calibration_low < 1 < ratio.drift.calibration_high
    assert ratio.drift.bound == 1.0
    seq = ratio.verdicts_at("sequential")
    assert seq.p50.code == "different" and seq.p50.direction == "slower"
    assert ratio.verdict.code == "different"


def test_a_difference_against_the_drift_stands_one_with_it_does_not() -> None:
    # the host was 20 % slower during the legacy phase (the readings say so clearly): a candidate 2x slower is
    # slower against the drift; one 2x faster is what such a load can do to a server (threads contend worse than
    # the single-threaded gauge), however far beyond the bound
    readings = {"legacy_readings": [24.0, 24.1, 23.9, 24.0], "candidate_readings": [20.0, 20.1, 19.9, 20.0]}
    ratio = _decide((24.0, 24.1), (20.0, 20.1), candidate_p50=200.0, **readings)
    assert 1.15 < ratio.drift.bound < 1.2 and ratio.drift.bound_source == "calibration"
    p50 = ratio.verdicts_at("sequential").p50
    assert p50.code == "different" and p50.direction == "slower"
    # the stored verdict's interval is the widened one
    assert p50.low < ratio.intervals["sequential"].p50.low
    faster = _decide((24.0, 24.1), (20.0, 20.1), candidate_p50=50.0, **readings).verdicts_at("sequential").p50
    assert faster.code == "inconclusive" and faster.reason == "host_drift"


def test_established_drift_is_the_end_nearest_one() -> None:
    assert established(0.9, 1.2) == 1.0
    assert established(1.05, 1.3) == 1.05
    assert established(0.5, 0.8) == 1.25
    assert established(None, 1.3) == 1.0


def test_without_host_records_no_drift_is_claimed() -> None:
    ratio = _decide(None, None)
    assert ratio.drift is None
    assert ratio.verdicts_at("sequential").p50.code == "non_inferior"


def _aba(candidate_p50: float):
    again = _target(130.0, (20.0, 20.1), 21)
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": {"by_target": {"legacy": _target(100.0, (20.0, 20.1), 1),
                                                   "cand": _target(candidate_p50, (20.0, 20.1), 11)}},
                         "restore": {"measured": True, "latency": again}})
    return decide(body).latency.ratio("cand")


def test_legacy_measured_again_after_the_candidates_aba() -> None:
    # the legacy server restored after the candidates is 30 % slower than its first measurement on a quiet
    # calibration: the host (or the server's own state) moved by more than the 1.10 margin
    ratio = _aba(110.0)
    assert ratio.drift.aba["sequential:p50"] == 1.3
    low, high = ratio.drift.aba_intervals["sequential:p50"]
    assert 1.2 < low < 1.3 < high < 1.45
    assert ratio.drift.bound == max(established(lo, hi) for lo, hi in ratio.drift.aba_intervals.values())
    assert ratio.drift.bound_source.startswith("aba:")
    assert ratio.verdicts_at("sequential").p50.reason == "host_drift"
    # a candidate faster than both legacy measurements is faster beyond the drift between them
    faster = _aba(50.0).verdicts_at("sequential").p50
    assert faster.code == "non_inferior" and faster.direction == "faster" and faster.reason != "host_drift"


def _foreign_phase(cores: list[float]) -> HostPhase:
    return HostPhase(before={"cpus": 2, "calibration_ms": 12.0}, after={"cpus": 2, "calibration_ms": 12.0},
                     calibration_ms=12.0, readings_ms=[12.0, 12.1, 11.9, 12.0], foreign_cores=cores)


def _foreign_target(phase: HostPhase) -> LatencyTarget:
    return LatencyTarget(measured=True, host=phase)


def test_other_jobs_cpu_during_legacy_is_a_drift_the_wall_time_gauge_missed() -> None:
    # a busy loop per core while legacy ran: the calibration read the same 12 ms in both phases
    drift = host_drift("legacy", _foreign_target(_foreign_phase([1.9, 2.0, 1.95, 1.9])), "candidate",
                       _foreign_target(_foreign_phase([0.02, 0.05, 0.01, 0.03])))
    assert drift.bound_source == "foreign_cpu"
    assert 1.85 < drift.bound < 2.0  # 1 + the established share difference (~0.95 of the two cores)
    assert drift.foreign_cores == {"legacy": pytest.approx(1.9375), "candidate": pytest.approx(0.0275)}
    assert suspect(drift) == ("faster",)  # legacy slowed: the candidate looks faster


def test_a_quiet_host_establishes_no_foreign_drift() -> None:
    drift = host_drift("legacy", _foreign_target(_foreign_phase([0.02, 0.06, 0.01])), "candidate",
                       _foreign_target(_foreign_phase([0.03, 0.01, 0.05])))
    assert drift.foreign_low < 0 < drift.foreign_high
    assert drift.bound == 1.0 and drift.bound_source is None


def test_foreign_load_during_the_candidate_is_suspected_of_slowing_it() -> None:
    drift = host_drift("legacy", _foreign_target(_foreign_phase([0.0, 0.0, 0.01])), "candidate",
                       _foreign_target(_foreign_phase([1.0, 1.1, 0.9])))
    assert drift.bound_source == "foreign_cpu" and suspect(drift) == ("slower",)


def test_without_segments_there_is_no_foreign_gauge() -> None:
    drift = host_drift("legacy", _foreign_target(_foreign_phase([])), "candidate", _foreign_target(_foreign_phase([0.5])))
    assert drift.foreign_low is None and "foreign_cpu" != drift.bound_source


def test_a_legacy_phase_loaded_by_other_jobs_never_makes_the_candidate_faster() -> None:
    # the same calibration readings in both phases (the wall-time gauge missed the load), legacy 1/0.6 slower
    readings = [20.0, 20.4, 19.8, 20.1, 20.2]
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": {"by_target": {"legacy": _target(100.0, (20.0, 20.0), 1, readings),
                                                   "cand": _target(60.0, (20.0, 20.0), 11, readings)}}})
    body.latency.by_target["legacy"].host.foreign_cores = [1.9, 2.0, 1.95]
    body.latency.by_target["cand"].host.foreign_cores = [0.02, 0.0, 0.04]
    ratio = decide(body).latency.ratio("cand")
    assert ratio.drift.bound_source == "foreign_cpu"
    for point in ("sequential", "concurrent"):
        verdict = ratio.verdicts[point].p50
        assert verdict.direction != "faster" and verdict.code == "inconclusive" and verdict.reason == "host_drift"


def test_the_interval_each_verdict_was_decided_on_is_stored_wider_than_the_ratio_s_own() -> None:
    """Where the bound exceeds 1, ``widened`` holds each figure's 95 % interval widened by it (what the post prints
    under the drift label): wider than the ratio's own on both sides, at any n; absent where the bound is 1."""
    from embedswap.analysis.latency_verdicts import widened

    ratio = _decide((40.0, 41.0), (20.0, 20.4))
    assert ratio.drift is not None and ratio.drift.bound is not None and ratio.drift.bound > 1
    assert set(ratio.widened) == set(ratio.intervals)
    for run, point in ratio.intervals.items():
        for figure in ("p50", "docs_per_s"):
            own, wide = getattr(point, figure), getattr(ratio.widened[run], figure)
            assert (wide.low, wide.high) == widened(own.low, own.high, ratio.drift.bound, 0.05)
            assert wide.low < own.low and wide.high > own.high
    quiet = _decide((20.0, 20.0), (20.0, 20.0))
    assert quiet.widened == {} and (quiet.drift is None or quiet.drift.bound is None or quiet.drift.bound <= 1)


def test_a_summary_decided_before_it_gets_it_at_load_and_its_post_drawn_again() -> None:
    """A summary whose ratio was widened before ``widened`` was stored: computed at load from the stored interval
    and bound, and the post's drift-labelled claims print it (they printed the verdict's narrower interval)."""
    import json
    from pathlib import Path

    from embedswap.analysis.latency_verdicts import widened_intervals
    from embedswap.analysis.upgrade import read_summary, upgrade_summary
    from embedswap.report.post_checks import document_problems

    path = Path(__file__).parents[1] / "fixtures" / "summary_complete.json"
    data = upgrade_summary(json.loads(path.read_text(encoding="utf-8")))
    entry = data["decisions"]["latency"]["ratios"]["vllm"]
    entry["drift"] = {**entry.get("drift", {}), "factor": 1.08, "bound": 1.08}
    entry.pop("widened", None)
    data["schema_version"] = 3  # as a version-3 kit stored it
    again = read_summary(data)
    ratio = again.decisions.latency.ratios["vllm"]
    assert ratio.widened == widened_intervals(ratio.intervals, 1.08, 0.05)
    claims = [c for s in again.decisions.post.document.statements("post.latency_claim") for c in s.claims
              if c.subjects == ["vllm"] and c.estimate.interval == "widened_by_drift"]
    assert claims and all(".widened." in c.figure_source for c in claims)
    assert document_problems(again) == []
