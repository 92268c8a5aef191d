"""The legacy server follows the whole sentence-transformers pipeline of the zoo models (or refuses to start)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from embedswap.legacy.server import Embedder, LegacySettings
from embedswap.legacy.pipeline import UnsupportedModuleError
from embedswap.zoo.bert import DENSE_OUT, HIDDEN, ZOO, build_tiny_bert

TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!"]


@pytest.fixture(scope="module")
def zoo(tiny_zoo: dict[str, Path]) -> dict[str, Path]:
    return tiny_zoo  # tests/conftest.py: built once per session


def _reference(folder: Path) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_legacy_server_matches_sentence_transformers(zoo: dict[str, Path], name: str) -> None:
    embedder = Embedder(LegacySettings(model=str(zoo[name])))
    served = embedder.embed(TEXTS).vectors.numpy()
    reference = _reference(zoo[name])
    assert served.shape == reference.shape
    assert served.shape[1] == (DENSE_OUT if ZOO[name].dense else HIDDEN)
    cos = (served * reference).sum(1) / (np.linalg.norm(served, axis=1) * np.linalg.norm(reference, axis=1))
    assert cos.min() > 0.99999
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), np.linalg.norm(reference, axis=1), rtol=1e-4)
    if not ZOO[name].normalize:  # the zoo's no-Normalize model is really off unit length, or the test proves nothing
        assert np.abs(np.linalg.norm(reference, axis=1) - 1).max() > 0.1


def test_build_is_deterministic(tmp_path: Path) -> None:
    a = build_tiny_bert(tmp_path / "a", ZOO["tiny-bert-dense"])
    b = build_tiny_bert(tmp_path / "b", ZOO["tiny-bert-dense"])
    np.testing.assert_array_equal(_reference(a), _reference(b))


def test_unknown_module_refused_naming_it(zoo: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    folder = Path(shutil.copytree(zoo["tiny-bert-dense"], tmp_path / "m"))
    modules = json.loads((folder / "modules.json").read_text())
    modules.insert(2, {"idx": 9, "name": "9", "path": "9_LayerNorm",
                       "type": "sentence_transformers.models.LayerNorm"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(UnsupportedModuleError, match=r"LayerNorm.*9_LayerNorm"):
        Embedder(LegacySettings(model=str(folder)))
