"""The legacy server's image input for CLIP models (embedswap.legacy.images): vLLM's `messages` shape with a
data:image/png image, text through `input`, both equal to transformers' features; the mixed request and a URL that
is not a data URL are refused with 400 naming `messages`. In-process app: the qwen3 e2e serves the tiny CLIP on vLLM
only (issue 61), so these tests are what covers the legacy server's image input."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from embedswap.legacy import images as legacy_images
from embedswap.zoo import clip as tiny_clip
from embedswap.legacy.server import LegacySettings, create_app
from embedswap.parity.multimodal import image_message


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TestClient]:
    folder = tiny_clip.build(tmp_path_factory.mktemp("clip") / "tiny-clip")
    return folder, TestClient(create_app(LegacySettings(model=str(folder), served_model_name="tiny-clip")))


def test_text_and_images_match_transformers(clip: tuple[Path, TestClient]) -> None:
    from PIL import Image

    folder, client = clip
    items = tiny_clip.captions()[:3]
    texts = [f"a {c} {s}" for _, c, s in items]
    pngs = [tiny_clip.png_bytes(tiny_clip.draw_image(c, s)) for _, c, s in items]
    ref_text, ref_image = tiny_clip.reference_features(folder, texts, [Image.open(io.BytesIO(p)) for p in pngs])
    answer = client.post("/v1/embeddings", json={"model": "tiny-clip", "input": texts})
    assert answer.status_code == 200, answer.text
    text = np.asarray([d["embedding"] for d in answer.json()["data"]])
    images = []
    for png in pngs:
        got = client.post("/v1/embeddings", json={"model": "tiny-clip", "messages": image_message(png)})
        assert got.status_code == 200, got.text
        images.append(got.json()["data"][0]["embedding"])
    assert np.min(np.sum(text * ref_text, axis=1)) > 1 - 1e-6
    assert np.min(np.sum(np.asarray(images) * ref_image, axis=1)) > 1 - 1e-6
    assert not np.allclose(images[0], images[1])  # different images, different vectors


@pytest.mark.parametrize("messages, words", [
    (image_message(b"\x89PNG", "a red circle"), "not both"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}], "data:image"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]}],
     "base64"),
    ([{"role": "user", "content": "just text"}], "no image"),
    (image_message(b"not a png"), "could not be embedded"),
])
def test_bad_messages_are_400_naming_messages(clip: tuple[Path, TestClient], messages: list, words: str) -> None:
    answer = clip[1].post("/v1/embeddings", json={"model": "tiny-clip", "messages": messages})
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "messages"
    assert words in answer.json()["error"]["message"]


def test_only_clip_folders_take_images(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"architectures": ["BertModel"]}')
    assert not legacy_images.is_clip(tmp_path) and not legacy_images.is_clip(tmp_path / "missing")
    (tmp_path / "config.json").write_text('{"architectures": ["CLIPModel"]}')
    assert legacy_images.is_clip(tmp_path)


def test_startup_line_attributes(clip: tuple[Path, TestClient]) -> None:
    """legacy_cli prints pooling/normalize/dense/dim/limit of whatever embedder the app has."""
    embedder = clip[1].app.state.embedder
    assert (embedder.pooling, embedder.normalize, embedder.dense, embedder.dim) == ("clip-projection", True, [], 64)
    assert embedder.limit == 77


def test_fault_emulation_is_refused_for_a_clip_model(clip) -> None:
    from embedswap.legacy.images import embedder_for
    from embedswap.legacy.server import Embedder, LegacySettings

    folder, _ = clip
    with pytest.raises(ValueError, match="emulate_mistake 'skip-normalize': not available for a CLIP model"):
        embedder_for(LegacySettings(model=str(folder), emulate_mistake="skip-normalize"), Embedder)
