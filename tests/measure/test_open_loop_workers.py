"""A run split across workers: the schedule dealt out every N-th arrival, the records merged back, each worker's lag
kept, a run invalid naming its worker (behind or lost), and Ray's absence said in one line. The senders here are
threads (the Ray pool's actors run the same ``send_part``); the Ray pool itself is run in tests/e2e."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from embedswap.analysis.capacity import server_capacity
from embedswap.captures import Attempt
from embedswap.config.experiment import parse_experiment
from embedswap.measure.errors import StepFailed
from embedswap.measure.open_loop import OpenRecord, Request, plan, records_json
from embedswap.measure.open_loop_capture import capture_open_loop
from embedswap.measure.open_loop_stats import misses, run_figures
from embedswap.measure.open_loop_workers import (Part, PartResult, SendSettings, merge, run_split, send_part,
                                                 split)
from embedswap.measure.workload import Document, Workload
from embedswap.summary.sections.capacity import capacity_section
from embedswap.summary.types_capacity import Capacity, CapacityTarget
from mg1server import mg1_server

DOCS = [Document(f"d{i}", f"document number {i}") for i in range(16)]
STACK = np.random.default_rng(0).normal(size=(1, len(DOCS), 16)).astype(np.float32)
VECTORS = {d.text: STACK[0, i].tolist() for i, d in enumerate(DOCS)}
REQUESTS = [Request((f"d{i}",), b"{}") for i in range(5)]


def test_every_nth_arrival_goes_to_one_worker_and_the_merge_is_the_single_schedule() -> None:
    planned = plan(REQUESTS, 50.0, 0, 23, seed=4)
    single = [(r.seq, r.scheduled_s, index) for r, index in plan(REQUESTS, 50.0, 0, 23, seed=4)]
    parts = split(planned, 3)
    assert [len(p.planned) for p in parts] == [8, 8, 7]
    assert [r.seq for r, _ in parts[1].planned] == list(range(1, 23, 3))
    assert all(r.worker == p.worker for p in parts for r, _ in p.planned)
    merged = merge([PartResult(p.worker, [r for r, _ in p.planned], 1.0 + p.worker) for p in reversed(parts)])
    assert [(r.seq, r.scheduled_s) for r in merged.records] == [(s, t) for s, t, _ in single]
    assert merged.wall_s == 3.0 and merged.lost == {}
    with pytest.raises(ValueError):
        split(planned, 0)


def test_a_lost_worker_leaves_the_others_records_and_is_named() -> None:
    parts = split(plan(REQUESTS, 10.0, 0, 6), 2)
    merged = merge([PartResult(0, [r for r, _ in parts[0].planned], 0.6),
                    PartResult(1, None, None, "ActorDiedError: the actor died unexpectedly")])
    assert [r.seq for r in merged.records] == [0, 2, 4]
    assert merged.lost == {"1": "ActorDiedError: the actor died unexpectedly"}


def _row(seq: int, worker: int, lag: float) -> dict:
    return {"rate": 10.0, "repeat": 0, "seq": seq, "worker": worker, "scheduled_s": seq * 0.1,
            "sent_s": seq * 0.1 + lag / 1000, "done_s": seq * 0.1 + 0.05, "lag_ms": lag, "latency_ms": 50.0,
            "service_ms": 40.0, "status": 200, "docs": 1, "cosine_min": 1.0}


def test_each_workers_lag_is_kept_and_an_invalid_run_names_the_worker_behind() -> None:
    rows = [_row(i, i % 2, 1.0 if i % 2 == 0 else 400.0) for i in range(20)]
    figures = run_figures(rows, 10.0, slo_p99_ms=500.0, gate=0.99, max_lag_ms=50.0)
    assert figures["worker_lag_p90_ms"] == {"0": pytest.approx(1.0), "1": pytest.approx(400.0)}
    assert figures["valid"] is False and figures["invalid_worker"] == 1
    assert misses(figures, 500.0, None, 0.01) == ["invalid"]
    kept = run_figures([_row(i, i % 2, 1.0) for i in range(20)], 10.0, slo_p99_ms=500.0, gate=0.99, max_lag_ms=50.0)
    assert kept["valid"] is True and kept["invalid_worker"] is None
    lost = run_figures([_row(i, 0, 1.0) for i in range(0, 20, 2)], 10.0, slo_p99_ms=500.0, gate=0.99,
                       max_lag_ms=50.0, lost={"1": "WorkerCrashedError"})
    assert lost["valid"] is False and lost["invalid_worker"] == 1 and lost["lost_workers"] == {"1": "WorkerCrashedError"}
    one = run_figures([{**_row(i, 0, 1.0), "worker": None} for i in range(5)], 10.0, slo_p99_ms=500.0, gate=0.99,
                      max_lag_ms=50.0)
    assert one["worker_lag_p90_ms"] == {}  # one in-process sender: nothing per worker


class ThreadPool:
    """Senders as threads, each sending its part like a Ray actor does; ``lose`` maps a rate to the worker lost."""

    def __init__(self, workers: int, settings: SendSettings, lose: dict[float, int] | None = None) -> None:
        self.workers = workers
        self.settings = settings
        self.lose = lose or {}

    def run(self, parts: list[Part], start_at: float) -> list[PartResult]:
        results: dict[int, PartResult] = {}

        def work(part: Part) -> None:
            rate = part.planned[0][0].rate if part.planned else None
            if self.lose.get(rate) == part.worker:  # type: ignore[arg-type]
                results[part.worker] = PartResult(part.worker, None, None, "ActorDiedError: killed mid-run")
                return
            results[part.worker] = send_part(self.settings, part, start_at)

        threads = [threading.Thread(target=work, args=(p,)) for p in parts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [results[p.worker] for p in parts]


class FakeTarget:
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


def _experiment(open_loop: dict) -> object:
    return parse_experiment({
        "name": "capacity", "date": "2026-12-02", "workload": {"documents": "docs.jsonl", "batch_size": 4},
        "targets": {"legacy": {"kind": "legacy", "port": 18081}, "cand": {"kind": "legacy", "port": 18082}},
        "legacy": "legacy", "candidates": ["cand"],
        "latency": {"traffic": 12, "open_loop": {"slo": {"p99_ms": 2000}, "documents": 2, "max_lag_ms": 1000,
                                                 **open_loop}},
    })


@pytest.fixture
def thread_lead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared start 0.5 s ahead instead of LEAD_S's 2 s, for the senders here, threads or the fake Ray's
    in-process actors: the lead is for real Ray actors to receive their parts (tests/e2e/test_open_loop_ray_e2e.py);
    a thread starts in milliseconds, and 2 s a run were most of these tests' time. A thread that started late would
    show as lag (max_lag_ms) or a late last send."""
    from embedswap.measure import open_loop_workers

    monkeypatch.setattr(open_loop_workers, "LEAD_S", 0.5)


@pytest.mark.usefixtures("thread_lead")
def test_a_worker_killed_mid_rate_voids_that_rate_naming_it_and_the_sweep_is_kept(tmp_path: Path) -> None:
    # 8, 16 and 32 a second, not 4, 8 and 16 (issue 61: 3.5 s of sends became 1.75): 8 constant arrivals a run, each
    # answered in ~5 ms, so every rate is met whatever the host, as at the lower rates
    experiment = _experiment({"rates": [8, 16, 32], "requests": 8, "arrival": "constant", "repeats": 1,
                              "workers": 2})
    attempt = Attempt(tmp_path, tmp_path / "attempts" / "a")
    attempt.write_array("legacy/doc_vectors.npy", STACK)
    with mg1_server(VECTORS, 0.005) as url:
        capture_open_loop(FakeTarget(url), experiment, Workload(DOCS, batch_size=4), attempt, "cand",  # type: ignore
                          make_pool=lambda settings: ThreadPool(2, settings, lose={16.0: 1}))
    rows = attempt.read_jsonl("cand/open_loop_requests.jsonl")
    assert {r["worker"] for r in rows} == {0, 1}
    assert sorted(r["seq"] for r in rows if r["rate"] == 16) == [0, 2, 4, 6]  # worker 1's half is gone
    meta = attempt.read_json("cand/open_loop_runs.json")
    assert [r["lost_workers"] for r in meta["runs"]] == [{}, {"1": "ActorDiedError: killed mid-run"}, {}]
    section = capacity_section(experiment, attempt)  # type: ignore[arg-type]
    assert section is not None
    runs = {r["rate"]: r for r in section["by_target"]["cand"]["runs"]}
    assert runs[16.0]["valid"] is False and runs[16.0]["invalid_worker"] == 1 and runs[16.0]["misses"] == ["invalid"]
    assert runs[8.0]["valid"] and runs[32.0]["valid"] and runs[8.0]["answered"] == 8 == runs[32.0]["answered"]
    assert set(runs[32.0]["worker_lag_p90_ms"]) == {"0", "1"}
    assert all(r["cosine_min"] == pytest.approx(1.0) for r in rows)  # each worker checked its vectors
    capacity = Capacity.model_validate({**{k: v for k, v in section.items() if k != "by_target"}})
    found = server_capacity(CapacityTarget.model_validate(section["by_target"]["cand"]), capacity)
    assert found.invalid_rates == [16.0] and found.met_rate == 8.0  # the sweep is kept; 16 says nothing


@pytest.mark.usefixtures("thread_lead")
def test_a_split_run_against_an_mg1_server_sends_the_whole_schedule_from_one_start() -> None:
    requests = [Request(("d0",), b'{"model": "m", "input": ["document number 0"]}')]
    from embedswap.measure.load import LoadSpec

    with mg1_server(VECTORS, 0.002) as url:
        settings = SendSettings(LoadSpec(base_url=url, model="m", batches=[], timeout_s=30), requests,
                                {"d0": STACK[0, 0].astype(np.float64)})
        merged = run_split(ThreadPool(3, settings), plan(requests, 40.0, 0, 30, arrival="constant"))
    rows = records_json(merged.records)
    assert [r["seq"] for r in rows] == list(range(30)) and {r["worker"] for r in rows} == {0, 1, 2}
    assert all(r["status"] == 200 and r["cosine_min"] == pytest.approx(1.0) for r in rows)
    sent = sorted(r["sent_s"] for r in rows)  # one clock: the merged sends follow the one schedule
    assert sent[0] >= 0 and sent[-1] == pytest.approx(30 / 40.0, abs=0.25)


def test_without_ray_more_than_one_worker_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    from embedswap.measure.ray_pool import EXTRA_MESSAGE, import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(StepFailed) as caught:
        import_ray()
    assert str(caught.value) == EXTRA_MESSAGE and "\n" not in EXTRA_MESSAGE
    assert "pip install 'embedswap[scale]'" in EXTRA_MESSAGE
    experiment = _experiment({"rates": [4], "requests": 2, "repeats": 1, "workers": 2})
    attempt = Attempt(tmp_path, tmp_path / "attempts" / "a")
    with pytest.raises(StepFailed, match=r"embedswap\[scale\]"):
        capture_open_loop(FakeTarget("http://127.0.0.1:9"), experiment, Workload(DOCS, batch_size=4),  # type: ignore
                          attempt, "cand")


def test_workers_and_ray_address_are_checked_where_they_are_read() -> None:
    ol = _experiment({"workers": 3, "ray_address": "ray://head.ray.svc:10001"}).latency.open_loop  # type: ignore
    assert ol.workers == 3 and ol.ray_address == "ray://head.ray.svc:10001"
    assert _experiment({}).latency.open_loop.workers == 1  # type: ignore[attr-defined]
    for bad in ({"workers": 0}, {"ray_address": "http://head:8265"}, {"ray_address": "ray://"}):
        with pytest.raises(Exception, match="workers|ray_address"):
            _experiment(bad)


def test_an_open_record_carries_its_worker_into_the_capture() -> None:
    record = OpenRecord(1.0, 0, 0, 0.0, worker=2)
    assert records_json([record])[0]["worker"] == 2


class _FakeRay:
    """Just enough of Ray for RayPool: actors whose ``send`` either sends in this process or dies, as a killed
    actor's does (``ray.get`` raises a RayError subclass)."""

    class exceptions:  # noqa: N801 (ray.exceptions)
        class RayError(Exception):
            pass

        class ActorDiedError(RayError):
            pass

    def __init__(self, dies: set[int]) -> None:
        self.dies = dies
        self.made = 0

    def put(self, value: object) -> object:
        return value

    def get(self, value: object) -> object:
        if isinstance(value, list):
            return [self.get(v) for v in value]
        if isinstance(value, Exception):
            raise value
        return value

    def remote(self, **_: object):
        fake = self

        class Handle:
            def __init__(self, settings: SendSettings) -> None:
                self.settings, self.index = settings, fake.made
                fake.made += 1

            def __getattr__(self, name: str):
                return type("M", (), {"remote": lambda _s, *a: self._call(name, *a)})()

            def _call(self, name: str, *args: object) -> object:
                if name == "ready":
                    return True
                part = args[0]
                if self.index in fake.dies:
                    return _FakeRay.exceptions.ActorDiedError("The actor died unexpectedly before finishing this task.")
                return send_part(self.settings, part, args[1])  # type: ignore[arg-type]

        return lambda cls: type("Actor", (), {"options": lambda **_: type("O", (), {"remote": Handle})})


@pytest.mark.usefixtures("thread_lead")  # its two runs waited out 2 s each (4 of its 4.2 s)
def test_the_ray_pool_records_a_dead_actor_as_lost_and_starts_a_fresh_one() -> None:
    from embedswap.measure.load import LoadSpec
    from embedswap.measure.ray_pool import RayPool

    requests = [Request(("d0",), b'{"model": "m", "input": ["document number 0"]}')]
    with mg1_server(VECTORS, 0.001) as url:
        settings = SendSettings(LoadSpec(base_url=url, model="m", batches=[], timeout_s=30), requests, None)
        fake = _FakeRay(dies={1})  # the second actor made dies on its first run
        pool = RayPool(fake, 2, settings)
        first = run_split(pool, plan(requests, 50.0, 0, 6, arrival="constant"))
        second = run_split(pool, plan(requests, 50.0, 1, 6, arrival="constant"))
    assert [r.seq for r in first.records] == [0, 2, 4] and set(first.lost) == {"1"}
    assert first.lost["1"].startswith("ActorDiedError: The actor died")
    assert fake.made == 3 and second.lost == {} and len(second.records) == 6  # worker 1 was replaced
