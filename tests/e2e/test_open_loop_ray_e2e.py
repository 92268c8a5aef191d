"""End to end: the open-loop sweep sent by two Ray workers (a local Ray the kit starts and stops itself) against an
M/G/1 fake server finds the capacity at the p99 target that one in-process sender finds: the two intervals over
repeats overlap (a split that sent half or twice the rate would move the capacity by 2x); each worker's records are merged with its worker marked, and nothing of Ray is left
running after the step.

The server (tests/support/mg1server.py, a process of its own) serves one request at a time for a gamma service time
of mean 40 ms (25 requests/s at full load): its p99 crosses 250 ms well inside the swept rates (6-30/s), whichever
client sends, so both sweeps meet the same knee; a first version (20 ms, rates up to 40/s) put the knee so near the
top rate that on a loaded host one repeat passed every rate and the capacity was censored above.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psutil
import pytest

from embedswap.analysis.capacity import server_capacity
from embedswap.captures import Attempt
from embedswap.config.experiment import parse_experiment
from embedswap.measure.open_loop_capture import capture_open_loop
from embedswap.measure.workload import Document, Workload
from embedswap.summary.sections.capacity import capacity_section
from embedswap.summary.types_capacity import Capacity, CapacityTarget, ServerCapacity
from fakeservers import unit_vector
from mg1server import mg1_process
from ports import free_ports

pytest.importorskip("ray", reason="the scale extra (pip install 'embedswap[scale]') is not installed")
pytestmark = [pytest.mark.e2e, pytest.mark.quiet_host]  # decides latency verdicts: run alone

DOCS = [Document(f"d{i}", f"document number {i}") for i in range(16)]
# 2 s a rate (3 s before issue 61's quiet-pass cut: each sweep's 15 runs sent for 51 s, now 34): a seeded Poisson
# schedule of 2 s is the first two thirds of the 3 s one (the same seed draws the same first gaps), and the M/G/1
# server answers them in arrival order, so the last CI run's 3 s records cut to their first 2 s are what a 2 s sweep
# reads. Per-repeat capacities there, 3 s -> 2 s: single 22.9 19.1 24.2 -> 23.3 21.5 24.4 (interval 17.8-27.1 ->
# 20.7-25.6), Ray 13.2 18.0 19.9 -> 14.1 21.6 19.8 (11.7-24.1 -> 12.4-26.6): the intervals still overlap, and a
# split that sent twice the rate (Ray's capacities halved: 6.2-13.3) would still miss the single interval, as at 3 s
# (5.9-12.1); one that sent half the rate would meet every rate up to 30/s (censored, asserted against). At 1.5 s a
# repeat's knee reached 26.6/s, near the top rate, where a met 30/s censors the capacity: 2 s keeps that margin.
# Two runs at 2 s (under the e2e lock, load ~2.6): single 21.5 19.7 24.8 (18.0-26.6) both times, Ray 15.2 10.9 21.6
# (8.6-27.2) and 15.3 11.0 21.5 (8.7-27.1): overlap; Ray's interval halved, 4.3-13.6, misses the single one by 1.3x.
# Ray's 10.9 is a knee below 12/s, placed between 6 and 12: the lowest rate is why 6/s stays in the grid.
OPEN_LOOP = {"rates": [6, 12, 18, 24, 30], "seconds": 2, "arrival": "poisson", "documents": 1,
             "slo": {"p99_ms": 250}, "repeats": 3, "seed": 3, "max_lag_ms": 100}


class Target:
    def __init__(self, url: str) -> None:
        self.base_url = url

    def api_shape(self) -> str:
        return "openai"

    def headers(self) -> dict[str, str]:
        return {}

    def verify_tls(self) -> bool:
        return True

    def embeddings_path(self) -> str:
        return "/v1/embeddings"

    def alive(self) -> bool:
        return True


def _experiment(workers: int) -> object:
    return parse_experiment({
        "name": "scale", "date": "2026-12-03", "workload": {"documents": "docs.jsonl", "batch_size": 4},
        "targets": {"legacy": {"kind": "legacy", "port": 18081}, "single": {"kind": "legacy", "port": 18082},
                    "ray": {"kind": "legacy", "port": 18083}},
        "legacy": "legacy", "candidates": ["single", "ray"],
        "latency": {"open_loop": {**OPEN_LOOP, "workers": workers}},
    })


def _ray_processes() -> list[str]:
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(process.info.get("cmdline") or [])
        if "embedswap-ray-" in line or ("raylet" in line and "embedswap" in line):
            found.append(f"{process.info['pid']}: {line[:120]}")
    return found


def _capacity(experiment: object, attempt: Attempt, name: str) -> ServerCapacity:
    section = capacity_section(experiment, attempt)  # type: ignore[arg-type]
    assert section is not None
    head = Capacity.model_validate({k: v for k, v in section.items() if k != "by_target"})
    return server_capacity(CapacityTarget.model_validate(section["by_target"][name]), head)


@pytest.fixture
def warm_actor_lead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared start 0.5 s ahead instead of LEAD_S's 2 s: 2 s a run was 30 s of this test (15 runs). The lead is
    for the parts to reach the actors; here both actors are up before the first run (``RayPool`` waits for them)
    and none is lost, so a part is one call to a warm local actor. A part that arrived late would show as lag on
    its first sends, and a lag over ``max_lag_ms`` (100 ms) voids the run, which the capacity and the overlap
    below would read."""
    from embedswap.measure import open_loop_workers

    monkeypatch.setattr(open_loop_workers, "LEAD_S", 0.5)


@pytest.mark.usefixtures("warm_actor_lead")
def test_two_ray_workers_find_the_capacity_one_process_finds(tmp_path: Path) -> None:
    attempt = Attempt(tmp_path, tmp_path / "attempts" / "a")
    attempt.write_array("legacy/doc_vectors.npy", np.stack([unit_vector(d.text) for d in DOCS])[None].astype(np.float32))
    workload = Workload(DOCS, batch_size=4)
    single, split = _experiment(1), _experiment(2)
    (port,) = free_ports(1)
    with mg1_process(port, mean_service_s=0.04, seed=1) as url:
        capture_open_loop(Target(url), single, workload, attempt, "single")  # type: ignore[arg-type]
        capture_open_loop(Target(url), split, workload, attempt, "ray")  # type: ignore[arg-type]
    assert _ray_processes() == []  # the kit's Ray is stopped with its step
    rows = attempt.read_jsonl("ray/open_loop_requests.jsonl")
    assert {r["worker"] for r in rows} == {0, 1} and all(r["cosine_min"] == pytest.approx(1.0, abs=1e-5)
                                                         for r in rows if r["status"] == 200)
    meta = attempt.read_json("ray/open_loop_runs.json")
    assert all(run["workers"] == 2 and run["lost_workers"] == {} for run in meta["runs"])
    # each run's first send of each worker: how late its part started against the shared start
    first: dict[tuple[float, int, int], float] = {}
    for r in rows:
        first.setdefault((r["rate"], r["repeat"], r["worker"]), r["lag_ms"])
    print("first sends' lag ms, max:", max(first.values()), "median:", sorted(first.values())[len(first) // 2])
    one, two = _capacity(single, attempt, "single"), _capacity(split, attempt, "ray")
    print("capacity per repeat, single:", one.per_repeat, (one.low, one.high),
          "ray:", two.per_repeat, (two.low, two.high))
    assert one.censored == "none" and two.censored == "none", (one, two)
    assert None not in (one.low, one.high, two.low, two.high), (one, two)
    # overlap, not one point inside the other's interval: Ray's raylet and two worker processes share the 2 cores
    # with the server, so on a loaded host the split sender reads a lower capacity (measured 2026-12-04: single
    # 19.0-24.2/s per repeat, Ray 13.2-19.7/s)
    assert one.low <= two.high and two.low <= one.high, (one.per_repeat, two.per_repeat)
