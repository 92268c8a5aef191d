"""The shim's query prompt against the real legacy server's (issue 23): the shim's "all probes answer the same" was
tested only against fakes importing the shim's own constants, while `legacy_server.py` keeps its own copy of the
template. Here the real legacy app (real MiniLM, in process) answers both the query it prompts itself and the text
the shim prompted, so a drift between the two templates (or the task texts) fails."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from embedswap.config import base as config
from embedswap.legacy import embedder as legacy_embedder
from embedswap.legacy.server import LegacySettings, create_app
from embedswap.models import EMBEDDED_DEFAULT
from embedswap.shim.client import EmbeddingShim
from embedswap.shim.settings import ShimConfig

QUERIES = ["how do I read a p99 latency?", "임베딩 서버를 옮기면 무엇이 바뀌나요?"]


@pytest.fixture(scope="module")
def legacy() -> Iterator[TestClient]:
    with TestClient(create_app(LegacySettings(model=EMBEDDED_DEFAULT))) as client:
        yield client


def legacy_answer(client: TestClient, **body: object) -> tuple[np.ndarray, int]:
    response = client.post("/v1/embeddings", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    return np.asarray([d["embedding"] for d in data["data"]]), data["usage"]["prompt_tokens"]


def through_shim(client: TestClient, shim_config: ShimConfig, **options: object) -> tuple[np.ndarray, int]:
    sent: list[dict] = []
    shim = EmbeddingShim("http://testserver", shim_config, transport=InProcess(client))  # the real app, in process
    original = shim.rewrite
    shim.rewrite = lambda body: sent.append(plan := original(body)) or plan  # type: ignore[method-assign]
    answer = shim.embed(QUERIES, **options)
    assert answer.ok, answer.error
    assert not {"input_type", "instruction"} & set(sent[-1].body)  # the server saw plain documents
    return np.asarray(answer.vectors), answer.prompt_tokens


class InProcess(httpx.BaseTransport):
    """httpx transport into the legacy app through its TestClient (the shim needs a sync byte stream)."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.client.request(request.method, request.url.path, content=request.read(),
                                     headers={"content-type": request.headers.get("content-type", "")})
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.mark.parametrize("options", [{"input_type": "query"}, {"instruction": "Find postmortems about retries"}])
def test_shim_prompt_is_the_legacy_servers_prompt(legacy: TestClient, options: dict) -> None:
    expected, expected_tokens = legacy_answer(legacy, input=QUERIES, **options)
    plain, _ = legacy_answer(legacy, input=QUERIES)
    got, tokens = through_shim(legacy, ShimConfig(), **options)
    assert cosines(got, expected).min() > 0.999999
    assert tokens == expected_tokens
    assert cosines(plain, expected).max() < 0.99  # the prompt matters: without it the vectors are far apart


def test_a_one_character_drift_is_caught(legacy: TestClient) -> None:
    """The check above can fail: a shim template one word away from the server's gives other vectors. (A whitespace
    drift would not: MiniLM's WordPiece tokenizer drops whitespace, so the server could not tell either.)"""
    expected, _ = legacy_answer(legacy, input=QUERIES, input_type="query")
    drifted = ShimConfig(query_template=config.DEFAULT_QUERY_TEMPLATE.replace("Instruct:", "Instruction:"))
    got, _ = through_shim(legacy, drifted, input_type="query")
    assert cosines(got, expected).min() < 0.9999


def test_the_constants_are_the_same_text() -> None:
    assert legacy_embedder.DEFAULT_QUERY_TEMPLATE == config.DEFAULT_QUERY_TEMPLATE == ShimConfig().query_template
    assert legacy_embedder.DEFAULT_QUERY_TASK == config.DEFAULT_QUERY_TASK == ShimConfig().query_task
