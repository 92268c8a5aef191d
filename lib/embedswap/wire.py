"""A lean HTTP/1.1 client for the latency harness: keep-alive connections, pre-encoded requests, no parsing.

Why not httpx here: on a small CPU httpx costs 1-3 ms of CPU per request (URL and header objects, httpcore,
anyio, h11), measured by ``benchmarks/harness_overhead.py``, and that cost lands inside every timed latency and
competes with the server under test for the same cores. The harness only needs POST with a fixed body on
``http://`` and the answer's bytes; this client does that with asyncio streams and nothing else.

What it does: one connection per request in flight, reused (keep-alive) up to ``connections``; the answer is read
by ``Content-Length``, ``Transfer-Encoding: chunked`` or until the server closes; ``Connection: close`` is
honoured; an idle connection the server has dropped is replaced once, transparently, when nothing of the answer
was read (an embedding request is idempotent); the whole exchange is bounded by ``timeout_s``. Errors are raised
as ``WireError`` subclasses named like httpx's (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``), so a
capture reads the same whichever client sent it. ``https://`` targets stay on httpx (``embedswap.load``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MAX_HEADER_BYTES = 64 * 1024


class WireError(Exception):
    """A request that got no usable answer."""


class ConnectError(WireError):
    pass


class ReadTimeout(WireError):
    pass


class RemoteProtocolError(WireError):
    pass


@dataclass
class WireResponse:
    status_code: int
    content: bytes
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased; a repeated header keeps the last

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.used = False  # has carried a request before (so the server may have dropped it while idle)

    def close(self) -> None:
        self.writer.close()


class WireClient:
    """POST to one ``http://host:port[/prefix]`` server; use as ``async with WireClient(...) as client``."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None, timeout_s: float = 60.0,
                 connections: int = 1) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"WireClient speaks plain http:// only, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._head = f"Host: {host_header}\r\nAccept: */*\r\nUser-Agent: embedswap\r\n{extra}"
        self.timeout_s = timeout_s
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(1, connections))

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def request_bytes(self, path: str, body: bytes, content_type: str = "application/json") -> bytes:
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\n{self._head}Content-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n")
        return head.encode("latin-1") + body

    async def post(self, path: str, content: bytes, headers: dict[str, str] | None = None) -> WireResponse:
        """One POST; ``headers`` may only set Content-Type (the harness sends JSON)."""
        content_type = (headers or {}).get("Content-Type", "application/json")
        data = self.request_bytes(path, content, content_type)
        async with self._slots:
            try:
                async with asyncio.timeout(self.timeout_s):
                    return await self._exchange(data)
            except TimeoutError:
                raise ReadTimeout(f"no complete answer within {self.timeout_s:g} s") from None

    async def _exchange(self, data: bytes) -> WireResponse:
        connection = await self._acquire()
        try:
            response, keep = await self._round_trip(connection, data)
        except _DroppedIdle:  # the server closed a keep-alive connection while it sat idle: once more, fresh
            connection.close()
            connection = await self._connect()
            try:
                response, keep = await self._round_trip(connection, data)
            except BaseException:
                connection.close()
                raise
        except BaseException:
            connection.close()
            raise
        if keep:
            connection.used = True
            self._idle.append(connection)
        else:
            connection.close()
        return response

    async def _acquire(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.reader.at_eof() and not connection.writer.is_closing():
                return connection
            connection.close()
        return await self._connect()

    async def _connect(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=MAX_HEADER_BYTES)
        except OSError as exc:
            raise ConnectError(f"{self.host}:{self.port}: {exc.strerror or exc}") from exc
        return _Connection(reader, writer)

    async def _round_trip(self, connection: _Connection, data: bytes) -> tuple[WireResponse, bool]:
        try:
            connection.writer.write(data)
            await connection.writer.drain()
            head = await connection.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if connection.used and not exc.partial:
                raise _DroppedIdle from exc
            raise RemoteProtocolError("the server closed the connection without an answer") from exc
        except (ConnectionResetError, BrokenPipeError) as exc:
            if connection.used:
                raise _DroppedIdle from exc
            raise RemoteProtocolError(f"connection reset: {exc}") from exc
        except asyncio.LimitOverrunError as exc:
            raise RemoteProtocolError(f"answer headers over {MAX_HEADER_BYTES} bytes") from exc
        status, version, headers = _parse_head(head)
        try:
            # 204 and 304 carry no body, whatever the headers say (RFC 9112 6.3)
            body = b"" if status in (204, 304) else await _read_body(connection.reader, headers)
        except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
            raise RemoteProtocolError("the server closed the connection in the middle of the answer") from exc
        framed = ("content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
                  or status in (204, 304))
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close" and framed
        return WireResponse(status, body, headers), keep


class _DroppedIdle(Exception):
    pass


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/") or not status_line[1].isdigit():
        raise RemoteProtocolError(f"not an HTTP answer: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return int(status_line[1]), status_line[0], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise RemoteProtocolError(f"bad chunk size {size_line[:40]!r}") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, then the blank line
                    pass
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise RemoteProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
        return await reader.readexactly(length)
    return await reader.read()  # neither: the answer ends when the server closes the connection
