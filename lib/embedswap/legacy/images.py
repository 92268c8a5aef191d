"""Image input for the legacy server, in vLLM's request shape, for CLIP models.

vLLM's ``/v1/embeddings`` takes an image as ``messages``: one user message whose content is an ``image_url`` part
with a ``data:image/png;base64,...`` URL (``embedswap.parity.multimodal.image_message``). The legacy server answers
the same shape so a client moves between them unchanged, and step 05 compares legacy, vLLM and the reference on
images too. Text still goes through ``input``, embedded with ``get_text_features`` (the home-made way: the model's
own projection, then L2 norm, as vLLM's CLIP embedding does).

Kept out of ``legacy_server.py`` (another issue's file) on purpose: the server picks :class:`ClipEmbedder` when the
folder's architecture is CLIP (:func:`is_clip`) and adds :class:`ImageMessagesMiddleware`, which answers a
``messages`` body before FastAPI validates it, so the text request's schema (and its contract) is unchanged.
Text and image in one message is refused with 400, as vLLM 0.31 refuses it for CLIP.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import threading
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from embedswap.legacy.pipeline import DTYPES, EmbedResult
from embedswap.legacy.http import replay_body

DATA_URL = "data:image/png;base64,"


def is_clip(path: str | Path) -> bool:
    """True when the model folder's config names a CLIP architecture."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    architectures = json.loads(config.read_text()).get("architectures") or []
    return any(str(a).startswith("CLIP") for a in architectures)


def images_from_messages(messages: Any) -> list[bytes]:
    """The PNG bytes of every ``image_url`` part; ValueError (the client's mistake, answered 400) otherwise."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    pngs, texts = [], 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list):
            raise ValueError("each message needs a content list")
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts += 1
            elif kind == "image_url":
                url = str((part.get("image_url") or {}).get("url", ""))
                if not url.startswith(DATA_URL):
                    raise ValueError("image_url must be a data:image/png;base64 URL (no fetching from here)")
                try:
                    pngs.append(base64.b64decode(url[len(DATA_URL):], validate=True))
                except binascii.Error as exc:
                    raise ValueError(f"image_url is not valid base64: {exc}") from None
            else:
                raise ValueError(f"unsupported content part type {kind!r}")
    if texts and pngs:
        raise ValueError("CLIP accepts text-only or image-only inputs, not both!")
    if not pngs:
        raise ValueError("messages carry no image (send text through 'input')")
    return pngs


class ClipEmbedder:
    """A CLIP folder served by the legacy server: ``embed`` (texts or token ids, ``get_text_features``) as
    :class:`embedswap.legacy.server.Embedder` answers it, plus ``embed_images`` (``get_image_features``)."""

    def __init__(self, path: str, dtype: torch.dtype, device: str, use_lock: bool, max_input_tokens: int) -> None:
        from transformers import CLIPModel, CLIPProcessor

        self.model = CLIPModel.from_pretrained(path, dtype=dtype).to(device).eval()
        self.processor = CLIPProcessor.from_pretrained(path)
        self.tokenizer = self.processor.tokenizer
        self.device = device
        self.vocab_size = int(self.model.config.text_config.vocab_size)
        self.max_model_len = int(self.model.config.text_config.max_position_embeddings)
        self.limit = min(max_input_tokens, self.max_model_len)
        self.lock: contextlib.AbstractContextManager[Any] = threading.Lock() if use_lock else contextlib.nullcontext()
        # what the server's start-up line prints (legacy_cli): CLIP pools its own way, then L2 norm
        self.pooling, self.normalize, self.dense, self.padding_side = "clip-projection", True, [], "right"
        self.mistake = "none"  # no fault emulation for CLIP (embedswap.legacy.mistakes is for text pipelines)
        self.dim = int(self.embed(["warm-up"]).vectors.shape[1])

    def query_text(self, text: str, task: str | None) -> str:
        return text  # CLIP has no query prompt

    def embed(self, inputs: list[str] | list[list[int]]) -> Any:
        if isinstance(inputs[0], str):
            batch = dict(self.tokenizer(inputs, padding=True, truncation=True, max_length=self.limit,
                                        return_tensors="pt"))
        else:
            width = max(len(row) for row in inputs)
            pad = int(self.tokenizer.pad_token_id or 0)
            batch = {"input_ids": torch.tensor([row + [pad] * (width - len(row)) for row in inputs]),  # type: ignore
                     "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in inputs])}
        with self.lock, torch.inference_mode():
            batch = {k: v.to(self.device) for k, v in batch.items()}
            features = self.model.get_text_features(**batch)
        features = getattr(features, "pooler_output", features)
        return EmbedResult(F.normalize(features.float(), dim=-1).cpu(), int(batch["attention_mask"].sum()))

    def embed_images(self, pngs: list[bytes]) -> torch.Tensor:
        from PIL import Image

        images = [Image.open(io.BytesIO(png)).convert("RGB") for png in pngs]
        pixels = self.processor(images=images, return_tensors="pt")["pixel_values"].to(self.device)
        with self.lock, torch.inference_mode():
            features = self.model.get_image_features(pixel_values=pixels.to(self.model.dtype))
        features = getattr(features, "pooler_output", features)
        return F.normalize(features.float(), dim=-1).cpu()


class ImageMessagesMiddleware:
    """Answers ``POST /v1/embeddings`` bodies with ``messages`` (images) itself; everything else passes on."""

    def __init__(self, app: Any, embedder: ClipEmbedder, model_name: str) -> None:
        self.app, self.embedder, self.model_name = app, embedder, model_name

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/v1/embeddings":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or "messages" not in body:
            await self.app(scope, replay_body(receive, raw), send)
            return
        await self._answer(send, *await self._embed(body["messages"]))

    async def _embed(self, messages: Any) -> tuple[int, dict[str, Any]]:
        import anyio

        try:
            pngs = images_from_messages(messages)
        except ValueError as exc:
            return 400, {"error": {"message": str(exc), "type": "BadRequestError", "param": "messages",
                                   "code": "invalid_request"}}
        try:
            vectors = await anyio.to_thread.run_sync(self.embedder.embed_images, pngs)
        except Exception as exc:  # noqa: BLE001 - a PNG Pillow cannot read is the client's
            return 400, {"error": {"message": f"image could not be embedded: {type(exc).__name__}: {exc}",
                                   "type": "BadRequestError", "param": "messages", "code": "invalid_image"}}
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors.tolist())]
        return 200, {"object": "list", "data": data, "model": self.model_name,
                     "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    @staticmethod
    async def _answer(send: Any, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def embedder_for(settings: Any, text_embedder: Any) -> Any:
    """The legacy server's embedder: :class:`ClipEmbedder` for a CLIP folder, else ``text_embedder(settings)``."""
    from embedswap.models import resolve_model_path

    path = resolve_model_path(settings.model)
    if not is_clip(path):
        return text_embedder(settings)
    if getattr(settings, "emulate_mistake", "none") != "none":  # the zoo's mistakes are text-pipeline mistakes
        raise ValueError(f"emulate_mistake {settings.emulate_mistake!r}: not available for a CLIP model ({path})")
    return ClipEmbedder(str(path), DTYPES[settings.dtype], settings.device, settings.use_lock, settings.max_input_tokens)


def add_image_input(app: Any, embedder: Any, model_name: str) -> None:
    """``messages`` with a data:image/png image for a CLIP model (nothing for a text model)."""
    if isinstance(embedder, ClipEmbedder):
        app.add_middleware(ImageMessagesMiddleware, embedder=embedder, model_name=model_name)
