"""The diagnosis names the pipeline mistake that reproduces a server's vectors, on the tiny zoo models.

Each "server" here is sentence-transformers itself run with a deliberately wrong module list (built independently
of the diagnosis' own pooling code), so a test passes only if the diagnosis reproduces another implementation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.diagnosis import diagnose
from embedswap.tiny_zoo import ZOO, build_tiny_bert

TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!",
         "the quick brown fox", "pooling decides the vector"]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("zoo")
    return {name: build_tiny_bert(root / name, variant) for name, variant in ZOO.items()}


def _served(folder: Path, pooling: str | None = None, dense: bool = True, normalize: bool | None = None) -> np.ndarray:
    """What a server with this pipeline answers: sentence-transformers with modules swapped or dropped."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    model = SentenceTransformer(str(folder), device="cpu")
    modules = [m for m in model]
    if pooling is not None:
        modules[1] = Pooling(modules[1].get_embedding_dimension(), pooling_mode=pooling)
    if not dense:
        modules = [m for m in modules if not isinstance(m, Dense)]
    if normalize is False:
        modules = [m for m in modules if not isinstance(m, Normalize)]
    if normalize is True and not any(isinstance(m, Normalize) for m in modules):
        modules.append(Normalize())
    return SentenceTransformer(modules=modules, device="cpu").encode(TEXTS, convert_to_numpy=True)


CASES = [  # (zoo model, server pipeline, expected first cause)
    ("tiny-bert-dense", {"dense": False}, "diagnosis_dense_ignored"),
    ("tiny-bert-cls", {"pooling": "mean"}, "diagnosis_pooling"),
    ("tiny-bert-dense", {"pooling": "max"}, "diagnosis_pooling"),
    ("tiny-bert-no-normalize", {"normalize": True}, "diagnosis_normalize_added"),
    ("tiny-bert-cls", {"normalize": False}, "diagnosis_normalize_missing"),
]


@pytest.mark.parametrize(("model", "server", "cause"), CASES)
def test_diagnosis_names_the_cause(zoo: dict[str, Path], model: str, server: dict, cause: str) -> None:
    result = diagnose(zoo[model], TEXTS, _served(zoo[model], **server), "vllm")
    assert result["cause"] == cause, result
    assert result["hypothesis"]["cos_min"] >= 0.999
    assert "'vllm'" in result["reasons"][0]["why"]


def test_right_server_has_no_cause_and_noise_is_unknown(zoo: dict[str, Path]) -> None:
    right = _served(zoo["tiny-bert-dense"])
    assert diagnose(zoo["tiny-bert-dense"], TEXTS, right, "legacy")["cause"] is None
    noise = np.random.default_rng(0).normal(size=right.shape).astype(np.float32)
    unknown = diagnose(zoo["tiny-bert-dense"], TEXTS, noise, "legacy")
    assert unknown["cause"] == "diagnosis_unknown" and unknown["hypothesis"] is None
