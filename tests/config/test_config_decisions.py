"""experiment.yaml's ``decisions.margins``: defaults load, a wrong key is named, a bad value is refused."""

from pathlib import Path

import pytest
import yaml

from embedswap.config import ConfigError, load_experiment, parse_experiment
from embedswap.config.decisions import DecisionsConfig, Margins
from embedswap.scaffold import new_experiment

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return new_experiment("unit", tmp_path / "experiments", data_dir=DATA)


def _config(folder: Path) -> dict:
    return yaml.safe_load((folder / "experiment.yaml").read_text())


def test_defaults_load_without_a_decisions_key(folder: Path) -> None:
    experiment = load_experiment(folder)
    assert experiment.decisions == DecisionsConfig()
    margins = experiment.decisions.margins
    assert (margins.ndcg_at_10, margins.latency_p50_ratio, margins.error_rate) == (0.02, 1.10, 0.01)
    assert margins.transport_rate == 0.05  # issue 56: transport faults judged by rate per part
    assert set(Margins.model_fields) == {"ndcg_at_10", "recall_at_k", "mrr_at_10", "top_k_overlap", "cosine",
                                         "latency_p50_ratio", "latency_p99_ratio", "throughput_ratio",
                                         "error_rate", "transport_rate"}


def test_a_margin_is_set_and_the_rest_keep_defaults(folder: Path) -> None:
    config = _config(folder)
    config["decisions"] = {"margins": {"ndcg_at_10": 0.03}}
    margins = parse_experiment(config).decisions.margins
    assert margins.ndcg_at_10 == 0.03 and margins.recall_at_k == 0.02


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ({"margins": {"ndcg_at10": 0.02}}, "unknown key 'decisions.margins.ndcg_at10' (did you mean 'ndcg_at_10'?)"),
        ({"margin": {}}, "unknown key 'decisions.margin' (did you mean 'margins'?)"),
        ({"margins": {"latency_p50_ratio": 0.9}}, "key 'decisions.margins.latency_p50_ratio'"),
        ({"margins": {"error_rate": "low"}}, "key 'decisions.margins.error_rate'"),
    ],
)
def test_wrong_key_under_decisions_is_named(folder: Path, decisions: dict, expected: str) -> None:
    config = _config(folder)
    config["decisions"] = decisions
    with pytest.raises(ConfigError) as error:
        parse_experiment(config)
    assert expected in str(error.value)
