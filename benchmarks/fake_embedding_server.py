"""A fast, deterministic OpenAI-style embedding server for the scale benchmark (benchmarks/corpus_scale.py).

Not a model: each input is hashed (blake2b) to one of ``BANK`` unit vectors whose JSON text is encoded once at
start-up, so an answer is a join of pre-encoded strings and the server's own time stays small next to the kit's.
``--flavour candidate`` perturbs the bank slightly (cosine to the legacy bank ~0.99999), so the vector diff has
something to measure. ``dimensions`` is honoured (cut and renormalised); ``encoding_format: base64`` too.
``GET /v1/models`` answers 200; ``GET /stats`` gives the seconds spent handling requests (``busy_s``): the
benchmark subtracts it from the wall time to get the kit's own share.

``--service-ms`` adds a seeded lognormal sleep per request (a server of known speed).

Run: python benchmarks/fake_embedding_server.py --port 18301 [--flavour candidate] [--service-ms 20 --seed 1]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

BANK = 4096
DIM = 384


class Bank:
    def __init__(self, flavour: str, dim: int = DIM, size: int = BANK) -> None:
        rng = np.random.default_rng(7)
        vectors = rng.standard_normal((size, dim))
        if flavour == "candidate":
            vectors = vectors + 0.004 * np.random.default_rng(8).standard_normal((size, dim))
        self.vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        self.json = [json.dumps([round(float(x), 7) for x in v]) for v in self.vectors]

    def index(self, item: object) -> int:
        text = item if isinstance(item, str) else json.dumps(item)
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little") % len(self.json)


class Service:
    """An optional service time per request (``--service-ms``): a seeded lognormal sleep around it, so two servers
    of this same code differ only by how long they take (benchmarks/latency_twins.py)."""

    def __init__(self, ms: float = 0.0, sigma: float = 0.1, seed: int = 0) -> None:
        self.ms, self.sigma = ms, sigma
        self.rng = np.random.default_rng(seed)
        self.lock = threading.Lock()

    def wait(self) -> None:
        if self.ms > 0:
            with self.lock:
                seconds = float(self.rng.lognormal(np.log(self.ms / 1000), self.sigma))
            time.sleep(seconds)


class Handler(BaseHTTPRequestHandler):
    bank: Bank
    service = Service()
    busy = 0.0
    lock = threading.Lock()
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet: the benchmark times, it does not log
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, b'{"object":"list","data":[{"id":"fake","object":"model"}]}')
        elif self.path == "/stats":
            self._send(200, json.dumps({"busy_s": Handler.busy}).encode())
        else:
            self._send(404, b'{"error":"not found"}')

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        started = time.perf_counter()
        try:
            self.service.wait()
            status, body = self._answer(raw)
        finally:
            with Handler.lock:
                Handler.busy += time.perf_counter() - started
        self._send(status, body)

    def _answer(self, raw: bytes) -> tuple[int, bytes]:
        if self.path != "/v1/embeddings":
            return 404, b'{"error":{"message":"not found"}}'
        try:
            request = json.loads(raw)
            inputs = request["input"]
        except (ValueError, KeyError, TypeError):
            return 400, b'{"error":{"message":"invalid request"}}'
        if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            return 400, b'{"error":{"message":"input must be a non-empty string or list"}}'
        salt = "q:" if request.get("input_type") == "query" else ""
        indices = [self.bank.index(salt + i if isinstance(i, str) else i) for i in inputs]
        dims = request.get("dimensions")
        b64 = request.get("encoding_format") == "base64"
        if dims or b64:
            vectors = self.bank.vectors[indices]
            if dims:
                vectors = vectors[:, : int(dims)]
                vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            parts = [json.dumps(base64.b64encode(v.astype("<f4").tobytes()).decode()) if b64
                     else json.dumps([round(float(x), 7) for x in v]) for v in vectors]
        else:
            parts = [self.bank.json[i] for i in indices]
        tokens = sum(len(str(i).split()) + 2 for i in inputs)
        data = ",".join(f'{{"object":"embedding","index":{n},"embedding":{p}}}' for n, p in enumerate(parts))
        body = (f'{{"object":"list","model":"fake","data":[{data}],'
                f'"usage":{{"prompt_tokens":{tokens},"total_tokens":{tokens}}}}}')
        return 200, body.encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--flavour", choices=["legacy", "candidate"], default="legacy")
    parser.add_argument("--service-ms", type=float, default=0.0, help="sleep about this long per request")
    parser.add_argument("--service-sigma", type=float, default=0.1, help="lognormal sigma of the sleep")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bank", type=int, default=BANK, help="distinct vectors (fewer: a faster start)")
    args = parser.parse_args()
    Handler.bank = Bank(args.flavour, size=args.bank)
    Handler.service = Service(args.service_ms, args.service_sigma, args.seed)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"ready on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
