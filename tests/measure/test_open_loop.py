"""The open-loop sender against in-process fake servers: a server that sheds load above two requests in flight,
one that answers fast with truncated vectors, and a rate no client on this host can send."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
import pytest
from aiohttp import web

from embedswap.measure.load import LoadSpec
from embedswap.measure.open_loop import build_requests, records_json, retry_after_seconds, run_rate, schedule
from embedswap.measure.open_loop_stats import misses, run_figures

DIM = 16
DOCS = [(f"d{i}", f"document number {i}") for i in range(16)]


def _vector(doc_id: str, dim: int = DIM) -> list[float]:
    v = np.random.default_rng(int(doc_id[1:])).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


REFERENCE = {i: np.asarray(_vector(i)) for i, _ in DOCS}
TEXT_TO_ID = {t: i for i, t in DOCS}


def _answer(texts: list[str], dim: int = DIM) -> dict:
    return {"data": [{"index": k, "embedding": _vector(TEXT_TO_ID[t])[:dim]} for k, t in enumerate(texts)],
            "usage": {"prompt_tokens": 3 * len(texts)}}


async def _serve(handler: Callable[[web.Request], Awaitable[web.Response]]) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/embeddings", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def _run(handler, rate: float, n: int, *, arrival: str = "constant", retry_after: str = "count",
         documents: int = 4):
    async def main():
        runner, url = await _serve(handler)
        try:
            spec = LoadSpec(base_url=url, model="m", batches=[], timeout_s=30)
            requests = build_requests([DOCS], "m", "openai", documents)
            return await run_rate(spec, requests, rate, 0, n, arrival=arrival, retry_after=retry_after,
                                  reference=REFERENCE)
        finally:
            await runner.cleanup()

    records, wall = asyncio.run(main())
    return records_json(records), wall


def _sheds_above_two(service_s: float, retry_after: str = "1"):
    """Answers while at most two requests are in flight; a third gets 429 with Retry-After."""
    state = {"in_flight": 0}

    async def handler(request: web.Request) -> web.Response:
        texts = (await request.json())["input"]
        if state["in_flight"] >= 2:
            return web.json_response({"error": "busy"}, status=429, headers={"Retry-After": retry_after})
        state["in_flight"] += 1
        try:
            await asyncio.sleep(service_s)
        finally:
            state["in_flight"] -= 1
        return web.json_response(_answer(texts))

    return handler


def _figures(records, rate, **kw):
    return run_figures(records, rate, slo_p99_ms=kw.get("slo", 5000.0), gate=0.999, max_lag_ms=kw.get("lag", 50.0))


def test_schedules_have_the_asked_mean_rate_and_shape() -> None:
    constant = schedule(100, 10.0, "constant")
    assert np.allclose(np.diff(constant), 0.1)
    poisson = np.diff(schedule(20000, 10.0, "poisson", seed=1))
    assert poisson.mean() == pytest.approx(0.1, rel=0.05) and poisson.std() == pytest.approx(0.1, rel=0.05)
    bursty = np.diff(schedule(20000, 10.0, "gamma", burstiness=0.25, seed=1))
    assert bursty.mean() == pytest.approx(0.1, rel=0.05) and bursty.std() > 1.5 * poisson.std()
    assert list(schedule(5, 3.0, seed=7)) == list(schedule(5, 3.0, seed=7))


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_a_server_that_sheds_load_above_two_in_flight_shows_its_429s_only_where_it_sheds() -> None:
    handler = _sheds_above_two(0.1)
    low, _ = _run(handler, 2.0, 4)  # one request every 500 ms, each served in 100 ms: never three in flight
    high, _ = _run(_sheds_above_two(0.1), 200.0, 30)  # 30 requests in 150 ms
    low_f, high_f = _figures(low, 2.0), _figures(high, 200.0)
    assert low_f["shed"] == 0 and low_f["statuses"] == {"ok": 4}
    assert high_f["statuses"]["429"] >= 20 and high_f["shed_share"] == high_f["statuses"]["429"] / 30
    assert high_f["retry_after_s"] == 1.0
    assert "errors" in misses(high_f, 5000.0, None, 0.01) and misses(low_f, 5000.0, None, 0.01) == []
    assert all(r["retries"] == 0 for r in high)  # count: a 429 is a failed request, not retried


def test_honouring_retry_after_waits_as_told_and_reports_the_added_latency() -> None:
    records, _ = _run(_sheds_above_two(0.05, retry_after="0.2"), 200.0, 6, retry_after="honour")
    figures = _figures(records, 200.0)
    retried = [r for r in records if r["retries"]]
    assert retried and figures["retried"] == len(retried)
    assert all(r["retry_wait_ms"] == pytest.approx(200.0 * r["retries"]) for r in retried)
    assert all(r["latency_ms"] >= r["retry_wait_ms"] for r in retried)
    assert figures["shed"] >= len(retried) and figures["retry_wait_ms"] >= 200.0


def test_fast_truncated_vectors_are_throughput_but_not_goodput() -> None:
    async def truncating(request: web.Request) -> web.Response:
        return web.json_response(_answer((await request.json())["input"], dim=8))

    async def right(request: web.Request) -> web.Response:
        return web.json_response(_answer((await request.json())["input"]))

    bad, _ = _run(truncating, 20.0, 10)
    good, _ = _run(right, 20.0, 10)
    bad_f, good_f = _figures(bad, 20.0), _figures(good, 20.0)
    assert bad_f["answered"] == 10 and bad_f["wrong_vectors"] == 10 and bad_f["good"] == 0
    assert bad_f["goodput"] == 0 and bad_f["throughput"] > 0
    assert "wrong_vectors" in misses(bad_f, 5000.0, None, 0.01)
    assert all("dimensions" in r["vector_error"] for r in bad)
    assert good_f["good"] == 10 and good_f["goodput"] == pytest.approx(good_f["throughput"])
    assert all(r["cosine_min"] == pytest.approx(1.0) for r in good)


def test_a_rate_the_client_cannot_send_is_invalid_not_a_server_figure() -> None:
    async def fast(request: web.Request) -> web.Response:
        return web.json_response(_answer((await request.json())["input"]))

    records, _ = _run(fast, 1_000_000.0, 1500, documents=1)  # 1,500 requests scheduled within 2 ms
    figures = _figures(records, 1_000_000.0)
    assert figures["lag_p90_ms"] > 50.0  # no client starts 1,500 requests in 50 ms, whatever the host
    assert figures["valid"] is False and misses(figures, 5000.0, None, 0.01) == ["invalid"]
    assert figures["sent_rate"] < 1_000_000.0 / 10


def test_a_short_run_above_the_knee_is_saturated_even_when_its_p99_is_within_the_target() -> None:
    figures = {"valid": True, "requests": 10, "answered": 10, "wrong_vectors": 0, "p99_ms": 2700.0, "p50_ms": 1600.0,
               "sent_rate": 32.0, "throughput": 3.4}
    assert misses(figures, 5000.0, None, 0.01) == ["saturated"]
    assert misses({**figures, "sent_rate": 2.0, "throughput": 1.6}, 5000.0, None, 0.01) == []
