"""Multimodal parity for real: the tiny CLIP served by vLLM, gated at the multimodal threshold (article 003: 0.995).

vLLM's pooling registry serves ``CLIPModel`` (``CLIPEmbeddingModel``). Its ``/v1/embeddings`` takes text through
``input`` and an image through ``messages`` (one user message whose content is an ``image_url`` with a
``data:image/png;base64,...`` URL). The golden reference is transformers fp32 ``get_text_features`` /
``get_image_features``, L2-normalised (:func:`embedswap.zoo.clip.reference_features`). One row per modality
(text captions, images) through :func:`embedswap.parity.gate.gate`; a third probe sends text and image in one
message, which CLIP cannot embed: the status and message are recorded (vLLM 0.31 answers 400).

The server is the kit's :class:`~embedswap.targets.vllm.VllmServerTarget` (own process group, stopped on any
error, 127.0.0.1, a free port), started together with the legacy one; ``start_s`` is its start to healthy.
``python -m embedswap.parity.multimodal OUT`` writes ``OUT/multimodal.json`` (``make demo-multimodal``).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from embedswap.zoo import clip as tiny_clip
from embedswap.parity.gate import TEXT, TEXT_IMAGE, gate
from embedswap.reasons import not_measured

SERVED = "tiny-clip"


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (the servers start together: each socket is held until all are chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def image_message(png: bytes, text: str | None = None) -> list[dict[str, Any]]:
    """The ``messages`` of one image embedding request (and, with ``text``, the mixed one CLIP refuses)."""
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}]
    if text is not None:
        content.append({"type": "text", "text": text})
    return [{"role": "user", "content": content}]


def _vector(response: httpx.Response) -> list[float]:
    if response.status_code != 200:
        raise RuntimeError(f"status {response.status_code}: {response.text[:300]}")
    return response.json()["data"][0]["embedding"]


def embed_through_server(base_url: str, texts: list[str], pngs: list[bytes]) -> dict[str, Any]:
    """Text vectors (one request with every caption), image vectors (one request per image), the mixed probe."""
    with httpx.Client(base_url=base_url, timeout=120) as client:
        answer = client.post("/v1/embeddings", json={"model": SERVED, "input": texts, "encoding_format": "float"})
        if answer.status_code != 200:
            raise RuntimeError(f"text request: status {answer.status_code}: {answer.text[:300]}")
        text = [d["embedding"] for d in sorted(answer.json()["data"], key=lambda d: d["index"])]
        image = [_vector(client.post("/v1/embeddings", json={"model": SERVED, "messages": image_message(png),
                                                               "encoding_format": "float"})) for png in pngs]
        mixed = client.post("/v1/embeddings", json={"model": SERVED, "messages": image_message(pngs[0], texts[0]),
                                                    "encoding_format": "float"})
    return {"text": np.asarray(text, dtype=np.float32), "image": np.asarray(image, dtype=np.float32),
            "mixed": {"status": mixed.status_code, "body": mixed.text[:300]}}


def _target(server: str, model_dir: Path, log_dir: Path, timeout_s: float, port: int) -> Any:
    """The kit's own server target for ``server`` (``vllm`` or ``legacy``) on the CLIP folder, on ``port``."""
    from embedswap.config.targets import LegacyTarget, VllmTarget
    from embedswap.config.sections import ModelConfig
    from embedswap.targets.legacy import LegacyServerTarget
    from embedswap.targets.vllm import VllmServerTarget

    model = ModelConfig(path=str(model_dir), served_name=SERVED)
    if server == "legacy":
        config = LegacyTarget(kind="legacy", port=port, startup_timeout_s=timeout_s)
        return LegacyServerTarget("legacy-clip", config, model, str(model_dir), log_dir)
    config = VllmTarget(kind="vllm", port=port, dtype="float32", extra_args=["--enforce-eager"],
                        startup_timeout_s=timeout_s)
    return VllmServerTarget("vllm-clip", config, model, str(model_dir), log_dir)


def _start(target: Any) -> float:
    """Start one server (its own thread): seconds from start to healthy."""
    started = time.monotonic()
    target.__enter__()
    return round(time.monotonic() - started, 1)


def run(model_dir: Path, log_dir: Path, threshold: float = 0.995, text_threshold: float | None = None,
        timeout_s: float = 900.0, servers: tuple[str, ...] = ("vllm", "legacy")) -> dict[str, Any]:
    """Start every server on the tiny CLIP at once, embed the captions and the images through each, gate both
    against transformers fp32.

    The servers start together, each waited for in its own thread, and the reference is computed while they
    start: nothing waits for a server it does not need (they used to start in turn, the legacy one after vLLM's
    36 s). Each is stopped once it has answered. Captions are gated at ``text_threshold`` (default:
    ``threshold``), images at ``threshold``. Each row carries ``part`` (``text`` / ``image``) and ``request``
    (``input`` / ``messages``) as codes the report catalogues word.
    """
    from PIL import Image

    items = tiny_clip.captions()
    texts = [f"a {colour} {shape}" for _, colour, shape in items]
    pngs = [tiny_clip.png_bytes(tiny_clip.draw_image(colour, shape)) for _, colour, shape in items]
    ids = [item for item, _, _ in items]
    text_gate = threshold if text_threshold is None else text_threshold
    rows, started_s, engines, mixed, not_run = [], {}, {}, {}, []
    targets = {server: _target(server, model_dir, log_dir, timeout_s, port)
               for server, port in zip(servers, _free_ports(len(servers)))}
    pool = ThreadPoolExecutor(max_workers=len(targets) or 1, thread_name_prefix="multimodal-start")
    try:
        starts = {server: pool.submit(_start, target) for server, target in targets.items()}
        ref_text, ref_image = tiny_clip.reference_features(model_dir, texts,
                                                           [Image.open(io.BytesIO(p)) for p in pngs])
        for server, target in targets.items():
            try:
                started_s[server] = starts[server].result()
                engines[server] = target.version()
                got = embed_through_server(target.base_url, texts, pngs)
            except Exception as exc:  # noqa: BLE001 - a dead server is recorded (and fails the gate); the next runs
                not_run.append({"backend": server, **{k: v for k, v in not_measured(
                    "parity_multimodal_server_failed", server=server, error=str(exc)[:300]).items()
                    if k != "measured"}})
                continue
            finally:
                target.__exit__(None, None, None)
            dtype = "float32"
            rows += [{**gate(server, dtype, "cpu", TEXT, ref_text, got["text"], ids, text_gate).as_dict(),
                      "part": "text", "request": "input"},
                     {**gate(server, dtype, "cpu", TEXT_IMAGE, ref_image, got["image"], ids, threshold).as_dict(),
                      "part": "image", "request": "messages"}]
            mixed[server] = got["mixed"]
    finally:  # on any error or Ctrl-C: stop every server, let the start threads end, stop what they started since
        for target in targets.values():
            target.__exit__(None, None, None)
        pool.shutdown(wait=True)
        for target in targets.values():
            target.__exit__(None, None, None)
    if not rows:
        raise RuntimeError("; ".join(entry["why"] for entry in not_run))
    return {"measured": True, "model": str(model_dir), "not_run": not_run, "engine": engines.get("vllm"),
            "engines": engines, "start_s": started_s.get("vllm"), "started_s": started_s, "threshold": threshold,
            "text_threshold": text_gate, "records": len(ids), "images": "generated", "rows": rows,
            "pass": all(r["pass"] for r in rows) and not not_run,
            "mixed_request": mixed.get("vllm") or next(iter(mixed.values())),
            "mixed_requests": mixed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder for multimodal.json and the server log")
    parser.add_argument("--threshold", type=float, default=0.995)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = run(tiny_clip.ensure_tiny_clip(), out, args.threshold)
    (out / "multimodal.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    for row in result["rows"]:
        print(f"{row['backend']:<7} {row['part']:<6} ({row['request']}) n={row['n']} cos min {row['cos_min']:.8f} median {row['cos_median']:.8f} "
              f"gate {row['threshold']} {'PASS' if row['pass'] else 'FAIL'}")
    print(f"text and image in one message: {result['mixed_requests']}; servers up in {result['started_s']} s")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
