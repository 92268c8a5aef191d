"""``sequencing.interleave``: a candidate's article points measured in blocks alternating with the legacy server's.

Two real fake HTTP servers of known speed (tests/support/fakeservers.py) answer at once; the real capture writes
the candidate's runs and the legacy runs interleaved with them, the real summary section and ``decide`` read them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))

from embedswap.analysis import decide  # noqa: E402
from embedswap.captures import PAIRED_LEGACY, new_attempt  # noqa: E402
from embedswap.config import parse_experiment  # noqa: E402
from embedswap.config.base import ConfigError  # noqa: E402
from embedswap.measure import host_state  # noqa: E402
from embedswap.measure.capture import capture_target_latency  # noqa: E402
from embedswap.measure.latency import block_order  # noqa: E402
from embedswap.measure.workload import load_workload  # noqa: E402
from embedswap.summary.sections.latency import latency_section  # noqa: E402
from embedswap.targets import build_target  # noqa: E402

from fakeservers import Behaviour, serve  # noqa: E402
from make_summary_complete import EXPERIMENT  # noqa: E402
from realkit import quick_host_calibration  # noqa: E402
from typed_summary import summary_body  # noqa: E402

LATENCY = {"sequential_requests": 6, "concurrent_requests": 8, "concurrency": 2, "repeats": 3,
           "warmup_requests": 0, "sweep": []}


def _experiment(legacy_port: int, candidate_port: int, **sequencing: bool):
    return parse_experiment({
        **EXPERIMENT,
        "targets": {"legacy": {"kind": "external", "url": f"http://127.0.0.1:{legacy_port}/v1"},
                    "cand": {"kind": "external", "url": f"http://127.0.0.1:{candidate_port}/v1"}},
        "candidates": ["cand"], "ablations": [], "latency": LATENCY,
        "sequencing": {"stop_legacy_before_candidates": False, "restore_legacy": False, **sequencing}})


def test_interleave_needs_both_servers_up_and_the_error_names_the_keys() -> None:
    with pytest.raises(ConfigError) as info:
        parse_experiment({**EXPERIMENT, "sequencing": {"interleave": True}})
    assert "sequencing.interleave" in str(info.value) and "stop_legacy_before_candidates" in str(info.value)


def test_block_order_is_seeded_and_both_orders_occur() -> None:
    orders = [block_order("cand", run, repeat) for run in ("sequential", "concurrent") for repeat in range(8)]
    assert orders == [block_order("cand", run, repeat) for run in ("sequential", "concurrent") for repeat in range(8)]
    assert set(orders) == {("target", "paired"), ("paired", "target")}


@pytest.mark.parametrize("seed", ["cand", "same", "vllm", "dynamo", "e5"])
@pytest.mark.parametrize("run", ["sequential", "concurrent"])
def test_block_order_is_counterbalanced(seed: str, run: str) -> None:
    # each pair of consecutive repeats runs both orders: over an even number of repeats each side goes first as often
    # (a coin per repeat put the A/A runs' candidate `same` second in all four concurrent blocks)
    for repeat in range(0, 8, 2):
        assert {block_order(seed, run, repeat), block_order(seed, run, repeat + 1)} == {
            ("target", "paired"), ("paired", "target")}


def _count_foreign_marks(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """Every ForeignCpu.mark of the capture (the segments' ends; the fake servers are external targets: no pids,
    so no segment is recorded to count)."""
    marks: list[None] = []
    real = host_state.ForeignCpu.mark

    def mark(self: host_state.ForeignCpu) -> None:
        marks.append(None)
        real(self)

    monkeypatch.setattr(host_state.ForeignCpu, "mark", mark)
    return marks


def test_an_interleaved_capture_pairs_the_candidate_with_legacy_runs_of_the_same_phase(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marks = _count_foreign_marks(monkeypatch)
    legacy_server, candidate_server = Behaviour(service_ms=4, seed=1), Behaviour(service_ms=12, seed=2)
    with serve(legacy_server) as legacy_port, serve(candidate_server) as candidate_port:
        experiment = _experiment(legacy_port, candidate_port, interleave=True)
        attempt = new_attempt(tmp_path)
        workload = load_workload(experiment, tmp_path)
        capture_target_latency(build_target(experiment, "cand", tmp_path), experiment, workload, attempt, "cand")
    own = attempt.read_json("cand/latency_stats.json")
    paired = attempt.read_json(f"cand/{PAIRED_LEGACY}/latency_stats.json")
    assert paired["interleaved_with"] == "cand"
    assert paired["host"] == own["host"]  # one phase: both sides saw the same host readings
    # the calibration before and after the phase only: both sides share every reading, so a reading between the
    # blocks decided nothing (ratio 1, no within-phase bound for an interleaved ratio) and cost ~0.65 s each
    assert len(own["host"]["readings_ms"]) == 2
    # the foreign CPU still per segment: a mark at the start, after every block of either side
    # (2 points x 3 repeats x 2 sides) and at the end
    assert len(marks) == 1 + 2 * 3 * 2 + 1
    for stats in (own, paired):
        assert stats["sequential"]["repeats"] == 3 and stats["concurrent"]["repeats"] == 3
    embeds = [path for _, path, _ in legacy_server.requests if path.endswith("/embeddings")]
    assert len(embeds) == 3 * (6 + 8)  # legacy answered its own blocks, and only during the candidate's phase
    section = latency_section(experiment, attempt)
    assert set(section["paired_legacy"]) == {"cand"}
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]},
                         "latency": section})
    decided = decide(body).latency.ratio("cand")
    assert decided.drift is not None and decided.drift.design == "interleaved"
    # a trend within the one phase reached both sides alike: no bound from it, nor from A-B-A
    assert decided.drift.bound_source is None and decided.drift.bound == 1.0 and not decided.drift.aba
    p50 = decided.figure("sequential", "p50")
    assert p50 is not None and p50.value > 1.5  # 12 ms against 4 ms (plus the client's time on each side)


def test_without_interleave_a_candidate_is_measured_alone(tmp_path: Path) -> None:
    legacy_server = Behaviour(service_ms=1, seed=1)
    with serve(legacy_server) as legacy_port, serve(Behaviour(service_ms=1, seed=2)) as candidate_port:
        experiment = _experiment(legacy_port, candidate_port)
        attempt = new_attempt(tmp_path)
        workload = load_workload(experiment, tmp_path)
        capture_target_latency(build_target(experiment, "cand", tmp_path), experiment, workload, attempt, "cand")
    assert not attempt.has(f"cand/{PAIRED_LEGACY}/latency_stats.json")
    # a phase of its own keeps a reading after each run (2 points x 3 repeats): host_drift's within-phase trend and
    # the between-phases interval read them
    assert len(attempt.read_json("cand/latency_stats.json")["host"]["readings_ms"]) == 2 + 2 * 3
    assert not legacy_server.requests
    assert "paired_legacy" not in latency_section(experiment, attempt)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)


@pytest.fixture(autouse=True)
def _quick_calibration() -> Iterator[None]:
    """The host readings' number and sharing are asserted here, not their values (a reading after each of 12 blocks
    was most of the first capture's time; tests/analysis/test_host_drift.py decides on real readings)."""
    with quick_host_calibration():
        yield
