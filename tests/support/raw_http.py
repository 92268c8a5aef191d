"""A tiny HTTP/1.1 server on a bare socket that fails on purpose, to provoke the clients' own exception texts.

Modes: ``none`` closes every connection after reading a request (no status line); ``length`` sends a 200 with
Content-Length 100 and 7 bytes; ``chunked`` one chunk and no last chunk; ``stale`` answers the first request of a
connection whole (keep-alive) and closes the connection on the second without answering, as a server that closed
an idle connection does to a client that reused it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BODY = b'{"data":[{"index":0,"embedding":[0.6,0.8]}],"usage":{"prompt_tokens":1}}'


def _handle(conn: socket.socket, mode: str) -> None:
    with conn:
        served = 0
        while True:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:
                rest += conn.recv(65536)
            served += 1
            if mode == "none" or (mode == "stale" and served == 2):
                return
            if mode == "length":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                             b'{"data"')
                return
            if mode == "chunked":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
                             b'\r\n\r\n5\r\n{"dat\r\n')
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                         % len(BODY) + BODY)


@contextmanager
def raw_server(mode: str) -> Iterator[str]:
    """The server's base URL while the block runs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the block is over
                return
            threading.Thread(target=_handle, args=(conn, mode), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
