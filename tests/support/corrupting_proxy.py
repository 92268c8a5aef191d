"""A proxy that corrupts some of an embeddings server's answers, on a schedule, over real HTTP on 127.0.0.1.

It forwards every request to an upstream server and counts the 200 answers to POSTs. The n-th such answer
(counting from 1 after ``start_after`` answers passed untouched) is changed by every rule whose period divides n:

- ``wrong_length``: the first vector loses its last value (383 of 384);
- ``bad_index``: the last item's ``index`` repeats the first one's (a single item's becomes 1: position 0 missing);
- ``nan``: one value becomes a bare ``NaN`` token (what Python's json writes; JSON has no such number);
- ``cut``: the headers promise the whole body, half of it is sent, the connection is closed;
- ``pause``: the answer waits ``pause_s`` before it is sent (slow, not wrong).

What it did is kept in ``done`` (answer number -> rules applied), so a test can compare what the kit counted with
what was injected. Runs in a daemon thread (``ThreadingHTTPServer``: one thread per connection).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from ports import free_ports

RULES = ("wrong_length", "bad_index", "nan", "cut", "pause")


@dataclass
class Schedule:
    """Every how many answers each rule applies (0: never), and how the pause and the start are set."""

    wrong_length: int = 10
    bad_index: int = 15
    nan: int = 25
    cut: int = 40
    pause: int = 50
    pause_s: float = 2.0
    start_after: int = 0
    done: dict[int, list[str]] = field(default_factory=dict)
    seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_rules(self) -> tuple[int, list[str]]:
        """The number of the answer now passing (0 while untouched) and the rules that apply to it."""
        with self.lock:
            self.seen += 1
            n = self.seen - self.start_after
            if n <= 0:
                return 0, []
            rules = [rule for rule in RULES if getattr(self, rule) and n % getattr(self, rule) == 0]
            if rules:
                self.done[n] = rules
            return n, rules

    def count(self, rule: str) -> int:
        """How many answers a rule changed."""
        return sum(rule in rules for rules in self.done.values())


def corrupt(body: bytes, rules: list[str]) -> bytes:
    """The answer's body with the rules' changes (a body that is not an OpenAI-shaped answer is left as is)."""
    try:
        parsed = json.loads(body)
        items = parsed["data"]
    except (ValueError, KeyError, TypeError):
        return body
    if not items:
        return body
    if "wrong_length" in rules:
        items[0]["embedding"] = items[0]["embedding"][:-1]
    if "bad_index" in rules:
        items[-1]["index"] = items[0]["index"] if len(items) > 1 else 1
    if "nan" in rules:
        items[0]["embedding"][0] = float("nan")
    return json.dumps(parsed).encode()  # allow_nan: float('nan') is written as the bare token NaN


def _handler(upstream: str, schedule: Schedule) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the servers behind it answer

        def _forward(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
            answer = httpx.request(method, upstream + self.path, content=body, headers=headers, timeout=300)
            data, rules = answer.content, []
            if answer.status_code == 200 and method == "POST":
                _, rules = schedule.next_rules()
                data = corrupt(data, rules)
            if "pause" in rules:
                time.sleep(schedule.pause_s)
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if "cut" in rules:  # half the promised body, then the connection goes
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def corrupting_proxy(upstream: str, schedule: Schedule) -> Iterator[str]:
    """The proxy in front of ``upstream`` (a base URL); yields its own base URL."""
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(upstream.rstrip("/"), schedule))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
