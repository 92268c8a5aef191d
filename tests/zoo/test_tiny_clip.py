"""The tiny random-weight CLIP (embedswap.zoo.clip): deterministic files, a working CLIP-format BPE tokenizer, and
reference features that tell texts and images apart (else a parity gate on them could not fail)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from realkit import JsonHandler

from embedswap.zoo import clip as tc


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


class _FakeClipServer(JsonHandler):
    """Answers like vLLM's CLIP: text through ``input``, one image through ``messages`` with a data:image/png URL,
    400 for text and image in one message. Records the bodies."""

    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        if "input" in body:
            self.answer(200, {"data": [{"index": i, "embedding": [float(len(t)), 1.0]}
                                       for i, t in enumerate(body["input"])]})
            return
        content = body["messages"][0]["content"]
        if len(content) > 1:
            self.answer(400, {"error": {"message": "CLIP accepts text-only or image-only inputs, not both!"}})
            return
        url = content[0]["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        self.answer(200, {"data": [{"index": 0, "embedding": [float(len(url)), 2.0]}]})


def test_server_requests_take_the_shapes_vllm_serves() -> None:
    import threading
    from http.server import ThreadingHTTPServer

    from embedswap.parity.multimodal import embed_through_server

    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeClipServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _FakeClipServer.bodies = []
    pngs = [tc.png_bytes(tc.draw_image(c, s)) for _, c, s in tc.captions()[:3]]
    try:
        got = embed_through_server(f"http://127.0.0.1:{server.server_address[1]}", ["a red circle", "ab"], pngs)
    finally:
        server.shutdown()
        server.server_close()
    assert got["text"].tolist() == [[12.0, 1.0], [2.0, 1.0]] and got["image"].shape == (3, 2)
    assert len(_FakeClipServer.bodies) == 1 + 3 + 1  # all captions at once, one request per image, the mixed probe
    assert got["mixed"]["status"] == 400 and "not both" in got["mixed"]["body"]


# The real server run is tests/e2e/test_end_to_end_qwen3.py::test_multimodal_parity_in_step_05 (step 05 of a kit run).


def test_a_folder_that_is_not_a_build_is_refused_not_deleted(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(tc.BuildError, match="is not a build of"):
        tc.build(mine)
    assert (mine / "notes.txt").read_text() == "keep me"
