"""Unusable answers by kind (measure.answer_faults): classified from what the clients record, and counted so
through the corrupting proxy (tests/support/corrupting_proxy.py) in front of a fake server, with both clients the
kit uses (httpx for captures, aiohttp for latency)."""

from __future__ import annotations

import pytest

from corrupting_proxy import Schedule, corrupting_proxy
from fakeservers import Behaviour, serve
from embedswap.wire.answer_faults import count_kinds, fault_kind, usual_dim
from embedswap.wire.client import EmbeddingClient
from embedswap.measure.load import LoadSpec, closed_loop, run_sync, status_class


@pytest.mark.parametrize(("status", "error", "kind"), [
    (200, None, None),
    (200, "vectors of different lengths [383, 384]", "wrong_length"),
    (200, "vectors of another length (383) than this server's other answers (384)", "wrong_length"),
    (200, "non-finite values (NaN/inf) in vectors", "non_finite"),
    (200, "data[].index is not a permutation of 0..1: [0, 0]", "bad_index"),
    (200, "7 vectors for 8 inputs", "wrong_count"),
    (200, "malformed 200 response: JSONDecodeError: Expecting value", "malformed"),
    (200, "200 without data", "malformed"),
    (0, "ClientPayloadError: Response payload is not completed: <ContentLengthError: 400>", "cut_body"),
    (0, "RemoteProtocolError: peer closed connection without sending complete message body", "cut_body"),
    (0, "TimeoutError: no complete answer within 1 s", "timeout"),
    (0, "ReadTimeout: timed out", "timeout"),
    (0, "ConnectError: [Errno 111] Connection refused", "connection"),
    (400, "bad input", "status"),
    (0, "not applicable: tei cannot say `dimensions`", None),
])
def test_each_fault_has_its_kind(status: int, error: str | None, kind: str | None) -> None:
    assert fault_kind(status, error) == kind


def test_latency_keeps_refusals_apart_and_names_the_rest() -> None:
    assert status_class(429, "slow down") == "429" and status_class(503, "x") == "5xx"
    assert status_class(200, "non-finite values (NaN/inf) in vectors") == "non_finite"
    # h11's whole text (a bare "peer closed connection" is not one it writes: tests/measure/test_fault_kinds_real.py)
    assert status_class(0, "RemoteProtocolError: peer closed connection without sending complete message body "
                           "(incomplete chunked read)") == "cut_body"
    assert status_class(0, "RemoteProtocolError: Server disconnected without sending a response.") == "connection"


def test_counting_skips_requests_never_sent_and_orders_kinds() -> None:
    records = [{"status": 200, "error": None}, {"status": 0, "error": "not applicable: x"},
               {"status": 0, "error": "TimeoutError: x"}, {"status": 200, "error": "200 without data"},
               {"status": 0, "error": "TimeoutError: y"}]
    assert count_kinds(records) == (4, {"malformed": 1, "timeout": 2})
    assert usual_dim([384, 383, 384, None, 0]) == 384 and usual_dim([]) is None


def _expected(n: int) -> str | None:
    """The kind a client records for answer n under Schedule(wrong_length=2, bad_index=3, nan=5, cut=7): the cut
    hides everything; then lengths, NaN and index in the order the client checks them."""
    if n % 7 == 0:
        return "cut_body"
    for period, kind in ((2, "wrong_length"), (5, "non_finite"), (3, "bad_index")):
        if n % period == 0:
            return kind
    return None


def test_the_proxy_corruptions_are_told_apart_by_both_clients() -> None:
    schedule = Schedule(wrong_length=2, bad_index=3, nan=5, cut=7, pause=0)
    with serve(Behaviour()) as port, corrupting_proxy(f"http://127.0.0.1:{port}", schedule) as url:
        with EmbeddingClient(url, "m", timeout_s=10) as client:
            answers = [client.embed(["a", "b"]) for _ in range(14)]
        assert [fault_kind(a.status, a.error) for a in answers] == [_expected(n) for n in range(1, 15)]
    assert schedule.count("cut") == 2 and schedule.count("wrong_length") == 7


def test_the_harness_names_a_one_vector_answer_of_another_length() -> None:
    """One vector 15 values long (of 16) is wrong only against the server's other answers: the latency harness
    compares each answer with the length most answers have."""
    schedule = Schedule(wrong_length=3, bad_index=0, nan=0, cut=0, pause=0)
    with serve(Behaviour()) as port, corrupting_proxy(f"http://127.0.0.1:{port}", schedule) as url:
        spec = LoadSpec(base_url=url, model="m", batches=[["c"]], timeout_s=10)
        records, _ = run_sync(closed_loop(spec, "sequential", 0, 9, 1))
    assert [status_class(r.status, r.error) for r in records] == ["ok", "ok", "wrong_length"] * 3
    assert "(15) than this server's other answers (16)" in str(records[2].error)
