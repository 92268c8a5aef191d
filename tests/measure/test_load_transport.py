"""The latency harness's transport (aiohttp, through ``embedswap.measure.load.Client``) against small asyncio servers on
real sockets, plain and TLS: what it sends, how it frames answers, keep-alive, and how each failure is named."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from embedswap.measure.load import Client, LoadSpec, _fetch, closed_loop

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, dict], Awaitable[None]]
BODY = json.dumps({"data": [{"index": 0, "embedding": [0.6, 0.8]}], "usage": {"prompt_tokens": 4}}).encode()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionResetError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


def _answer(body: bytes = BODY, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            .encode() + body)


async def _with_server(handler: Handler, client_test: Callable[[str, dict], Awaitable[None]],
                       tls: ssl.SSLContext | None = None) -> dict:
    state: dict = {"connections": 0, "requests": []}

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state["connections"] += 1
        try:
            await handler(reader, writer, state)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        await client_test(f"{'https' if tls else 'http'}://127.0.0.1:{port}", state)
    finally:
        server.close()
        await server.wait_closed()
    return state


async def keep_alive(reader, writer, state) -> None:
    while (request := await _read_request(reader)) is not None:
        state["requests"].append(request)
        writer.write(_answer())
        await writer.drain()


def _spec(url: str, **kw) -> LoadSpec:
    return LoadSpec(url, "m", [["a"]], **kw)


def test_keep_alive_reuses_one_connection_and_sends_the_exact_request() -> None:
    async def client_test(url: str, state: dict) -> None:
        async with Client(_spec(url + "/prefix", headers={"Authorization": "Bearer k"}), 1) as client:
            for _ in range(5):
                status, content, _ = await client.post(b'{"input": ["a"]}')
                assert status == 200 and content == BODY

    state = asyncio.run(_with_server(keep_alive, client_test))
    assert state["connections"] == 1 and len(state["requests"]) == 5
    line, headers, body = state["requests"][0]
    assert line == "POST /prefix/v1/embeddings HTTP/1.1" and body == b'{"input": ["a"]}'
    assert headers["authorization"] == "Bearer k" and headers["content-type"] == "application/json"
    assert headers["host"].startswith("127.0.0.1:") and "accept-encoding" not in headers


def test_chunked_answer_is_joined() -> None:
    async def chunked(reader, writer, state) -> None:
        while await _read_request(reader) is not None:
            parts = [BODY[:7], BODY[7:30], BODY[30:]]
            chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-T: 1\r\n\r\n")
            await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with Client(_spec(url), 1) as client:
            for _ in range(2):
                assert (await client.post(b"{}"))[1] == BODY

    assert asyncio.run(_with_server(chunked, client_test))["connections"] == 1


def test_connection_close_and_answers_that_end_with_the_connection() -> None:
    async def close_each(reader, writer, state) -> None:
        await _read_request(reader)
        if state["connections"] % 2:
            writer.write(_answer(extra="Connection: close\r\n"))
        else:  # HTTP/1.0 style: no length, the answer ends when the connection does
            writer.write(b"HTTP/1.0 500 Internal Server Error\r\n\r\n" + b'{"error": "boom"}')
        await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with Client(_spec(url), 1) as client:
            first = await client.post(b"{}")
            second = await _fetch(client, b"{}")
        assert first[:2] == (200, BODY)
        assert second == (500, None, '{"error": "boom"}')

    assert asyncio.run(_with_server(close_each, client_test))["connections"] == 2


def test_an_idle_connection_dropped_by_the_server_is_replaced() -> None:
    async def one_request_per_connection(reader, writer, state) -> None:  # keep-alive promised, then dropped
        if await _read_request(reader) is not None:
            writer.write(_answer())
            await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with Client(_spec(url), 1) as client:
            for _ in range(3):
                await asyncio.sleep(0.05)  # the server has closed the idle connection by now
                assert (await _fetch(client, b"{}"))[0] == 200

    assert asyncio.run(_with_server(one_request_per_connection, client_test))["connections"] == 3


def test_each_failure_is_named_on_its_request() -> None:
    async def hang(reader, writer, state) -> None:
        await _read_request(reader)
        await asyncio.sleep(5)

    async def cut_short(reader, writer, state) -> None:
        await _read_request(reader)
        writer.write(_answer()[:-10])  # a Content-Length it never fulfils
        await writer.drain()

    async def garbage(reader, writer, state) -> None:
        await _read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()

    async def drop(reader, writer, state) -> None:
        await _read_request(reader)

    def expect(text: str) -> Callable[[str, dict], Awaitable[None]]:
        async def client_test(url: str, state: dict) -> None:
            async with Client(_spec(url, timeout_s=0.3), 1) as client:
                status, answer, error = await _fetch(client, b"{}")
            assert status == 0 and answer is None and error.startswith(text), error
        return client_test

    async def main() -> None:
        await _with_server(hang, expect("TimeoutError: no complete answer within 0.3 s"))
        await _with_server(cut_short, expect("ClientPayloadError: "))
        await _with_server(garbage, expect("ClientResponseError: "))
        await _with_server(drop, expect("ServerDisconnectedError: "))
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await expect("ClientConnectorError: Cannot connect to host 127.0.0.1")(f"http://127.0.0.1:{port}", {})

    asyncio.run(main())


def test_only_http_and_https() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        Client(_spec("ftp://example.org"), 1)


def test_closed_loop_records_statuses_and_tokens() -> None:
    async def mixed(reader, writer, state) -> None:
        while await _read_request(reader) is not None:
            n = len(state["requests"])
            state["requests"].append(n)
            writer.write(_answer(b'{"error": {"message": "x"}}', "400 Bad Request") if n == 2 else _answer())
            await writer.drain()

    result: dict = {}

    async def client_test(url: str, state: dict) -> None:
        result["records"], _ = await closed_loop(_spec(url), "c2", 0, requests=6, concurrency=2)

    state = asyncio.run(_with_server(mixed, client_test))
    records = result["records"]
    assert [r.seq for r in records] == list(range(6)) and state["connections"] <= 2
    assert sorted(r.status for r in records) == [200] * 5 + [400]
    assert all(r.prompt_tokens == 4 and r.error is None for r in records if r.status == 200)
    assert next(r for r in records if r.status == 400).error


# --- https: a local TLS server with a self-signed certificate ----------------------------------------------------
@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def _server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def test_https_keeps_alive_and_checks_the_certificate(self_signed: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed
    result: dict = {}

    async def unverified(url: str, state: dict) -> None:
        result["records"], _ = await closed_loop(_spec(url, verify_tls=False), "c2", 0, requests=6, concurrency=2)

    state = asyncio.run(_with_server(keep_alive, unverified, _server_tls(cert, key)))
    assert all(r.ok and r.prompt_tokens == 4 for r in result["records"]) and state["connections"] <= 2

    async def verified(url: str, state: dict) -> None:  # verify_tls (the default): the self-signed cert is refused
        result["refused"], _ = await closed_loop(_spec(url), "seq", 0, requests=1, concurrency=1)

    asyncio.run(_with_server(keep_alive, verified, _server_tls(cert, key)))
    assert result["refused"][0].status == 0
    assert result["refused"][0].error.startswith("ClientConnectorCertificateError: "), result["refused"][0].error

    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted: verified and answered
    asyncio.run(_with_server(keep_alive, verified, _server_tls(cert, key)))
    assert result["refused"][0].ok
