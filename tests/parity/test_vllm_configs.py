"""The one-process engine runner (embedswap.parity.vllm_configs): its bookkeeping, with a stand-in ``vllm`` package
so no engine is needed. Each configuration's result or failure lands on that configuration only; a process that
dies takes only the configuration it was running, and the rest run in a new process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from embedswap.parity.gate import ParityBackendError
from embedswap.parity.vllm_configs import ConfigRun, EngineConfig, run_vllm_configs, run_vllm_jobs

# A stand-in for vLLM's offline API: LLM(model, runner, dtype, **kwargs).embed(texts) and the engine core's
# shutdown(); every construction and shutdown is written to $FAKE_VLLM_RECORD with the process id.
FAKE_VLLM = '''
import os
from types import SimpleNamespace

__version__ = "0.0-fake"


def _record(line):
    with open(os.environ["FAKE_VLLM_RECORD"], "a", encoding="utf-8") as handle:
        handle.write(f"{line} {os.getpid()}\\n")


class _Core:
    def shutdown(self):
        _record("shutdown")


class LLM:
    def __init__(self, model, runner, dtype, **kwargs):
        _record(f"LLM {dtype}")
        if dtype == "bfloat16":
            raise ValueError("bfloat16 refused by the stand-in")
        if dtype == "float16":
            os._exit(3)  # a crash: no traceback, the process is gone
        self.scale = float(kwargs.get("max_model_len", 1))
        self.llm_engine = SimpleNamespace(engine_core=_Core(), vllm_config=None)

    def embed(self, texts, use_tqdm=False):
        return [SimpleNamespace(outputs=SimpleNamespace(embedding=[float(len(t)), self.scale])) for t in texts]
'''


# vLLM's argument resolution without an engine: "auto" is float32 here (a float32 checkpoint on the stand-in's platform)
FAKE_ARG_UTILS = '''
from types import SimpleNamespace

from vllm import _record


class EngineArgs:
    def __init__(self, model, runner, dtype):
        self.dtype = dtype

    def create_model_config(self):
        _record(f"resolve {self.dtype}")
        if self.dtype == "float64":
            raise ValueError("float64 is not resolvable by the stand-in")
        return SimpleNamespace(dtype="torch." + ("float32" if self.dtype == "auto" else self.dtype))
'''


@pytest.fixture()
def fake_engine(tmp_path: Path) -> dict[str, Any]:
    package = tmp_path / "fake" / "vllm"
    (package / "engine").mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_VLLM, encoding="utf-8")
    (package / "engine" / "__init__.py").write_text("", encoding="utf-8")
    (package / "engine" / "arg_utils.py").write_text(FAKE_ARG_UTILS, encoding="utf-8")
    record = tmp_path / "record.txt"
    record.touch()
    return {"python": sys.executable, "record": record, "log_path": tmp_path / "engine.log",
            "env": {"PYTHONPATH": str(tmp_path / "fake"), "FAKE_VLLM_RECORD": str(record)}}


def _run(fake_engine: dict[str, Any], configs: list[EngineConfig], tmp_path: Path) -> list[ConfigRun]:
    return run_vllm_configs(str(tmp_path), configs, name="matrix", python=str(fake_engine["python"]),
                            env=fake_engine["env"], timeout_s=120, log_path=fake_engine["log_path"])


def _record(fake_engine: dict[str, Any]) -> list[list[str]]:
    return [line.split() for line in Path(fake_engine["record"]).read_text().splitlines()]


def test_configurations_share_one_process_and_a_failure_stays_on_its_own(fake_engine, tmp_path: Path) -> None:
    texts = ["a", "bbb", "cc"]
    configs = [EngineConfig("matrix-float32", "float32", [(texts, 1), (texts, 2)], {"max_model_len": 7}),
               EngineConfig("matrix-bfloat16", "bfloat16", [(texts, 1)], {}),
               EngineConfig("matrix-chunked", "float32", [(texts[:1], 1)], {"max_model_len": 9})]
    first, refused, chunked = _run(fake_engine, configs, tmp_path)
    assert first.error is None and len(first.vectors) == 2
    assert np.array_equal(first.vectors[1], np.array([[1, 7], [3, 7], [2, 7]], dtype=np.float32))
    assert first.meta["vllm"] == "0.0-fake" and first.meta["import_s"] >= 0 and len(first.meta["job_s"]) == 2
    assert refused.vectors is None
    assert refused.error == "matrix-bfloat16: vLLM failed: ValueError: bfloat16 refused by the stand-in"
    assert chunked.error is None and np.array_equal(chunked.vectors[0], np.array([[1, 9]], dtype=np.float32))
    record = _record(fake_engine)
    assert [r[:-1] for r in record] == [["LLM", "float32"], ["shutdown"], ["LLM", "bfloat16"], ["LLM", "float32"],
                                        ["shutdown"]]  # each engine shut down before the next one is built
    assert len({r[-1] for r in record}) == 1  # one process for the three
    log = Path(fake_engine["log_path"]).read_text()
    assert log.count("$ ") == 1 and "=== embedswap: configuration matrix-chunked ===" in log


def test_a_crash_fails_the_running_configuration_and_the_rest_run_in_a_new_process(fake_engine,
                                                                                   tmp_path: Path) -> None:
    configs = [EngineConfig("matrix-float32", "float32", [(["a"], 1)], {}),
               EngineConfig("matrix-float16", "float16", [(["a"], 1)], {}),
               EngineConfig("matrix-chunked", "float32", [(["abc"], 1)], {})]
    first, crashed, last = _run(fake_engine, configs, tmp_path)
    assert first.vectors is not None and last.vectors is not None
    assert np.array_equal(last.vectors[0], np.array([[3, 1]], dtype=np.float32))
    assert crashed.vectors is None and crashed.error == "matrix-float16: vLLM exited with code 3"
    pids = [r[-1] for r in _record(fake_engine)]
    assert pids[0] == pids[1] != pids[-1]  # float32 and the crash in one process, the rest in a second one
    assert Path(fake_engine["log_path"]).read_text().count("$ ") == 2


def test_run_vllm_jobs_raises_with_the_error_line(fake_engine, tmp_path: Path) -> None:
    with pytest.raises(ParityBackendError) as caught:
        run_vllm_jobs(str(tmp_path), "bfloat16", [(["a"], 1)], {}, name="matrix-batch",
                      python=str(fake_engine["python"]), env=fake_engine["env"],
                      timeout_s=120)
    first = str(caught.value).splitlines()[0]
    assert first == "matrix-batch: vLLM failed: ValueError: bfloat16 refused by the stand-in; log tail:"
    vectors, meta = run_vllm_jobs(str(tmp_path), "float32", [(["ab"], 1)], {}, python=str(fake_engine["python"]),
                                  env=fake_engine["env"], timeout_s=120)
    assert np.array_equal(vectors[0], np.array([[2, 1]], dtype=np.float32)) and meta["vllm"] == "0.0-fake"


def test_a_configuration_runs_inside_the_one_of_its_resolved_dtype(fake_engine, tmp_path: Path) -> None:
    """``join``: a configuration whose dtype vLLM resolves as another's embeds its jobs in that one's engine (one
    LLM(...) for both, with the host's arguments) and says so; where the dtypes differ or cannot be resolved, it
    runs in an engine of its own, as without ``join``."""
    texts = ["a", "bbb"]
    configs = [EngineConfig("vllm-offline-auto", "auto", [(texts, 8)], {}, join=("matrix-float32",)),
               EngineConfig("apart", "float32", [(texts, 8)], {"max_model_len": 5}, join=("matrix-chunked",)),
               EngineConfig("unresolved", "float64", [(texts, 8)], {}, join=("matrix-float32",)),
               EngineConfig("matrix-float32", "float32", [(texts, 1), (texts, 2)], {"max_model_len": 7}),
               EngineConfig("matrix-chunked", "bfloat16-chunked", [(texts[:1], 1)], {"max_model_len": 9})]
    auto, apart, unresolved, host, chunked = _run(fake_engine, configs, tmp_path)
    lines = [r[:-1] for r in _record(fake_engine)]
    assert [line for line in lines if line[0] == "LLM"] == [
        ["LLM", "float32"], ["LLM", "float64"], ["LLM", "float32"], ["LLM", "bfloat16-chunked"]]
    assert ["resolve", "auto"] in lines and ["resolve", "bfloat16-chunked"] in lines
    # inside matrix-float32's engine: its arguments (max_model_len 7 gives the stand-in's second figure)
    assert auto.error is None and auto.meta["ran_in"] == "matrix-float32" and len(auto.meta["job_s"]) == 1
    assert np.array_equal(auto.vectors[0], np.array([[1, 7], [3, 7]], dtype=np.float32))
    assert host.error is None and "ran_in" not in host.meta and len(host.meta["job_s"]) == 2 == len(host.vectors)
    assert np.array_equal(host.vectors[1], np.array([[1, 7], [3, 7]], dtype=np.float32))
    assert "ran_in" not in apart.meta and np.array_equal(apart.vectors[0], np.array([[1, 5], [3, 5]], np.float32))
    assert "ran_in" not in unresolved.meta and unresolved.vectors is not None and chunked.vectors is not None
    log = Path(fake_engine["log_path"]).read_text()
    assert "=== embedswap: vllm-offline-auto joins matrix-float32 (torch.float32) ===" in log
    assert "=== embedswap: configuration vllm-offline-auto ===" not in log


def test_a_failure_of_the_joined_engine_is_both_configurations(fake_engine, tmp_path: Path) -> None:
    configs = [EngineConfig("vllm-offline-bf16", "bfloat16", [(["a"], 8)], {}, join=("matrix-bfloat16",)),
               EngineConfig("matrix-bfloat16", "bfloat16", [(["a"], 1)], {})]
    rider, host = _run(fake_engine, configs, tmp_path)
    assert rider.error == "vllm-offline-bf16: vLLM failed: ValueError: bfloat16 refused by the stand-in"
    assert host.error == "matrix-bfloat16: vLLM failed: ValueError: bfloat16 refused by the stand-in"
    assert [r[:-1] for r in _record(fake_engine) if r[0] == "LLM"] == [["LLM", "bfloat16"]]
