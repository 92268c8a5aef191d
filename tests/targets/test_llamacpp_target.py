"""The llamacpp target kind: its command, the model converted to GGUF by the environment's own converter (cached
complete or absent), the errors that name what is missing, and `embedswap doctor`'s line. Fast: a fake environment
(an interpreter that is never run, a converter script that writes a file); the real server runs in
tests/e2e/test_llamacpp_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from embedswap.config import ConfigError, LlamaCppTarget, ModelConfig, parse_experiment
from embedswap.doctor import llamacpp_check
from embedswap.targets import build_target
from embedswap.targets.base import TargetStartError
from embedswap.targets.llamacpp import LlamaCppServerTarget, convert, converter_dir, installed_version

MODEL = ModelConfig(served_name="minilm")
# a stand-in for convert_hf_to_gguf.py: counts its runs, writes the outfile (or fails when the model says so)
CONVERTER = """import pathlib, sys
args = sys.argv[1:]
model, outtype, outfile = args[0], args[args.index("--outtype") + 1], args[args.index("--outfile") + 1]
runs = pathlib.Path(model) / "runs"
runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
if (pathlib.Path(model) / "broken").exists():
    print("cannot convert this model"); sys.exit(3)
pathlib.Path(outfile).write_bytes(b"GGUF" + outtype.encode())
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EMBEDSWAP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def environment(tmp_path: Path) -> str:
    """A llama.cpp environment as scripts/install-llamacpp.sh leaves it: bin/python, the package's metadata and
    share/llama.cpp/convert_hf_to_gguf.py."""
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (root / "bin" / "python").chmod(0o755)
    (root / "lib/python3.11/site-packages/llama_cpp_python-0.3.36.dist-info").mkdir(parents=True)
    (root / "share/llama.cpp/gguf-py").mkdir(parents=True)
    (root / "share/llama.cpp/convert_hf_to_gguf.py").write_text(CONVERTER)
    return str(root / "bin" / "python")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "all-MiniLM-L6-v2"
    folder.mkdir()
    return folder


def test_the_model_is_converted_once_per_type(environment: str, model: Path) -> None:
    first = convert(str(model), "q8_0", environment)
    assert first.name == "model.gguf" and first.read_bytes() == b"GGUFq8_0"
    assert convert(str(model), "q8_0", environment) == first  # cached: the converter did not run again
    assert (model / "runs").read_text() == "x"
    other = convert(str(model), "f16", environment)
    assert other.parent != first.parent and other.read_bytes() == b"GGUFf16"


def test_a_failed_conversion_leaves_nothing_that_looks_complete(environment: str, model: Path,
                                                                own_cache: Path) -> None:
    (model / "broken").write_text("")
    with pytest.raises(TargetStartError, match="cannot convert this model"):
        convert(str(model), "f32", environment)
    assert not list((own_cache / "gguf").glob("*/model.gguf"))
    (model / "broken").unlink()
    assert convert(str(model), "f32", environment).read_bytes() == b"GGUFf32"  # the next run converts


def test_the_command_serves_the_gguf_under_the_served_name(environment: str, model: Path, tmp_path: Path) -> None:
    config = LlamaCppTarget(kind="llamacpp", port=18411, python=environment, gguf_type="q8_0", n_ctx=256,
                            extra_args=["--n_threads", "2"])
    target = LlamaCppServerTarget("llamacpp", config, MODEL, str(model), tmp_path / "logs")
    target.gguf = convert(str(model), "q8_0", environment)
    assert target.command() == [
        environment, "-m", "llama_cpp.server", "--model", str(target.gguf), "--embedding", "true",
        "--host", "127.0.0.1", "--port", "18411", "--model_alias", "minilm", "--n_ctx", "256", "--n_threads", "2",
    ]
    assert target.health_url() == "http://127.0.0.1:18411/v1/models"
    assert target.version() == "llama-cpp-python 0.3.36"
    assert target.describe()["gguf_type"] == "q8_0"


def test_a_missing_environment_is_a_clear_error(tmp_path: Path, model: Path) -> None:
    config = LlamaCppTarget(kind="llamacpp", port=18412, python=str(tmp_path / "nowhere" / "bin" / "python"))
    target = LlamaCppServerTarget("llamacpp", config, MODEL, str(model), tmp_path / "logs")
    with pytest.raises(TargetStartError, match="make llamacpp"):
        target.start()
    assert target.processes == []


def test_a_missing_converter_is_named(environment: str, model: Path) -> None:
    (converter_dir(environment) / "convert_hf_to_gguf.py").unlink()
    with pytest.raises(TargetStartError, match="converter is missing"):
        convert(str(model), "f32", environment)


def test_config_builds_it_and_checks_the_type(tmp_path: Path) -> None:
    base = {"name": "unit", "date": "2026-12-03", "workload": {"documents": "docs.jsonl"},
            "targets": {"legacy": {"kind": "legacy", "port": 18301},
                        "llama": {"kind": "llamacpp", "port": 18302, "gguf_type": "f16"}},
            "candidates": ["llama"]}
    experiment = parse_experiment(base)
    assert isinstance(build_target(experiment, "llama", tmp_path), LlamaCppServerTarget)
    base["targets"]["llama"]["gguf_type"] = "q4_k"
    with pytest.raises(ConfigError, match="gguf_type"):
        parse_experiment(base)


def test_doctor_names_what_is_missing(environment: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EMBEDSWAP_LLAMACPP_PYTHON", environment)
    found = llamacpp_check()
    assert found.ok and "llama-cpp-python 0.3.36" in found.detail and not found.required
    (converter_dir(environment) / "convert_hf_to_gguf.py").unlink()
    found = llamacpp_check()
    assert not found.ok and "converter" in found.detail and "make llamacpp" in found.fix
    monkeypatch.setenv("EMBEDSWAP_LLAMACPP_PYTHON", str(tmp_path / "none" / "python"))
    assert "the interpreter" in llamacpp_check().detail
    assert installed_version(str(tmp_path / "none" / "python")) is None
