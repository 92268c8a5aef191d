"""embedswap.wire, the harness's lean HTTP/1.1 client, against small asyncio servers on real sockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from embedswap.load import LoadSpec, closed_loop
from embedswap.wire import ConnectError, ReadTimeout, RemoteProtocolError, WireClient

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


async def _with_server(handler: Handler, client_test: Callable[[str, dict], Awaitable[None]]) -> dict:
    state: dict = {"connections": 0, "requests": []}

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state["connections"] += 1
        try:
            await handler(reader, writer, state)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await client_test(f"http://127.0.0.1:{port}", state)
    finally:
        server.close()
        await server.wait_closed()
    return state


async def keep_alive(reader, writer, state) -> None:
    while (request := await _read_request(reader)) is not None:
        state["requests"].append(request)
        writer.write(_answer())
        await writer.drain()


def test_keep_alive_reuses_one_connection_and_sends_the_exact_request() -> None:
    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url + "/prefix", headers={"Authorization": "Bearer k"}) as client:
            for _ in range(5):
                response = await client.post("/v1/embeddings", content=b'{"input": ["a"]}')
                assert response.status_code == 200 and response.content == BODY

    state = asyncio.run(_with_server(keep_alive, client_test))
    assert state["connections"] == 1 and len(state["requests"]) == 5
    line, headers, body = state["requests"][0]
    assert line == "POST /prefix/v1/embeddings HTTP/1.1" and body == b'{"input": ["a"]}'
    assert headers["authorization"] == "Bearer k" and headers["content-type"] == "application/json"
    assert headers["host"].startswith("127.0.0.1:")


def test_chunked_answer_is_joined() -> None:
    async def chunked(reader, writer, state) -> None:
        while await _read_request(reader) is not None:
            parts = [BODY[:7], BODY[7:30], BODY[30:]]
            chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-T: 1\r\n\r\n")
            await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url) as client:
            for _ in range(2):
                assert (await client.post("/v1/embeddings", content=b"{}")).content == BODY

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
        async with WireClient(url) as client:
            first = await client.post("/v1/embeddings", content=b"{}")
            second = await client.post("/v1/embeddings", content=b"{}")
        assert first.status_code == 200 and first.content == BODY
        assert second.status_code == 500 and second.text == '{"error": "boom"}'

    assert asyncio.run(_with_server(close_each, client_test))["connections"] == 2


def test_an_idle_connection_dropped_by_the_server_is_replaced_once() -> None:
    async def one_request_per_connection(reader, writer, state) -> None:  # keep-alive promised, then dropped
        if await _read_request(reader) is not None:
            writer.write(_answer())
            await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url) as client:
            for _ in range(3):
                await asyncio.sleep(0.05)  # the server has closed the idle connection by now
                assert (await client.post("/v1/embeddings", content=b"{}")).status_code == 200

    assert asyncio.run(_with_server(one_request_per_connection, client_test))["connections"] == 3


def test_errors_are_named_like_httpx() -> None:
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

    async def expect(error: type[Exception], text: str) -> Callable[[str, dict], Awaitable[None]]:
        async def client_test(url: str, state: dict) -> None:
            async with WireClient(url, timeout_s=0.3) as client:
                with pytest.raises(error, match=text):
                    await client.post("/v1/embeddings", content=b"{}")
        return client_test

    async def main() -> None:
        await _with_server(hang, await expect(ReadTimeout, "within 0.3 s"))
        await _with_server(cut_short, await expect(RemoteProtocolError, "middle of the answer"))
        await _with_server(garbage, await expect(RemoteProtocolError, "not an HTTP answer"))
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with WireClient(f"http://127.0.0.1:{port}") as client:
            with pytest.raises(ConnectError):
                await client.post("/v1/embeddings", content=b"{}")

    asyncio.run(main())


def test_only_plain_http() -> None:
    with pytest.raises(ValueError, match="plain http"):
        WireClient("https://example.org")


def test_closed_loop_on_the_wire_client_records_statuses_and_tokens() -> None:
    async def mixed(reader, writer, state) -> None:
        while await _read_request(reader) is not None:
            n = len(state["requests"])
            state["requests"].append(n)
            writer.write(_answer(b'{"error": {"message": "x"}}', "400 Bad Request") if n == 2 else _answer())
            await writer.drain()

    result: dict = {}

    async def client_test(url: str, state: dict) -> None:
        spec = LoadSpec(url, "m", [["a"]])
        result["records"], _ = await closed_loop(spec, "c2", 0, requests=6, concurrency=2)

    state = asyncio.run(_with_server(mixed, client_test))
    records = result["records"]
    assert [r.seq for r in records] == list(range(6)) and state["connections"] <= 2
    assert sorted(r.status for r in records) == [200] * 5 + [400]
    assert all(r.prompt_tokens == 4 and r.error is None for r in records if r.status == 200)
    assert next(r for r in records if r.status == 400).error


def test_a_reused_connection_closed_before_the_answer_is_retried_on_a_fresh_one() -> None:
    async def drop_second(reader, writer, state) -> None:
        first_connection = state["connections"] == 1
        served = 0
        while await _read_request(reader) is not None:
            if first_connection and served == 1:
                return  # the race of an idle timeout: the request arrived, the connection closes unanswered
            writer.write(_answer())
            await writer.drain()
            served += 1

    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url) as client:
            assert (await client.post("/v1/embeddings", content=b"{}")).status_code == 200
            assert (await client.post("/v1/embeddings", content=b"{}")).status_code == 200

    assert asyncio.run(_with_server(drop_second, client_test))["connections"] == 2


def test_a_fresh_connection_closed_before_the_answer_is_an_error() -> None:
    async def drop(reader, writer, state) -> None:
        await _read_request(reader)

    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url) as client:
            with pytest.raises(RemoteProtocolError, match="without an answer"):
                await client.post("/v1/embeddings", content=b"{}")

    assert asyncio.run(_with_server(drop, client_test))["connections"] == 1


def test_no_content_answers_have_no_body_and_keep_the_connection() -> None:
    async def no_content(reader, writer, state) -> None:
        while await _read_request(reader) is not None:
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

    async def client_test(url: str, state: dict) -> None:
        async with WireClient(url, timeout_s=2) as client:
            for _ in range(2):
                response = await client.post("/v1/embeddings", content=b"{}")
                assert response.status_code == 204 and response.content == b""

    assert asyncio.run(_with_server(no_content, client_test))["connections"] == 1
