"""e2e (issue 24): vLLM with its pooling overridden (--pooler-config) is diagnosed with that pooling mode.

The zoo's CLS model served by the real vLLM pooling runner with pooling forced to MEAN: the diagnosis must say
the server pools with mean where the model pools with cls. One engine start (~1-2 min on CPU).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import numpy as np
import pytest

from embedswap.config import ModelConfig, VllmTarget
from embedswap.diagnosis import diagnose
from embedswap.targets.vllm import VllmServerTarget
from embedswap.tiny_zoo import ZOO, build_tiny_bert

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!",
         "the quick brown fox", "pooling decides the vector"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_vllm_with_overridden_pooling_is_diagnosed_with_that_mode(tmp_path: Path) -> None:
    folder = build_tiny_bert(tmp_path / "tiny-bert-cls", ZOO["tiny-bert-cls"])
    config = VllmTarget(kind="vllm", port=_free_port(), dtype="float32",
                        extra_args=["--pooler-config", json.dumps({"pooling_type": "MEAN"})])
    target = VllmServerTarget("vllm-mean", config, ModelConfig(path=str(folder)), str(folder), tmp_path / "logs")
    with target:
        answer = httpx.post(f"{target.base_url}/v1/embeddings", json={"model": "embedder", "input": TEXTS},
                            timeout=120).json()
    served = np.array([row["embedding"] for row in sorted(answer["data"], key=lambda r: r["index"])])
    result = diagnose(folder, TEXTS, served, "vllm-mean")
    assert result["cause"] == "diagnosis_pooling", result
    assert result["reasons"][0]["params"] == {"name": "vllm-mean", "pooling": "mean", "expected": "cls"}
