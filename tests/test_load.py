import asyncio
import json
import time

import httpx
import numpy as np
import pytest

from embedswap import load
from embedswap.load import LoadSpec, RequestRecord, closed_loop, open_loop, point_stats, run_stats


def _records(latencies: list[float], status: int = 200) -> list[RequestRecord]:
    return [RequestRecord("x", 0, i, 0.0, ms, status, 8, 100) for i, ms in enumerate(latencies)]


def test_percentiles_on_known_values() -> None:
    stats = run_stats(_records([float(v) for v in range(1, 101)]), wall_s=2.0)
    assert stats.p50_ms == pytest.approx(50.5)
    assert stats.p99_ms == pytest.approx(99.01)
    assert stats.p90_ms == pytest.approx(90.1)
    assert stats.mean_ms == pytest.approx(50.5)
    assert stats.docs_per_s == pytest.approx(100 * 8 / 2.0)
    assert stats.tokens_per_s == pytest.approx(100 * 100 / 2.0)


def test_errors_are_counted_and_excluded_from_latency() -> None:
    records = _records([10.0, 20.0, 30.0]) + _records([5000.0], status=500)
    stats = run_stats(records, wall_s=1.0)
    assert stats.errors == 1 and stats.error_rate == pytest.approx(0.25)
    assert stats.p50_ms == pytest.approx(20.0)
    assert stats.docs_per_s == pytest.approx(24.0)


def test_point_stats_takes_medians_and_keeps_spread() -> None:
    repeats = [run_stats(_records([ms] * 10), wall_s=w) for ms, w in [(10.0, 1.0), (30.0, 2.0), (20.0, 4.0)]]
    point = point_stats("concurrent", 4, repeats)
    assert point.p50_ms == 20.0
    assert point.docs_per_s == pytest.approx(40.0)  # median of 80, 40, 20
    assert point.spread["docs_per_s"] == [80.0, 40.0, 20.0]


class _SerialServer:
    """An in-process ASGI server that handles one request at a time and takes `service_s` each."""

    def __init__(self, service_s: float) -> None:
        self.service_s = service_s
        self.lock = asyncio.Lock()

    async def __call__(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        n = len(json.loads(body)["input"])
        async with self.lock:
            await asyncio.sleep(self.service_s)
        payload = json.dumps({"data": [{"index": i, "embedding": [0.0]} for i in range(n)],
                              "usage": {"prompt_tokens": 3 * n}}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


def _patch_transport(monkeypatch: pytest.MonkeyPatch, app) -> None:
    """The loops over an in-process ASGI app (httpx's ASGI transport; the wire client is tested on sockets)."""

    def client(spec: LoadSpec, connections: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=spec.base_url, timeout=spec.timeout_s, headers=spec.headers,
                                 transport=httpx.ASGITransport(app=app))

    monkeypatch.setattr(load, "_client", client)


def test_closed_loop_serial_server_latency_grows_with_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_transport(monkeypatch, _SerialServer(0.02))
    spec = LoadSpec("http://test", "m", [["a"] * 8])
    records, wall = asyncio.run(closed_loop(spec, "c4", 0, requests=12, concurrency=4))
    assert len(records) == 12 and all(r.ok for r in records)
    assert [r.seq for r in records] == list(range(12))
    stats = run_stats(records, wall)
    # with 4 waiting on a one-at-a-time server, each request sees about 4 service times
    assert stats.p50_ms > 3 * 20


def test_open_loop_counts_queueing_from_the_scheduled_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # arrivals at ~100/s on a server that serves 1 per 50 ms: the queue grows, so latency must grow too
    _patch_transport(monkeypatch, _SerialServer(0.05))
    spec = LoadSpec("http://test", "m", [["a"]])
    records, _ = asyncio.run(open_loop(spec, "open", 0, requests=20, rate_per_s=100.0, seed=1))
    latencies = [r.latency_ms for r in records]
    assert latencies[-1] > 5 * 50  # the last request waited behind most of the others
    assert np.median(latencies) > 50 * 3


def test_connection_errors_are_records_not_exceptions() -> None:
    spec = LoadSpec("http://127.0.0.1:9", "m", [["a"]], timeout_s=2)
    records, _ = asyncio.run(closed_loop(spec, "seq", 0, requests=2, concurrency=1))
    assert [r.status for r in records] == [0, 0]
    assert all(r.error for r in records)


class _FixedAnswer:
    """An in-process ASGI server that answers every request at once with the given JSON payload."""

    def __init__(self, payload: dict) -> None:
        self.body = json.dumps(payload).encode()

    async def __call__(self, scope, receive, send) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": self.body})


def test_answer_check_is_outside_the_timed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # a check that takes 80 ms must not show up in the latency, but its result must still be recorded
    _patch_transport(monkeypatch, _FixedAnswer({"data": [{"index": 0, "embedding": [0.5, 0.5]}],
                                                "usage": {"prompt_tokens": 7}}))
    original = load.parse_response

    def slow_check(response, latency_ms):
        time.sleep(0.08)
        return original(response, latency_ms)

    monkeypatch.setattr(load, "parse_response", slow_check)
    spec = LoadSpec("http://test", "m", [["a"]])
    for records, _ in (asyncio.run(closed_loop(spec, "c2", 0, requests=4, concurrency=2)),
                       asyncio.run(open_loop(spec, "open", 0, requests=4, rate_per_s=1000.0, seed=1))):
        assert all(r.ok and r.prompt_tokens == 7 for r in records)
        assert max(r.latency_ms for r in records) < 80


def test_unusable_answers_are_errors_after_the_deferred_check(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_transport(monkeypatch, _FixedAnswer({"data": [{"index": 0, "embedding": [float("nan"), 1.0]}],
                                                "usage": {"prompt_tokens": 3}}))
    spec = LoadSpec("http://test", "m", [["a", "b"]])
    records, wall = asyncio.run(closed_loop(spec, "seq", 0, requests=3, concurrency=1))
    assert [r.status for r in records] == [200, 200, 200]
    assert all("non-finite" in r.error for r in records) and not any(r.ok for r in records)
    assert run_stats(records, wall).errors == 3

    _patch_transport(monkeypatch, _FixedAnswer({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
    records, _ = asyncio.run(closed_loop(spec, "seq", 0, requests=2, concurrency=1))
    assert all(r.error == "1 vectors for 2 inputs" for r in records)  # a short answer to a batch of two
