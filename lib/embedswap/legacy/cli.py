"""``python -m embedswap.legacy_server``: the legacy server's command line (flags map one to one onto
:class:`~embedswap.legacy.server.LegacySettings`)."""

from __future__ import annotations

import argparse
import socket
import time

import uvicorn

from embedswap.legacy import server as legacy_server
from embedswap.legacy.mistakes import MISTAKES
from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
from embedswap.legacy.pipeline import DTYPES
from embedswap.legacy.server import FAULT_MODES, Embedder, LegacySettings, create_app

# Bounded shutdown: a request stuck in the `hang` fault must not keep SIGTERM from ending the process.
GRACEFUL_SHUTDOWN_S = 5


class _ReadyServer(uvicorn.Server):
    """uvicorn server that prints the ready line once the socket listens (the model is loaded before that)."""

    def __init__(self, config: uvicorn.Config, host: str) -> None:
        super().__init__(config)
        self.host = host

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1]  # the real port, also when --port 0
            print(f"legacy server ready on http://{self.host}:{port}", flush=True)


def parse_args(argv: list[str] | None = None) -> tuple[LegacySettings, str, int]:
    parser = argparse.ArgumentParser(prog="python -m embedswap.legacy_server",
                                     description=(legacy_server.__doc__ or "").splitlines()[0])
    parser.add_argument("--model", required=True, help="path, HF id (offline cache) or package:MODULE")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--served-model-name", default=None, help="name echoed in responses (default: --model)")
    parser.add_argument("--no-lock", action="store_true", help="no global inference lock (ablation)")
    parser.add_argument("--max-input-tokens", type=int, default=1024, help="truncation limit (capped by the model)")
    parser.add_argument("--query-task", default=DEFAULT_QUERY_TASK)
    parser.add_argument("--query-prompt-template", default=None, help=f"default {DEFAULT_QUERY_TEMPLATE!r}")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-inputs", type=int, default=2048)
    parser.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    parser.add_argument("--fault", choices=FAULT_MODES, default="none")
    parser.add_argument("--fault-after", type=int, default=0, help="successful requests before the fault starts")
    parser.add_argument("--emulate-mistake", choices=MISTAKES, default="none",
                        help="fault emulation for the diagnosis zoo: make one known pipeline mistake on purpose")
    args = parser.parse_args(argv)
    settings = LegacySettings(
        model=args.model,
        served_model_name=args.served_model_name,
        use_lock=not args.no_lock,
        max_input_tokens=args.max_input_tokens,
        query_task=args.query_task,
        query_prompt_template=args.query_prompt_template,
        dtype=args.dtype,
        device=args.device,
        max_inputs=args.max_inputs,
        max_body_bytes=args.max_body_bytes,
        fault=args.fault,
        fault_after=args.fault_after,
        emulate_mistake=args.emulate_mistake,
    )
    return settings, args.host, args.port


def main(argv: list[str] | None = None) -> None:
    settings, host, port = parse_args(argv)
    started = time.perf_counter()
    print(f"loading {settings.model} ({settings.dtype}, {settings.device}, lock={settings.use_lock})", flush=True)
    app = create_app(settings)
    embedder: Embedder = app.state.embedder
    print(
        f"model loaded in {time.perf_counter() - started:.1f}s: pooling={embedder.pooling} "
        f"normalize={embedder.normalize} dense={len(embedder.dense)} dim={embedder.dim} max_input_tokens={embedder.limit} "
        f"fault={settings.fault} emulate_mistake={settings.emulate_mistake}",
        flush=True,
    )
    config = uvicorn.Config(
        app, host=host, port=port, access_log=False, log_level="info", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S
    )
    _ReadyServer(config, host).run()
