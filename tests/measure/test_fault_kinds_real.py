"""Each transport fault's kind read from the real exception texts of httpx (h11 underneath) and aiohttp, provoked
against a bare socket server (tests/support/raw_http.py): no status line is ``connection``, a body stopped after
a status line is ``cut_body``, no answer on a reused keep-alive connection is ``stale_connection``; the capture
client sends that request once more and keeps both, the latency harness counts it as an error of its kind."""

from __future__ import annotations

import pytest

from raw_http import raw_server
from embedswap.measure.load import LoadSpec, closed_loop, run_sync, status_class
from embedswap.wire.answer_faults import count_kinds, fault_kind
from embedswap.wire.client import EmbeddingClient


@pytest.mark.parametrize(("mode", "kind", "text"), [
    ("none", "connection", "RemoteProtocolError: Server disconnected without sending a response."),
    ("length", "cut_body", "peer closed connection without sending complete message body (received 7 bytes, "
                           "expected 100)"),
    ("chunked", "cut_body", "peer closed connection without sending complete message body (incomplete chunked "
                            "read)"),
])
def test_httpx_texts(mode: str, kind: str, text: str) -> None:
    with raw_server(mode) as url, EmbeddingClient(url, "m", timeout_s=5) as client:
        answer = client.embed(["a"])
    assert answer.status == 0 and text in str(answer.error) and answer.stale_retry is None
    assert fault_kind(answer.status, answer.error) == kind


@pytest.mark.parametrize(("mode", "kind", "text"), [
    ("none", "connection", "ServerDisconnectedError: Server disconnected"),
    ("length", "cut_body", "ClientPayloadError: Response payload is not completed: <ContentLengthError"),
    ("chunked", "cut_body", "ClientPayloadError: Response payload is not completed: <TransferEncodingError"),
])
def test_aiohttp_texts(mode: str, kind: str, text: str) -> None:
    with raw_server(mode) as url:
        records, _ = run_sync(closed_loop(LoadSpec(base_url=url, model="m", batches=[["a"]], timeout_s=5),
                                          "sequential", 0, 1, 1))
    assert records[0].status == 0 and str(records[0].error).startswith(text), records[0].error
    assert status_class(records[0].status, records[0].error) == kind


def test_a_stale_connection_is_sent_once_more_and_both_are_kept() -> None:
    with raw_server("stale") as url, EmbeddingClient(url, "m", timeout_s=5) as client:
        first, second = client.embed(["a"]), client.embed(["a"])
    assert first.ok and first.stale_retry is None
    assert second.ok and second.vectors == [[0.6, 0.8]]  # what a client sees: the answer of the second try
    event = second.record()["stale_retry"]
    assert event["status"] == 0 and "Server disconnected without sending a response." in event["error"]
    assert fault_kind(event["status"], event["error"]) == "stale_connection"
    assert count_kinds([second.record()]) == (1, {})  # the answer is usable; the event is counted apart


def test_the_latency_harness_names_a_stale_connection_and_does_not_retry() -> None:
    with raw_server("stale") as url:
        records, _ = run_sync(closed_loop(LoadSpec(base_url=url, model="m", batches=[["a"]], timeout_s=5),
                                          "sequential", 0, 4, 1))
    kinds = [status_class(r.status, r.error) for r in records]
    assert kinds[:2] == ["ok", "stale_connection"] and len(records) == 4, [r.error for r in records]
    assert "ServerDisconnectedError: Server disconnected" in str(records[1].error)


@pytest.mark.parametrize(("status", "error", "kind"), [
    # captures of older kits: h11's text before any status line was filed as a cut body; it is no answer at all
    (0, "RemoteProtocolError: Server disconnected without sending a response.", "connection"),
    (0, "ServerDisconnectedError: Server disconnected", "connection"),
    (0, "ReadError: [Errno 104] Connection reset by peer", "connection"),
    (0, "stale keep-alive connection: RemoteProtocolError: Server disconnected without sending a response.",
     "stale_connection"),
    (200, "ClientPayloadError: Response payload is not completed", "cut_body"),
])
def test_recorded_texts(status: int, error: str, kind: str) -> None:
    assert fault_kind(status, error) == kind
