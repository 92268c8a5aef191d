"""latency.open_loop, latency.traffic and latency.retry_after in experiment.yaml: defaults, errors that name the key,
the demo's budget (off in the lean demo, a short ramp in demo-full)."""

from __future__ import annotations

from pathlib import Path

import pytest

from embedswap.config import ConfigError, load_experiment, parse_experiment
from embedswap.scaffold import new_experiment

BASE = {"name": "x", "date": "2026-12-02", "workload": "sample", "targets": {"legacy": {"kind": "legacy", "port": 18081},
        "vllm": {"kind": "vllm", "port": 18082}}, "legacy": "legacy", "candidates": ["vllm"]}


def _latency(latency: dict) -> dict:
    return {**BASE, "latency": latency}


def test_off_unless_configured_and_its_defaults() -> None:
    assert parse_experiment(BASE).latency.open_loop is None
    cfg = parse_experiment(_latency({"open_loop": {"slo": {"p99_ms": 300}}, "traffic": 40}))
    ol = cfg.latency.open_loop
    assert ol.rates == "auto" and ol.arrival == "poisson" and ol.documents == 8 and ol.repeats == 2
    assert ol.requests_at(5.0) == 40 and cfg.latency.traffic == 40 and cfg.latency.retry_after == "count"
    seconds = parse_experiment(_latency({"open_loop": {"slo": {"p99_ms": 300}, "seconds": 3}})).latency.open_loop
    assert seconds.requests_at(5.0) == 15 and seconds.requests_at(0.1) == 2


@pytest.mark.parametrize("latency, expected", [
    ({"open_loop": {"slo": {"p99_ms": 300}, "rate": [1]}}, "latency.open_loop.rate"),
    ({"open_loop": {"rates": [1]}}, "missing key 'latency.open_loop.slo'"),
    ({"open_loop": {"slo": {"p99_ms": 300}, "arrival": "bursty"}}, "latency.open_loop.arrival"),
    ({"open_loop": {"slo": {"p99_ms": 300}, "requests": 5, "seconds": 2}}, "not both"),
    ({"open_loop": {"slo": {"p99_ms": 100, "p50_ms": 200}}}, "p50_ms is above"),
    ({"retry_after": "ignore"}, "latency.retry_after"),
    ({"traffic": 0}, "latency.traffic"),
])
def test_a_wrong_key_or_value_is_one_error_naming_it(latency: dict, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace(".", r"\.")):
        parse_experiment(_latency(latency))


def test_the_lean_demo_leaves_it_off_and_demo_full_runs_a_short_ramp(tmp_path: Path) -> None:
    lean = load_experiment(new_experiment("lean", tmp_path, lean=True))
    full = load_experiment(new_experiment("full", tmp_path))
    assert lean.latency.open_loop is None
    ol = full.latency.open_loop
    assert ol is not None and ol.rates == "auto" and ol.auto.max_steps <= 6 and full.latency.traffic is not None
