"""A small HTTP proxy for the guard's tests: forwards every request to an upstream server and changes the vectors
of its OpenAI-shaped answers on the way back (``change``: one vector in, one vector out), e.g. scales them, as a
misconfigured gateway or a client-side normalisation bug would; ``answer`` may edit the whole parsed answer (a
re-pulled model that names itself differently) and ``refuse_with`` answers every POST with that status instead (an
overloaded gateway). Binds 127.0.0.1, runs in a daemon thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from ports import free_ports


def _handler(upstream: str, change: Callable[[list[float]], list[float]],
             answer_edit: Callable[[dict], None] | None, refuse_with: int | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _forward(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
            if refuse_with is not None and method == "POST":
                data = json.dumps({"error": "try later"}).encode()
                self.send_response(refuse_with)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
            answer = httpx.request(method, upstream + self.path, content=body, headers=headers, timeout=120)
            data = answer.content
            if answer.status_code == 200 and method == "POST":
                try:
                    parsed = json.loads(data)
                    for item in parsed.get("data", []):
                        if isinstance(item.get("embedding"), list):
                            item["embedding"] = change(item["embedding"])
                    if answer_edit is not None:
                        answer_edit(parsed)
                    data = json.dumps(parsed).encode()
                except (ValueError, AttributeError):
                    pass
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def vector_proxy(upstream: str, change: Callable[[list[float]], list[float]] = lambda v: v,
                 answer: Callable[[dict], None] | None = None, refuse_with: int | None = None) -> Iterator[str]:
    """A proxy in front of ``upstream`` (a base URL); yields its own base URL."""
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(upstream.rstrip("/"), change, answer, refuse_with))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
