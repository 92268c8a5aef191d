"""Errors are part of the latency verdict: a server that rate-limits (429 with Retry-After) above two requests in
flight gets a ``failed`` concurrency-4 point named by its status, not a ratio read from its few successes."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from aiohttp import web

from embedswap.analysis import decide
from embedswap.captures import new_attempt
from embedswap.measure.load import LoadSpec, closed_loop, point_stats, run_stats, status_class
from embedswap.summary.sections.latency import latency_stats_with_requests
from typed_summary import summary_body


def _handler(limit: int | None):
    """Answers after 20 ms; with ``limit``, a request arriving while ``limit`` are in flight gets 429."""
    in_flight = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal in_flight
        n = len((await request.json())["input"])
        if limit is not None and in_flight >= limit:
            return web.json_response({"error": "rate limited"}, status=429, headers={"Retry-After": "1"})
        in_flight += 1
        try:
            await asyncio.sleep(0.02)
        finally:
            in_flight -= 1
        return web.json_response({"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(n)],
                                  "usage": {"prompt_tokens": n}})

    return handler


async def _measure(limit: int | None) -> dict[str, tuple[list, list]]:
    app = web.Application()
    app.router.add_post("/v1/embeddings", _handler(limit))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    spec = LoadSpec(base_url=f"http://127.0.0.1:{port}", model="m", batches=[["a", "b"], ["c", "d"]], timeout_s=10)
    out = {}
    try:
        for run, requests, concurrency in (("sequential", 12, 1), ("concurrent", 40, 4)):
            records, stats = [], []
            for repeat in range(2):
                recs, wall = await closed_loop(spec, run, repeat, requests, concurrency)
                records.extend(recs)
                stats.append(run_stats(recs, wall))
            out[run] = (records, stats)
    finally:
        await runner.cleanup()
    return out


def _capture(attempt, name: str, limit: int | None) -> dict:
    measured = asyncio.run(_measure(limit))
    stats = {}
    records = []
    for run, (recs, per_repeat) in measured.items():
        stats[run] = point_stats(run, 1 if run == "sequential" else 4, per_repeat).as_dict()
        records.extend(asdict(r) for r in recs)
    attempt.write_jsonl(f"{name}/latency_requests.jsonl", records)
    attempt.write_json(f"{name}/latency_stats.json", stats)
    return {"measured": True, **latency_stats_with_requests(attempt, name)}


def test_rate_limited_concurrent_point_is_failed_not_a_ratio(tmp_path) -> None:
    attempt = new_attempt(tmp_path)
    legacy = _capture(attempt, "legacy", None)
    candidate = _capture(attempt, "candidate", 2)
    point = candidate["concurrent"]
    # the refusals were recorded with their status class and Retry-After
    assert point["error_classes"].get("429", 0) > 0 and point["retry_after"] == ["1"]
    assert candidate["sequential"]["error_classes"] == {}
    body = summary_body({"roles": {"legacy": "legacy", "candidate": "candidate", "candidates": ["candidate"]},
                         "latency": {"by_target": {"legacy": legacy, "candidate": candidate}}})
    ratio = decide(body).latency.ratio("candidate")
    assert ratio is not None
    conc = ratio.verdicts_at("concurrent")
    assert conc is not None and conc.verdict is not None
    assert conc.verdict.code == "failed"
    for figure in ("p50", "p99", "docs_per_s"):  # no figure is compared on the few answered requests
        assert conc.figure(figure).code == "failed"
    gate = conc.errors["candidate"]
    assert gate.code == "failed" and "429" in gate.statuses and gate.retry_after == ["1"]
    assert conc.errors["legacy"].code != "failed"
    # the sequential point (one in flight) is not rate-limited and gets a ratio verdict
    seq = ratio.verdicts_at("sequential")
    assert seq is not None and seq.p50 is not None and seq.p50.code != "failed"
    # the headline names the failed point
    assert ratio.verdict is not None and ratio.verdict.code == "failed"
    assert any(s.startswith("concurrent:") for s in ratio.verdict.slices)


def test_status_classes() -> None:
    assert status_class(200, None) == "ok"
    assert status_class(200, "NaN in vector") == "malformed"
    assert status_class(200, "non-finite values (NaN/inf) in vectors") == "non_finite"
    assert status_class(404, "no route") == "status"
    assert status_class(429, "slow down") == "429"
    assert status_class(503, "x") == "5xx"
    assert status_class(0, "TimeoutError: no complete answer within 1 s") == "timeout"
    assert status_class(0, "ClientConnectorError: refused") == "connection"
    assert status_class(0, "ClientPayloadError: Response payload is not completed") == "cut_body"
