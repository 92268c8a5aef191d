"""An M/G/1 embedding server for open-loop tests: one request served at a time, in arrival order, each for a service
time drawn from a gamma distribution (the G), answering the vectors it is given for each text.

With Poisson arrivals (the M) at rate ``lambda`` and mean service time ``s``, its queue grows without bound as
``lambda * s`` nears 1, so its latency p99 crosses any target at a rate set by ``s`` and the target alone, not by
the host: a sweep against it has a knee where queueing theory puts it, whichever client process sends.

``mg1_server`` serves from a thread of the test's process (given vectors); ``mg1_process`` from a process of its
own (``python mg1server.py``: every text's vector is ``fakeservers.unit_vector``), so that a client sending from
the test's process does not share its interpreter with the server it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from aiohttp import web


def _app(vectors: Mapping[str, Sequence[float]] | None, mean_service_s: float, shape: float,
         seed: int) -> web.Application:
    rng = np.random.default_rng(seed)
    lock = asyncio.Lock()

    async def handler(request: web.Request) -> web.Response:
        texts = (await request.json())["input"]
        async with lock:  # one at a time: the others queue, in arrival order
            await asyncio.sleep(float(rng.gamma(shape, mean_service_s / shape)))
        if vectors is None:
            from fakeservers import unit_vector

            data = [{"index": k, "embedding": unit_vector(t).tolist()} for k, t in enumerate(texts)]
        else:
            data = [{"index": k, "embedding": list(vectors[t])} for k, t in enumerate(texts)]
        return web.json_response({"data": data, "usage": {"prompt_tokens": len(texts)}})

    app = web.Application()
    app.router.add_post("/v1/embeddings", handler)
    return app


@contextmanager
def mg1_process(port: int, mean_service_s: float, shape: float = 2.0, seed: int = 0) -> Iterator[str]:
    """The server in a process of its own on ``port``; yields its URL, ends the process after."""
    import httpx

    process = subprocess.Popen([sys.executable, str(Path(__file__)), "--port", str(port), "--mean-service-s",
                                str(mean_service_s), "--shape", str(shape), "--seed", str(seed)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(f"{url}/v1/embeddings", json={"input": ["ready?"]}, timeout=5)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the M/G/1 fake server did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def mg1_server(vectors: Mapping[str, Sequence[float]], mean_service_s: float, shape: float = 2.0,
               seed: int = 0) -> Iterator[str]:
    """Serve ``POST /v1/embeddings`` at ``http://127.0.0.1:<port>`` (yielded) in a thread of its own."""
    ready = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(_app(vectors, mean_service_s, shape, seed), access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        box["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        box["loop"] = loop
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the M/G/1 fake server did not start")
    try:
        yield str(box["url"])
    finally:
        loop = box["loop"]
        loop.call_soon_threadsafe(loop.stop)  # type: ignore[attr-defined]
        thread.join(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mean-service-s", type=float, required=True)
    parser.add_argument("--shape", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    web.run_app(_app(None, args.mean_service_s, args.shape, args.seed), host="127.0.0.1", port=args.port,
                access_log=None, print=None)
