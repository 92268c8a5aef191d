"""Latency harness (closed and open loop); its records and statistics are :mod:`embedswap.measure.load_stats`.

Requests go through aiohttp (the client AIPerf and vLLM's own serving benchmark use), for ``http://`` and
``https://`` alike: the harness's own cost per request belongs out of the measured latency, and httpx costs
~2.4 ms of CPU per request on this kind of machine against aiohttp's ~0.4 ms (``benchmarks/harness_overhead.py``
measures both against a raw socket). One session per run: a keep-alive pool of ``concurrency`` connections,
bodies encoded once before the clock starts, one timeout over the whole exchange (connect, send, the answer in
full), and every failure recorded on its request as ``<ExceptionName>: <text>``.

Closed loop is the article's mode: N requests, C in flight at a time, each request one batch of documents.
Open loop sends at a fixed mean rate with Poisson arrivals; latency counts from the *scheduled* send time, so
time spent queueing behind a slow server is not hidden (no coordinated omission).

A request's latency ends when its answer has arrived in full. Each 200 answer is then checked like the captures
check it (malformed, NaN, lengths, indices, count) after the run, outside the timed window: the check parses
every float and costs milliseconds per batch on a small CPU (benchmarks/harness_overhead.py measures it).
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
from yarl import URL

from embedswap.wire.answer_faults import NO_DATA, other_length, stale, usual_dim
from embedswap.wire.client import EmbeddingResponse, parse_response

from embedswap.measure.load_stats import (  # re-exported: callers import them from here
    PERCENTILE_METHOD,
    PointStats,
    RequestRecord,
    RunStats,
    percentile,
    point_stats,
    run_stats,
    status_class,
)


def _body(model: str, batch: Sequence[str], shape: str = "openai") -> bytes:
    from embedswap.wire.api_shapes import request_body

    return json.dumps(request_body(shape, model, list(batch)), ensure_ascii=False).encode()


# An idle keep-alive connection is closed by the harness after this long, before a server's own idle timeout
# (uvicorn's default, behind the legacy server and vLLM, is 5 s) can race a request sent on it: aiohttp does not
# resend a POST whose connection the server closed under it, so that race would be recorded as an error.
KEEPALIVE_S = 3.0
CLIENT_NAME = "aiohttp"


@dataclass
class Answer:
    """A 200's bytes, kept as received; parsed only after the run (``_check``)."""

    status_code: int
    content: bytes
    content_type: str


class StaleConnection(aiohttp.ServerDisconnectedError):
    """No answer on a kept-alive connection the server had closed: an error of its own kind, never retried in a
    timed request."""


async def _reused(session: Any, ctx: Any, params: Any) -> None:
    if isinstance(ctx.trace_request_ctx, dict):  # requests sent outside post_answer carry none
        ctx.trace_request_ctx["reused"] = True


class Client:
    """POST a pre-encoded body to ``<base_url>/v1/embeddings``; use as ``async with Client(spec, n) as client``."""

    def __init__(self, spec: LoadSpec, connections: int) -> None:
        self.spec = spec
        self.connections = max(1, connections)
        self.url = URL(spec.base_url.rstrip("/") + spec.embeddings_path)
        if self.url.scheme not in ("http", "https") or not self.url.host:
            raise ValueError(f"the latency harness needs an http:// or https:// URL, not {spec.base_url!r}")
        self.headers = {"Content-Type": "application/json", "User-Agent": "embedswap", **spec.headers}
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Client:
        # verify_tls: the system's CAs, read now (so SSL_CERT_FILE / SSL_CERT_DIR set for a private CA count)
        tls: ssl.SSLContext | bool = False
        if self.url.scheme == "https" and self.spec.verify_tls:
            tls = ssl.create_default_context()
        connector = aiohttp.TCPConnector(limit=self.connections, keepalive_timeout=KEEPALIVE_S, ssl=tls)
        reuse = aiohttp.TraceConfig()  # tells a stale keep-alive connection from a server that never answers
        reuse.on_connection_reuseconn.append(_reused)
        self.session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.spec.timeout_s), trace_configs=[reuse],
            skip_auto_headers=("Accept-Encoding",),  # an uncompressed answer, as every other client here gets
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.close()

    async def post(self, body: bytes) -> tuple[int, bytes, str]:
        """One exchange: (status, the answer's bytes in full, its content type)."""
        status, content, content_type, _ = await self.post_answer(body)
        return status, content, content_type

    async def post_answer(self, body: bytes) -> tuple[int, bytes, str, str | None]:
        """One exchange: (status, the answer's bytes in full, its content type, its Retry-After header or None)."""
        assert self.session is not None, "use the client as `async with`"
        trace: dict[str, bool] = {"reused": False}
        try:
            async with self.session.post(self.url, data=body, headers=self.headers,
                                         trace_request_ctx=trace) as response:
                return (response.status, await response.read(), response.headers.get("Content-Type", ""),
                        response.headers.get("Retry-After"))
        except aiohttp.ServerDisconnectedError as exc:
            if trace["reused"]:
                raise StaleConnection(exc.message) from exc
            raise


async def _fetch(client: Client, body: bytes) -> tuple[int, Answer | None, str | None]:
    """One request, its answer read in full and not parsed: (status, the 200 answer or None, error)."""
    status, answer, error, _ = await _fetch_answer(client, body)
    return status, answer, error


async def _fetch_answer(client: Client, body: bytes) -> tuple[int, Answer | None, str | None, str | None]:
    """:func:`_fetch` with the Retry-After header a refusal sent (None without one)."""
    try:
        status, content, content_type, retry_after = await client.post_answer(body)
    except TimeoutError:  # aiohttp's total timeout (asyncio.TimeoutError is TimeoutError)
        return 0, None, f"TimeoutError: no complete answer within {client.spec.timeout_s:g} s", None
    except StaleConnection as exc:
        return 0, None, stale(f"ServerDisconnectedError: {exc}"), None
    except aiohttp.ClientError as exc:
        return 0, None, f"{type(exc).__name__}: {exc}"[:300], None
    if status != 200:
        return status, None, content.decode("utf-8", errors="replace")[:300], retry_after
    return 200, Answer(status, content, content_type), None, None


def _check(response: Answer, expected: int | None = None, usual: int | None = None
           ) -> tuple[int | None, str | None]:
    """A 200 checked like the captures check it (malformed, NaN, lengths, indices, count): (tokens, error);
    ``usual``: the vector length of this server's other answers (a one-vector answer of another length is wrong
    although nothing inside it disagrees).

    The harness calls this after a run, outside every request's timed window: parsing a batch of 8 x 384 floats
    costs milliseconds of CPU (json + float() of every value + the NaN scan), which would otherwise be counted
    as latency and, at concurrency > 1 or on a CPU shared with the server, delay the other requests.
    """
    return _judge(_parsed(response), expected, usual)


def _judge(answer: EmbeddingResponse, expected: int | None, usual: int | None) -> tuple[int | None, str | None]:
    """:func:`_check` of an answer already parsed."""
    if answer.error is not None:
        return answer.prompt_tokens, answer.error
    if not answer.vectors:
        return answer.prompt_tokens, NO_DATA
    if expected is not None and len(answer.vectors) != expected:
        return answer.prompt_tokens, f"{len(answer.vectors)} vectors for {expected} inputs"
    if usual is not None and len(answer.vectors[0]) != usual:
        return answer.prompt_tokens, other_length(len(answer.vectors[0]), usual)
    return answer.prompt_tokens, None


def _parsed(response: Answer) -> EmbeddingResponse:
    return parse_response(httpx.Response(response.status_code, content=response.content,
                                         headers={"Content-Type": response.content_type}), 0.0)


async def _send(client: Client, body: bytes, expected: int | None = None
                ) -> tuple[int, int | None, str | None]:
    """One request, fetched and checked: (status, prompt tokens, error)."""
    status, response, error = await _fetch(client, body)
    if response is None:
        return status, None, error
    tokens, error = _check(response, expected)
    return status, tokens, error


def _check_answers(answers: list[tuple[RequestRecord, Answer, int]]) -> None:
    """After a run: fill in each 200's prompt tokens and, for an unusable answer, its error (a vector length other
    than most answers' is one)."""
    parsed = [_parsed(response) for _, response, _ in answers]
    usual = usual_dim(len(a.vectors[0]) if a.error is None and a.vectors else None for a in parsed)
    for (record, _, expected), answer in zip(answers, parsed, strict=True):
        record.prompt_tokens, record.error = _judge(answer, expected, usual)


@dataclass
class LoadSpec:
    base_url: str
    model: str
    batches: Sequence[Sequence[str]]  # request i sends batches[i % len(batches)]
    timeout_s: float = 60.0
    headers: dict[str, str] = field(default_factory=dict)
    verify_tls: bool = True
    embeddings_path: str = "/v1/embeddings"  # the server's own route and API shape (embedswap.wire.api_shapes)
    api_shape: str = "openai"


def client_name(base_url: str) -> str:
    """The HTTP client the harness uses for this server (recorded with the latency captures)."""
    return CLIENT_NAME


def _client(spec: LoadSpec, connections: int) -> Client:
    return Client(spec, connections)


async def closed_loop(
    spec: LoadSpec, run: str, repeat: int, requests: int, concurrency: int, warmup: int = 0, progress: Any = None
) -> tuple[list[RequestRecord], float]:
    """``requests`` requests with ``concurrency`` in flight; returns the records and the run's wall time."""
    bodies = [_body(spec.model, b, spec.api_shape) for b in spec.batches]
    async with _client(spec, concurrency) as client:
        for i in range(warmup):  # warm-up: not recorded
            await _send(client, bodies[i % len(bodies)])
        records: list[RequestRecord] = []
        answers: list[tuple[RequestRecord, Answer, int]] = []  # checked after the run, untimed
        next_seq = 0
        started = time.perf_counter()

        async def worker() -> None:
            nonlocal next_seq
            while next_seq < requests:
                seq = next_seq
                next_seq += 1
                batch_index = seq % len(bodies)
                docs = len(spec.batches[batch_index])
                sent = time.perf_counter()
                status, response, error, retry_after = await _fetch_answer(client, bodies[batch_index])
                done = time.perf_counter()
                record = RequestRecord(run, repeat, seq, sent - started, (done - sent) * 1000, status, docs, None,
                                       error, retry_after)
                records.append(record)
                if response is not None:
                    answers.append((record, response, docs))
                if progress is not None:
                    progress.update(1)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    _check_answers(answers)
    records.sort(key=lambda r: r.seq)
    return records, wall


async def open_loop(
    spec: LoadSpec, run: str, repeat: int, requests: int, rate_per_s: float, seed: int = 0, progress: Any = None
) -> tuple[list[RequestRecord], float]:
    """Poisson arrivals at ``rate_per_s``; latency is measured from each request's scheduled send time."""
    rng = random.Random(seed)
    schedule: list[float] = []
    at = 0.0
    for _ in range(requests):
        at += rng.expovariate(rate_per_s)
        schedule.append(at)
    bodies = [_body(spec.model, b, spec.api_shape) for b in spec.batches]
    records: list[RequestRecord] = []
    answers: list[tuple[RequestRecord, Answer, int]] = []  # checked after the run, untimed
    async with _client(spec, max(64, requests)) as client:
        started = time.perf_counter()

        async def one(seq: int, scheduled: float) -> None:
            delay = scheduled - (time.perf_counter() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            batch_index = seq % len(bodies)
            docs = len(spec.batches[batch_index])
            status, response, error = await _fetch(client, bodies[batch_index])
            done = time.perf_counter() - started
            record = RequestRecord(run, repeat, seq, scheduled, (done - scheduled) * 1000, status, docs, None, error)
            records.append(record)
            if response is not None:
                answers.append((record, response, docs))
            if progress is not None:
                progress.update(1)

        await asyncio.gather(*(one(i, t) for i, t in enumerate(schedule)))
        wall = time.perf_counter() - started
    _check_answers(answers)
    records.sort(key=lambda r: r.seq)
    return records, wall


def run_sync(coro: Any) -> Any:
    """Run a coroutine from sync code, also inside Jupyter (whose loop is already running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
