"""decisions.capacity from a summary's open-loop runs: the knee per repeat, the interval over repeats, the ratio
verdict, replicas for the traffic, where load shedding starts, and why goodput is below throughput."""

from __future__ import annotations

from typing import Any

import pytest

from embedswap.analysis import capacity, decide
from embedswap.analysis import decisions_config
from embedswap.config.decisions import DecisionsConfig, Margins
from typed_summary import summary_body

SLO = 500.0


def _run(rate: float, repeat: int, p99: float, *, misses: list[str] | None = None, shed: int = 0,
         wrong: int = 0, valid: bool = True, n: int = 40) -> dict[str, Any]:
    why = misses if misses is not None else (["p99"] if p99 > SLO else [])
    return {"rate": rate, "repeat": repeat, "requests": n, "answered": n - shed, "p99_ms": p99, "p50_ms": p99 / 3,
            "throughput": rate, "goodput": rate * (n - wrong) / n, "shed": shed, "shed_share": shed / n,
            "wrong_vectors": wrong, "valid": valid, "misses": why if valid else ["invalid"],
            "statuses": {"ok": n - shed, **({"429": shed} if shed else {})}}


def _capacity(body):
    """decisions.capacity against the decisions block the summary carries (as decide() reads it)."""
    return capacity.capacity_decisions(body, decisions_config(body))


def _summary(by_target: dict[str, list[dict[str, Any]]], traffic: float | None = 30.0):
    return summary_body({
        "roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
        "capacity": {"measured": True, "slo_p99_ms": SLO, "traffic": traffic, "by_target": {
            name: {"measured": True, "runs": runs} for name, runs in by_target.items()}},
    })


def _sweep(knees: list[float]) -> list[dict[str, Any]]:
    """Rates 2, 4, 8, 16 per repeat; p99 crosses the target at each repeat's knee (linear in rate)."""
    runs = []
    for repeat, knee in enumerate(knees):
        for rate in (2.0, 4.0, 8.0, 16.0):
            runs.append(_run(rate, repeat, SLO * rate / knee))
    return runs


def test_capacity_is_the_interpolated_knee_with_an_interval_over_repeats_and_replicas_for_the_traffic() -> None:
    decisions = _capacity(_summary({"legacy": _sweep([5.0, 6.0, 5.5]),
                                                      "cand": _sweep([10.0, 11.0, 12.0])}))
    legacy = decisions.servers["legacy"]
    assert legacy.per_repeat == pytest.approx([5.0, 6.0, 5.5])
    assert legacy.low < legacy.capacity < legacy.high and legacy.capacity == pytest.approx(5.48, abs=0.01)
    assert legacy.met_rate == 4.0 and legacy.missed_rate == 8.0 and legacy.limit == "p99"
    assert legacy.replicas == 6 and legacy.replicas_low <= 6 <= legacy.replicas_high
    ratio = decisions.ratios["cand"]
    assert ratio.estimate == pytest.approx(2.0, rel=0.05)
    assert ratio.code in ("different", "non_inferior") and ratio.direction == "faster"


def test_a_server_that_sheds_load_is_reported_from_the_rate_where_it_starts() -> None:
    runs = []
    for repeat in range(2):
        runs += [_run(2.0, repeat, 100.0), _run(4.0, repeat, 120.0, shed=10, misses=["errors"]),
                 _run(8.0, repeat, 110.0, shed=30, misses=["errors"])]
    server = _capacity(_summary({"legacy": runs})).servers["legacy"]
    assert server.sheds_from == 4.0 and server.shed_share == pytest.approx(0.25)
    assert server.shed_share_max == pytest.approx(0.75)
    assert server.capacity == pytest.approx(2.0) and server.limit == "errors"  # no interpolation past errors


def test_wrong_vectors_are_not_capacity_and_explain_the_goodput_gap() -> None:
    runs = [_run(r, k, 50.0, wrong=40, misses=["wrong_vectors"]) for k in range(2) for r in (2.0, 4.0)]
    server = _capacity(_summary({"legacy": runs})).servers["legacy"]
    assert server.capacity is None and server.censored == "below" and server.limit == "wrong_vectors"
    assert server.goodput_gap == "wrong_vectors" and server.goodput_gap_share == 1.0


def test_an_invalid_run_is_not_charged_to_the_server() -> None:
    runs = [_run(2.0, 0, 100.0), _run(4.0, 0, 9000.0, valid=False)]
    server = _capacity(_summary({"legacy": runs})).servers["legacy"]
    assert server.invalid_rates == [4.0] and server.limit == "invalid"
    assert server.capacity == 2.0 and server.points[1].p99_ms is None  # no figure from an invalid run


def test_the_decisions_are_typed_in_the_summary() -> None:
    decisions = decide(_summary({"legacy": _sweep([5.0, 6.0]), "cand": _sweep([10.0, 11.0])}))
    assert decisions.capacity is not None and decisions.capacity.of("cand").capacity > 9
    assert decisions.capacity.ratios["cand"].code in ("different", "non_inferior")
    assert decide(summary_body({})).capacity is None  # not configured: no decision


def test_the_margin_is_the_typed_configs() -> None:
    """decide() passes the experiment's typed decisions down: the capacity ratio's margin is its throughput_ratio,
    not a default written again in the module."""
    body = _summary({"legacy": _sweep([5.0, 6.0]), "cand": _sweep([10.0, 11.0])})
    assert decide(body).capacity.ratios["cand"].margin == Margins().throughput_ratio
    wider = DecisionsConfig(margins=Margins(throughput_ratio=3.0))
    assert decide(body, wider).capacity.ratios["cand"].margin == 3.0


def test_a_capacity_that_is_only_a_lower_bound_decides_no_ratio() -> None:
    every_rate_met = [_run(r, k, 100.0) for k in range(2) for r in (2.0, 4.0)]
    decisions = _capacity(_summary({"legacy": every_rate_met, "cand": every_rate_met}))
    assert decisions.servers["legacy"].censored == "above"
    ratio = decisions.ratios["cand"]
    assert ratio.code == "inconclusive" and ratio.reason == "capacity_censored" and ratio.low is None
