"""The open-loop sender: requests on a schedule fixed before the run, whatever the server does.

A closed loop waits for the server before it sends again, so a slow server slows the client and its queueing is
hidden (coordinated omission). Here every request's send time is drawn first (Poisson, constant or gamma
arrivals at a mean rate) and a dispatcher starts each request at its time; latency counts from the *scheduled*
send, service time from the actual one. When the dispatcher itself falls behind its schedule (a rate this host
cannot send) the run records how far (``lag_ms`` per request) and the statistics mark it invalid: a client's lag is
never charged to the server.

A 429 is handled as ``latency.retry_after`` says: ``count`` records it as a failed request with its Retry-After;
``honour`` waits as told (within the request's timeout) and sends again, and records the wait it added. Each 200
is parsed after the run, outside the timed window, and its vectors are compared with the legacy server's capture
of the same documents (``cosine_min``), so goodput can be gated on correctness.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import aiohttp
import httpx
import numpy as np

from embedswap.wire.client import parse_response
from embedswap.measure.load import Client, LoadSpec

MAX_RETRIES = 5  # honour: a server that keeps answering 429 gets this many more tries, then the 429 stands


@dataclass(frozen=True)
class Request:
    """One request body, with the documents it carries (their ids find the legacy vectors)."""

    doc_ids: tuple[str, ...]
    body: bytes


@dataclass
class OpenRecord:
    rate: float  # the offered mean rate, requests/s
    repeat: int
    seq: int
    scheduled_s: float  # from the run's start
    sent_s: float | None = None  # when the first try actually went out
    done_s: float | None = None  # when the last try's answer was in full
    lag_ms: float | None = None  # sent - scheduled: the client's own lateness
    latency_ms: float | None = None  # done - scheduled
    service_ms: float | None = None  # done - the last try's send
    status: int = 0  # 0: no answer (connection error, timeout)
    docs: int = 0
    doc_ids: list[str] = field(default_factory=list)
    retries: int = 0
    retry_wait_ms: float = 0.0  # honour: the time spent waiting as Retry-After said
    retry_after_s: float | None = None  # the last 429's Retry-After, in seconds
    error: str | None = None
    prompt_tokens: int | None = None
    cosine_min: float | None = None  # lowest cosine of the answer's vectors to the legacy ones (None: not compared)
    vector_error: str | None = None  # why the vectors could not be compared (count, dims, no reference)
    worker: int | None = None  # which sender of a split run sent it (None: the one in-process sender)


def schedule(n: int, rate: float, arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0) -> np.ndarray:
    """``n`` send times (seconds from the start) at mean ``rate``: exponential gaps (poisson), equal gaps
    (constant) or gamma gaps of shape ``burstiness`` and mean 1/rate (vLLM's ``--burstiness``; 1 is Poisson)."""
    rng = np.random.default_rng(seed)
    mean = 1.0 / rate
    if arrival == "constant":
        gaps = np.full(n, mean)
    elif arrival == "gamma":
        gaps = rng.gamma(shape=burstiness, scale=mean / burstiness, size=n)
    elif arrival == "poisson":
        gaps = rng.exponential(mean, size=n)
    else:
        raise ValueError(f"unknown arrival {arrival!r} (poisson, constant, gamma)")
    return np.cumsum(gaps)


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds: delta-seconds or an HTTP date (RFC 9110); None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


@dataclass
class _Answer:
    content: bytes
    content_type: str


async def _post(client: Client, body: bytes) -> tuple[int, _Answer | None, str | None, float | None]:
    """One try: (status, the 200's bytes, error, Retry-After seconds)."""
    assert client.session is not None
    try:
        async with client.session.post(client.url, data=body, headers=client.headers) as response:
            content = await response.read()
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            status = response.status
            content_type = response.headers.get("Content-Type", "")
    except TimeoutError:
        return 0, None, f"TimeoutError: no complete answer within {client.spec.timeout_s:g} s", None
    except aiohttp.ClientError as exc:
        return 0, None, f"{type(exc).__name__}: {exc}"[:300], None
    if status != 200:
        return status, None, content.decode("utf-8", errors="replace")[:300], wait
    return 200, _Answer(content, content_type), None, None


def plan(requests: Sequence[Request], rate: float, repeat: int, n: int, *, arrival: str = "poisson",
         burstiness: float = 1.0, seed: int = 0, pick: Sequence[int] | None = None) -> list[tuple[OpenRecord, int]]:
    """The seeded schedule of one run: each record with the index of the request body it sends (``pick[seq]``,
    default ``seq % len``). Drawn once, before any worker sends, so a split run sends what one process would."""
    times = schedule(n, rate, arrival, burstiness, seed)
    order = list(pick) if pick is not None else [i % len(requests) for i in range(n)]
    return [(OpenRecord(rate, repeat, seq, float(at), docs=len(requests[order[seq]].doc_ids),
                        doc_ids=list(requests[order[seq]].doc_ids)), order[seq]) for seq, at in enumerate(times)]


async def run_rate(spec: LoadSpec, requests: Sequence[Request], rate: float, repeat: int, n: int, *,
                   arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0, retry_after: str = "count",
                   max_in_flight: int = 256, reference: dict[str, np.ndarray] | None = None,
                   pick: Sequence[int] | None = None) -> tuple[list[OpenRecord], float]:
    """``n`` requests at mean ``rate``; request ``seq`` sends ``requests[pick[seq]]`` (default ``seq % len``).
    Returns the records (answers parsed and compared after the run) and the run's wall time."""
    planned = plan(requests, rate, repeat, n, arrival=arrival, burstiness=burstiness, seed=seed, pick=pick)
    wall = await send_planned(spec, requests, planned, retry_after=retry_after, max_in_flight=max_in_flight,
                              reference=reference)
    return [record for record, _ in planned], wall


async def send_planned(spec: LoadSpec, requests: Sequence[Request], planned: Sequence[tuple[OpenRecord, int]], *,
                       retry_after: str = "count", max_in_flight: int = 256,
                       reference: dict[str, np.ndarray] | None = None, start_at: float | None = None) -> float:
    """Send each planned record at its scheduled time, filling it in; returns the wall time from the start.

    ``start_at`` (a ``time.time()`` instant): the moment the schedule counts from, shared by the workers of a
    split run; None: as soon as the connection pool is ready. Times are kept on the monotonic clock, placed once
    against the wall clock."""
    answers: list[tuple[OpenRecord, _Answer]] = []
    async with Client(spec, max_in_flight) as client:
        loop_start = time.perf_counter() + (0.0 if start_at is None else start_at - time.time())

        def now() -> float:
            return time.perf_counter() - loop_start

        async def one(record: OpenRecord, body: bytes) -> None:
            record.sent_s = now()
            record.lag_ms = (record.sent_s - record.scheduled_s) * 1000
            while True:
                tried = now()
                status, answer, error, wait = await _post(client, body)
                record.status, record.error, record.retry_after_s = status, error, wait
                left = spec.timeout_s - (now() - record.scheduled_s)
                if (status == 429 and retry_after == "honour" and wait is not None and wait < left
                        and record.retries < MAX_RETRIES):
                    await asyncio.sleep(wait)
                    record.retries += 1
                    record.retry_wait_ms += wait * 1000
                    continue
                break
            record.done_s = now()
            record.latency_ms = (record.done_s - record.scheduled_s) * 1000
            record.service_ms = (record.done_s - tried) * 1000
            if answer is not None:
                answers.append((record, answer))

        tasks = []
        for record, index in planned:
            delay = record.scheduled_s - now()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(record, requests[index].body)))
        await asyncio.gather(*tasks)
        wall = now()
    for record, answer in answers:  # untimed: parsing and comparing cost milliseconds per batch
        check_answer(record, answer.content, answer.content_type, reference)
    return wall


def check_answer(record: OpenRecord, content: bytes, content_type: str,
                 reference: dict[str, np.ndarray] | None) -> None:
    """Parse a 200 like the captures do; compare each vector with the legacy one of its document."""
    answer = parse_response(httpx.Response(200, content=content, headers={"Content-Type": content_type}), 0.0)
    record.prompt_tokens = answer.prompt_tokens
    if answer.error is not None:
        record.error = answer.error
        return
    vectors = answer.vectors or []
    if len(vectors) != record.docs:
        record.vector_error = f"{len(vectors)} vectors for {record.docs} inputs"
        return
    if not reference:
        record.vector_error = "no legacy vectors to compare with"
        return
    lowest = math.inf
    for doc_id, vector in zip(record.doc_ids, vectors, strict=True):
        ref = reference.get(doc_id)
        if ref is None:
            record.vector_error = f"no legacy vector for document {doc_id}"
            return
        v = np.asarray(vector, dtype=np.float64)
        if v.shape != ref.shape:
            record.vector_error = f"{v.shape[0]} dimensions, the legacy vector has {ref.shape[0]}"
            return
        norm = float(np.linalg.norm(v)) * float(np.linalg.norm(ref))
        lowest = min(lowest, float(v @ ref) / norm if norm > 0 else 0.0)
    record.cosine_min = round(lowest, 7)


def build_requests(batches: Sequence[Sequence[tuple[str, str]]], model: str, api_shape: str,
                   documents: int | str) -> list[Request]:
    """The bodies the runs send: the workload's own batches (``documents: workload``), or the documents of the
    batches cut again into requests of ``documents`` each (the last one wrapping round)."""
    from embedswap.wire.api_shapes import request_body

    def encode(docs: Sequence[tuple[str, str]]) -> Request:
        body = json.dumps(request_body(api_shape, model, [t for _, t in docs]), ensure_ascii=False).encode()
        return Request(tuple(i for i, _ in docs), body)

    if documents == "workload":
        return [encode(b) for b in batches if b]
    flat = [d for b in batches for d in b]
    size = int(documents)
    count = max(1, math.ceil(len(flat) / size))
    return [encode([flat[(k * size + j) % len(flat)] for j in range(size)]) for k in range(count)]


def records_json(records: Sequence[OpenRecord]) -> list[dict[str, Any]]:
    """Records as the capture stores them (times rounded to the microsecond)."""
    out = []
    for record in records:
        row = asdict(record)
        for key in ("scheduled_s", "sent_s", "done_s"):
            if row[key] is not None:
                row[key] = round(row[key], 6)
        for key in ("lag_ms", "latency_ms", "service_ms", "retry_wait_ms"):
            if row[key] is not None:
                row[key] = round(row[key], 3)
        out.append(row)
    return out
