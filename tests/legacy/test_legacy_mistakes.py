"""The legacy server's fault emulation (``--emulate-mistake``, issue 24's zoo): each mistake changes what it
serves in the one way its name says, checked against sentence-transformers itself, and a mistake that cannot
apply to the model is refused at start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.legacy.cli import parse_args
from embedswap.legacy.mistakes import MISTAKES
from embedswap.legacy.server import Embedder, LegacySettings

TEXTS = ["a short text", "another, somewhat longer text about servers", "x"]


@pytest.fixture(scope="module")
def zoo(tiny_zoo: dict[str, Path]) -> dict[str, Path]:
    return tiny_zoo  # tests/conftest.py: built once per session


def _served(model: Path, mistake: str) -> np.ndarray:
    return Embedder(LegacySettings(model=str(model), emulate_mistake=mistake)).embed(TEXTS).vectors.numpy()


def _reference(model: Path, keep: int | None = None) -> np.ndarray:
    """sentence-transformers' own pipeline, optionally cut to its first ``keep`` modules."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model), device="cpu")
    if keep is not None:
        st = SentenceTransformer(modules=list(st)[:keep], device="cpu")
    return st.encode(TEXTS, convert_to_numpy=True)


def test_ignore_dense_and_skip_normalize_serve_the_pipeline_less_that_module(zoo: dict[str, Path]) -> None:
    dense = zoo["tiny-bert-dense"]  # Transformer, Pooling, Dense, Normalize
    assert np.allclose(_served(dense, "none"), _reference(dense), atol=1e-5)
    pooled = _reference(dense, keep=2)
    no_dense = _served(dense, "ignore-dense")
    assert no_dense.shape == pooled.shape and np.allclose(no_dense, pooled / np.linalg.norm(pooled, axis=1,
                                                                                           keepdims=True), atol=1e-5)
    assert np.allclose(_served(dense, "skip-normalize"), _reference(dense, keep=3), atol=1e-5)


def test_drop_end_token_and_pooling_override(zoo: dict[str, Path]) -> None:
    cls = zoo["tiny-bert-cls"]
    faithful = Embedder(LegacySettings(model=str(cls)))
    dropped = Embedder(LegacySettings(model=str(cls), emulate_mistake="drop-end-token"))
    ids = faithful.tokenizer(TEXTS)["input_ids"]
    assert {row[-1] for row in ids} == {faithful.tokenizer.sep_token_id}
    by_ids = faithful.embed([row[:-1] for row in ids]).vectors.numpy()  # token-id input is embedded as given
    assert np.allclose(dropped.embed(TEXTS).vectors.numpy(), by_ids, atol=1e-5)
    maxed = Embedder(LegacySettings(model=str(cls), emulate_mistake="pooling-max"))
    assert maxed.pooling == "max" and not np.allclose(maxed.embed(TEXTS).vectors.numpy(), _reference(cls), atol=1e-3)


def test_a_mistake_that_cannot_apply_is_refused_at_start(zoo: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="no Dense module to ignore"):
        Embedder(LegacySettings(model=str(zoo["tiny-bert-cls"]), emulate_mistake="ignore-dense"))
    with pytest.raises(ValueError, match="emulate_mistake must be one of"):
        Embedder(LegacySettings(model=str(zoo["tiny-bert-cls"]), emulate_mistake="forget-everything"))
    assert parse_args(["--model", "m", "--port", "1"])[0].emulate_mistake == "none"  # the faithful server
    with pytest.raises(SystemExit):
        parse_args(["--model", "m", "--port", "1", "--emulate-mistake", "forget-everything"])
    assert set(MISTAKES) >= {"ignore-dense", "skip-normalize", "add-normalize", "drop-end-token",
                             "prompt-on-documents", "pooling-mean"}
