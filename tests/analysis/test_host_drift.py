"""Host drift: a ratio whose host drift (the calibration workload's time between the legacy and the candidate
phase, each phase's before/after, or the legacy server's A-B-A) exceeds the ratio's margin is inconclusive with
reason host_drift; the drift is stored beside it."""

from __future__ import annotations

import numpy as np
from typed_summary import summary_body

from embedswap.analysis import decide


def _point(run: str, concurrency: int, p50: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    latency = [[round(float(x), 3) for x in rng.lognormal(np.log(p50), 0.1, 30)] for _ in range(3)]
    return {"run": run, "concurrency": concurrency, "repeats": 3, "requests_per_repeat": 30, "p50_ms": p50,
            "requests": {"latency_ms": latency, "docs": [[8] * 30 for _ in range(3)],
                         "wall_s": [sum(r) / 1000 / concurrency for r in latency]}}


def _target(p50: float, calibration: tuple[float, float] | None, seed: int) -> dict:
    out = {"measured": True, "sequential": _point("sequential", 1, p50, seed),
           "concurrent": _point("concurrent", 4, p50 * 1.5, seed + 1)}
    if calibration is not None:
        before, after = calibration
        out["host"] = {"before": {"calibration_ms": before, "load_1m": 3.9},
                       "after": {"calibration_ms": after, "load_1m": 4.1},
                       "calibration_ms": (before + after) / 2}
    return out


def _decide(legacy_cal, candidate_cal):
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": {"by_target": {"legacy": _target(100.0, legacy_cal, 1),
                                                   "cand": _target(60.0, candidate_cal, 11)}}})
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


def test_drift_within_one_phase_counts() -> None:
    # the load began halfway through the candidate's phase: its calibration after is 1.5x its before
    ratio = _decide((20.0, 20.1), (20.0, 30.0))
    assert ratio.drift.within["cand"] == 1.5
    assert ratio.verdicts_at("concurrent").p50.reason == "host_drift"


def test_without_host_records_no_drift_is_claimed() -> None:
    ratio = _decide(None, None)
    assert ratio.drift is None
    assert ratio.verdicts_at("sequential").p50.code == "non_inferior"


def test_legacy_measured_again_after_the_candidates_aba() -> None:
    # the legacy server restored after the candidates: 30 % slower than its first measurement on a quiet
    # calibration: the host (or the server's own state) moved by more than the 1.10 margin
    again = _target(130.0, (20.0, 20.1), 21)
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": {"by_target": {"legacy": _target(100.0, (20.0, 20.1), 1),
                                                   "cand": _target(60.0, (20.0, 20.1), 11)}},
                         "restore": {"measured": True, "latency": again}})
    ratio = decide(body).latency.ratio("cand")
    assert ratio.drift.aba["sequential:p50"] == 1.3
    assert ratio.drift.factor >= 1.3
    assert ratio.verdicts_at("sequential").p50.reason == "host_drift"
