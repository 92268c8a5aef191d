"""An M/G/1 embedding server for open-loop tests: one request served at a time, in arrival order, each for a service
time drawn from a gamma distribution (the G), answering the vectors it is given for each text.

With Poisson arrivals (the M) at rate ``lambda`` and mean service time ``s``, its queue grows without bound as
``lambda * s`` nears 1, so its latency p99 crosses any target at a rate set by ``s`` and the target alone, not by
the host: a sweep against it has a knee where queueing theory puts it, whichever client process sends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from aiohttp import web


@contextmanager
def mg1_server(vectors: Mapping[str, Sequence[float]], mean_service_s: float, shape: float = 2.0,
               seed: int = 0) -> Iterator[str]:
    """Serve ``POST /v1/embeddings`` at ``http://127.0.0.1:<port>`` (yielded) in a thread of its own."""
    rng = np.random.default_rng(seed)
    lock = asyncio.Lock()
    ready = threading.Event()
    box: dict[str, object] = {}

    async def handler(request: web.Request) -> web.Response:
        texts = (await request.json())["input"]
        async with lock:  # one at a time: the others queue, in arrival order
            await asyncio.sleep(float(rng.gamma(shape, mean_service_s / shape)))
        data = [{"index": k, "embedding": list(vectors[t])} for k, t in enumerate(texts)]
        return web.json_response({"data": data, "usage": {"prompt_tokens": len(texts)}})

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/embeddings", handler)
        runner = web.AppRunner(app, access_log=None)
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
