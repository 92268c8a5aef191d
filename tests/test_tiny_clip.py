"""The tiny random-weight CLIP (embedswap.tiny_clip): deterministic files, a working CLIP-format BPE tokenizer, and
reference features that tell texts and images apart (else a parity gate on them could not fail)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from embedswap import tiny_clip as tc


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_two_builds_are_byte_identical_and_a_complete_one_is_reused(tmp_path: Path) -> None:
    a, b = tc.build(tmp_path / "a"), tc.build(tmp_path / "b")
    assert _digests(a) == _digests(b)
    config = json.loads((a / "config.json").read_text())
    assert config["architectures"] == ["CLIPModel"] and config["projection_dim"] >= 64
    assert config["vision_config"]["hidden_size"] // config["vision_config"]["num_attention_heads"] == 32
    before = (a / "model.safetensors").stat().st_mtime_ns
    assert tc.build(tmp_path / "a") == a and (a / "model.safetensors").stat().st_mtime_ns == before
    (a / "vocab.json").write_text("{}")  # a changed file: the marker no longer matches, the folder is rebuilt
    tc.build(tmp_path / "a")
    assert _digests(a) == _digests(b)


def test_tokenizer_is_clip_bpe_and_features_differ(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    folder = tc.build(tmp_path / "clip")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("A Red  circle!")["input_ids"])
    assert tokens == [tc.SOT, "a</w>", "red</w>", "circle</w>", "!</w>", tc.EOT]  # lower case, merged words
    assert len(tokenizer("zebra")["input_ids"]) > 3  # an unseen word falls back to smaller pieces, not <unk>
    images = [tc.draw_image(colour, shape) for _, colour, shape in tc.captions()[:4]]
    assert len({tc.png_bytes(i) for i in images}) == 4 and tc.png_bytes(images[0]) == tc.png_bytes(
        tc.draw_image(*tc.captions()[0][1:]))
    text, image = tc.reference_features(folder, ["a red circle", "a blue square", "a green cross"], images)
    assert text.shape == (3, 64) and image.shape == (4, 64)
    assert np.allclose(np.linalg.norm(text, axis=1), 1) and np.allclose(np.linalg.norm(image, axis=1), 1)
    off_diagonal = lambda m: (m @ m.T)[~np.eye(len(m), dtype=bool)]  # noqa: E731
    assert off_diagonal(text).max() < 0.99 and off_diagonal(image).max() < 0.99
