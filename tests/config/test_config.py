from pathlib import Path

import pytest
import yaml

from embedswap.config import ConfigError, load_experiment, parse_experiment
from embedswap.scaffold import new_experiment

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return new_experiment("unit", tmp_path / "experiments", data_dir=DATA)


def _config(folder: Path) -> dict:
    return yaml.safe_load((folder / "experiment.yaml").read_text())


def test_template_validates_and_names_roles(folder: Path) -> None:
    experiment = load_experiment(folder)
    assert experiment.legacy == "legacy"
    assert experiment.candidates == ["dynamo", "vllm"]
    assert experiment.ablations == ["legacy-nolock"]
    assert experiment.targets["legacy"].host == "127.0.0.1"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["targets"]["vllm"].update(prot=1), "unknown key 'targets.vllm.prot' (did you mean 'port'?)"),
        (lambda c: c["latency"].update(concurency=4), "unknown key 'latency.concurency' (did you mean 'concurrency'?)"),
        (lambda c: c.update(modle={}), "unknown key 'modle' (did you mean 'model'?)"),
        (lambda c: c["workload"].pop("documents"), "missing key 'workload.documents'"),
        (lambda c: c["latency"].update(repeats="three"), "key 'latency.repeats'"),
        (lambda c: c.update(candidates=["tgi"]), "'tgi' is not one of targets"),
        (lambda c: c["targets"]["legacy"].update(port=70000), "key 'targets.legacy.port'"),
    ],
)
def test_wrong_key_is_one_error_naming_it(folder: Path, mutate, expected: str) -> None:
    config = _config(folder)
    mutate(config)
    with pytest.raises(ConfigError) as error:
        parse_experiment(config)
    assert expected in str(error.value)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_experiment(tmp_path)
    (tmp_path / "experiment.yaml").write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_experiment(tmp_path)


def test_new_refuses_to_overwrite(folder: Path) -> None:
    with pytest.raises(FileExistsError):
        new_experiment("unit", folder.parent, data_dir=DATA)
