"""``index.hnsw_shares``: which shares of the grid get their own HNSW build (auto | all | ends), and the corpus size
where ``auto`` stops building every share."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from embedswap.config import ConfigError, parse_experiment
from embedswap.config.index import IndexConfig
from embedswap.scaffold import new_experiment

DATA = Path(__file__).resolve().parents[2] / "data"


def _parsed(tmp_path: Path, index: dict) -> IndexConfig:
    folder = new_experiment("unit", tmp_path / "experiments", data_dir=DATA)
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["index"] = index
    return parse_experiment(config).index


def test_default_is_auto_with_its_documented_limit() -> None:
    config = IndexConfig()
    limit = config.hnsw_auto_max_documents
    assert config.hnsw_shares == "auto"
    assert config.hnsw_mode(limit) == "all" and config.hnsw_share_list(limit) == config.shares
    assert config.hnsw_mode(limit + 1) == "ends" and config.hnsw_share_list(limit + 1) == [0.0, 1.0]


@pytest.mark.parametrize(("setting", "small", "large"), [("all", "all", "all"), ("ends", "ends", "ends"),
                                                          ("auto", "all", "ends")])
def test_each_setting_resolves_by_corpus_size(tmp_path: Path, setting: str, small: str, large: str) -> None:
    config = _parsed(tmp_path, {"hnsw_shares": setting, "hnsw_auto_max_documents": 50,
                                "shares": [1, 0.5, 0]})
    assert (config.hnsw_mode(50), config.hnsw_mode(51)) == (small, large)
    assert config.hnsw_share_list(51) == ([0.0, 0.5, 1.0] if large == "all" else [0.0, 1.0])


@pytest.mark.parametrize(("index", "expected"), [
    ({"hnsw_shares": "some"}, "key 'index.hnsw_shares'"),
    ({"hnsw_shares": "ends", "hnsw_auto_max_documents": 0}, "key 'index.hnsw_auto_max_documents'"),
    ({"hnsw_share": "ends"}, "unknown key 'index.hnsw_share' (did you mean 'hnsw_shares'?)"),
])
def test_a_wrong_value_names_the_key(tmp_path: Path, index: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        _parsed(tmp_path, index)
    assert expected in str(error.value)
