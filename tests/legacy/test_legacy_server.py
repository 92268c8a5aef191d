"""The legacy (home-made) embedding server: OpenAI contract, numerics against sentence-transformers, faults, CLI."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never reach the network

import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

from wordpiece import count_tokens, load_vocab
from embedswap.legacy.server import Embedder, LegacySettings, create_app
from embedswap.legacy.pipeline import pool
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path

MODEL = EMBEDDED_DEFAULT
DIM = 384
MAX_LEN = 256  # sentence_bert_config.json of all-MiniLM-L6-v2
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "임베딩 서버를 vLLM으로 옮기면 무엇이 바뀌나요?",
    "서울의 날씨는 오늘 맑습니다.",
    "Batching engines trade latency for throughput.",
]


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (norm(a) * norm(b))


def embed(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/embeddings", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def app_client() -> Iterator[TestClient]:
    with TestClient(create_app(LegacySettings(model=MODEL))) as client:
        yield client


@pytest.fixture(scope="module")
def embedder(app_client: TestClient) -> Embedder:
    return app_client.app.state.embedder  # type: ignore[attr-defined]


# --- contract --------------------------------------------------------------------------------------------------------


def test_health_and_models(app_client: TestClient) -> None:
    assert app_client.get("/health").json() == {"status": "ok"}
    models = app_client.get("/v1/models").json()
    assert models["object"] == "list"
    card = {"id": MODEL, "object": "model", "owned_by": "embedswap-legacy", "max_model_len": MAX_LEN}
    assert models["data"] == [card]
    assert "EmbeddingRequest" in app_client.get("/openapi.json").json()["components"]["schemas"]


def test_shape_norm_and_model_echo(app_client: TestClient) -> None:
    body = embed(app_client, input="hello world", model="some-other-name", user="u1", unknown_field=True)
    assert body["object"] == "list"
    assert body["model"] == MODEL  # the request's model is ignored, the served name is echoed
    (item,) = body["data"]
    assert item["object"] == "embedding" and item["index"] == 0
    assert len(item["embedding"]) == DIM
    assert norm(item["embedding"]) == pytest.approx(1.0, abs=1e-5)


def test_index_order_matches_inputs(app_client: TestClient) -> None:
    body = embed(app_client, input=TEXTS)
    assert [item["index"] for item in body["data"]] == list(range(len(TEXTS)))
    for text, item in zip(TEXTS, body["data"], strict=True):
        alone = embed(app_client, input=text)["data"][0]["embedding"]
        assert cosine(alone, item["embedding"]) > 0.99999


def test_usage_counts_tokenizer_tokens(app_client: TestClient) -> None:
    # hand-counted: [CLS] the quick brown fox jumps over the lazy dog . [SEP], every word a whole vocabulary entry
    vocab = load_vocab(resolve_model_path(MODEL))
    assert all(w in vocab for w in "the quick brown fox jumps over lazy dog . [CLS] [SEP]".split())
    assert embed(app_client, input=TEXTS[0])["usage"] == {"prompt_tokens": 12, "total_tokens": 12}
    assert embed(app_client, input=[TEXTS[0]] * 3)["usage"]["prompt_tokens"] == 36
    # the rest (Korean, sub-words) against a count made from tokenizer.json's vocabulary, not the server's call
    expected = sum(count_tokens(text, vocab) for text in TEXTS)
    usage = embed(app_client, input=TEXTS)["usage"]
    assert usage == {"prompt_tokens": expected, "total_tokens": expected}


def test_the_independent_count_is_the_hand_count() -> None:
    vocab = load_vocab(resolve_model_path(MODEL))
    assert count_tokens(TEXTS[0], vocab) == 12
    assert count_tokens("Batching", vocab) == 4  # [CLS] batch ##ing [SEP]
    assert count_tokens("a [SEP] b", vocab) == 5  # a special token in the text is one token


def test_matches_sentence_transformers_fp32(app_client: TestClient) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(resolve_model_path(MODEL), device="cpu").encode(TEXTS).tolist()
    served = [item["embedding"] for item in embed(app_client, input=TEXTS)["data"]]
    for ours, theirs in zip(served, reference, strict=True):
        assert cosine(ours, theirs) >= 0.9999


def test_dimensions_truncates_and_renormalises(app_client: TestClient) -> None:
    full = embed(app_client, input=TEXTS[0])["data"][0]["embedding"]
    cut = embed(app_client, input=TEXTS[0], dimensions=256)["data"][0]["embedding"]
    assert len(cut) == 256
    assert norm(cut) == pytest.approx(1.0, abs=1e-5)
    prefix_norm = norm(full[:256])
    assert cut == pytest.approx([x / prefix_norm for x in full[:256]], abs=1e-6)


@pytest.mark.parametrize("dimensions", [0, DIM + 1])
def test_dimensions_out_of_range_is_400(app_client: TestClient, dimensions: int) -> None:
    response = app_client.post("/v1/embeddings", json={"input": "x", "dimensions": dimensions})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "dimensions"


@pytest.mark.parametrize("query_fields", [{"input_type": "query"}, {"instruction": "Find the matching sentence"}])
def test_query_prompt_changes_vector_and_tokens(app_client: TestClient, query_fields: dict[str, str]) -> None:
    plain = embed(app_client, input=TEXTS[1])
    document = embed(app_client, input=TEXTS[1], input_type="document")
    query = embed(app_client, input=TEXTS[1], **query_fields)
    assert document["data"][0]["embedding"] == plain["data"][0]["embedding"]
    assert query["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"]
    assert cosine(query["data"][0]["embedding"], plain["data"][0]["embedding"]) < 0.999


def test_instruction_text_is_the_task(app_client: TestClient) -> None:
    one = embed(app_client, input=TEXTS[0], instruction="Retrieve Korean weather reports")
    two = embed(app_client, input=TEXTS[0], instruction="Classify the sentiment")
    assert cosine(one["data"][0]["embedding"], two["data"][0]["embedding"]) < 0.9999


def test_overlong_input_is_truncated(app_client: TestClient) -> None:
    body = embed(app_client, input="word " * 600)
    assert body["usage"]["prompt_tokens"] == MAX_LEN
    assert len(body["data"][0]["embedding"]) == DIM


def test_encoding_format_is_ignored(app_client: TestClient) -> None:
    item = embed(app_client, input="hello", encoding_format="base64")["data"][0]
    assert isinstance(item["embedding"], list) and all(isinstance(x, float) for x in item["embedding"])


def test_token_id_input(app_client: TestClient, embedder: Embedder) -> None:
    ids = embedder.tokenizer(TEXTS[0])["input_ids"]
    from_text = embed(app_client, input=TEXTS[0])
    from_ids = embed(app_client, input=ids)
    from_id_lists = embed(app_client, input=[ids, ids[:3]])
    assert from_ids["usage"]["prompt_tokens"] == len(ids)
    assert cosine(from_ids["data"][0]["embedding"], from_text["data"][0]["embedding"]) > 0.99999
    assert len(from_id_lists["data"]) == 2
    assert cosine(from_id_lists["data"][0]["embedding"], from_text["data"][0]["embedding"]) > 0.99999


def test_alone_equals_inside_batch(app_client: TestClient) -> None:
    text = TEXTS[1]
    alone = embed(app_client, input=[text])["data"][0]["embedding"]
    batch = [f"filler sentence number {i} with a few more words to pad the batch" for i in range(7)]
    batch.insert(3, text)
    in_batch = embed(app_client, input=batch)["data"][3]["embedding"]
    assert cosine(alone, in_batch) > 0.99999


@pytest.mark.parametrize(
    ("content", "status"),
    [
        (b"this is not json", 400),
        (b'{"input": []}', 400),
        (b'{"input": ""}', 400),
        (b'{"input": 42}', 400),
        (b'{"input": [1, "mixed"]}', 400),
        (b'{"input": [[]]}', 400),
        (b'{"input": [99999999]}', 400),
        (b'{"input": [-1]}', 400),
        (b'{"input": "x", "input_type": "banana"}', 400),
        (b'{"input": "x", "dimensions": "256"}', 400),
        (b'{"input": "x", "instruction": "t", "input_type": "document"}', 400),
        (b'{"input": [101, 102], "input_type": "query"}', 400),
        (b'{"model": "m"}', 400),
        (b'["a", "b"]', 400),
        (b'{"input": [' + b",".join([b'"a"'] * 2049) + b"]}", 400),
        (b'{"input": "' + b"a" * (8 * 1024 * 1024) + b'"}', 413),
    ],
    ids=[
        "non-json", "empty-list", "empty-string", "wrong-type", "mixed-list", "empty-ids", "id-out-of-vocab",
        "negative-id", "bad-input-type", "dimensions-string", "instruction-on-document", "query-prompt-on-ids",
        "missing-input", "not-an-object", "too-many-inputs", "body-too-large",
    ],
)
def test_client_errors_are_4xx_openai_shape(app_client: TestClient, content: bytes, status: int) -> None:
    response = app_client.post("/v1/embeddings", content=content, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"] and error["type"] == "invalid_request_error"


def test_body_limit_applies_without_content_length() -> None:
    app = create_app(LegacySettings(model=MODEL, max_body_bytes=1000))
    chunks = [b'{"input": "', b"a" * 2000, b'"}']
    with TestClient(app) as client:
        response = client.post("/v1/embeddings", content=iter(chunks), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_health_answers_while_a_request_computes(app_client: TestClient, embedder: Embedder) -> None:
    results: list[int] = []
    with embedder.lock:  # the global lock held: the embeddings request waits inside its worker thread
        worker = threading.Thread(
            target=lambda: results.append(app_client.post("/v1/embeddings", json={"input": "x"}).status_code)
        )
        worker.start()
        time.sleep(0.5)
        started = time.perf_counter()
        assert app_client.get("/health").status_code == 200
        assert time.perf_counter() - started < 2.0
        assert worker.is_alive() and results == []
    worker.join(timeout=30)
    assert results == [200]


# --- pooling ---------------------------------------------------------------------------------------------------------


def test_pool_mean_ignores_padding() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[2.0, 0.0], [0.0, 2.0], [4.0, 4.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    expected = torch.tensor([[2.0, 3.0], [2.0, 2.0]])
    assert torch.allclose(pool(hidden, mask, "mean", "right"), expected)


def test_pool_lasttoken_left_padding() -> None:
    hidden = torch.tensor([[[9.0, 9.0], [1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0], [0.5, 0.25]]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert torch.equal(pool(hidden, mask, "lasttoken", "left"), torch.tensor([[3.0, 4.0], [0.5, 0.25]]))


def test_pool_lasttoken_and_cls_right_padding() -> None:
    hidden = torch.arange(12, dtype=torch.float32).reshape(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(pool(hidden, mask, "lasttoken", "right"), torch.tensor([[2.0, 3.0], [10.0, 11.0]]))
    assert torch.equal(pool(hidden, mask, "cls", "right"), torch.tensor([[0.0, 1.0], [6.0, 7.0]]))
    left_mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert torch.equal(pool(hidden, left_mask, "cls", "left"), torch.tensor([[2.0, 3.0], [6.0, 7.0]]))


# --- fault injection -------------------------------------------------------------------------------------------------


def fault_client(fault: str, after: int = 0) -> TestClient:
    return TestClient(create_app(LegacySettings(model=MODEL, fault=fault, fault_after=after)))


def test_fault_http500_after_n_successes() -> None:
    with fault_client("http500", after=1) as client:
        assert client.post("/v1/embeddings", json={"input": "a"}).status_code == 200
        failed = client.post("/v1/embeddings", json={"input": "a"})
        assert failed.status_code == 500
        assert "error" in failed.json()
        assert client.get("/health").status_code == 200


def test_fault_reorder() -> None:
    with fault_client("reorder") as client:
        body = client.post("/v1/embeddings", json={"input": TEXTS[:3]}).json()
    assert [item["index"] for item in body["data"]] == [2, 1, 0]


def test_fault_wrong_length() -> None:
    with fault_client("wrong-length") as client:
        body = client.post("/v1/embeddings", json={"input": TEXTS[:2]}).json()
    assert [len(item["embedding"]) for item in body["data"]] == [DIM - 1, DIM]


def test_fault_nan_is_literal_nan() -> None:
    with fault_client("nan") as client:
        response = client.post("/v1/embeddings", json={"input": "a"})
    assert response.status_code == 200
    assert b"NaN" in response.content


# --- the real process ------------------------------------------------------------------------------------------------


def test_subprocess_serves_and_stops_on_sigterm(free_port: int) -> None:
    port = free_port
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "embedswap.legacy_server", "--model", MODEL, "--port", str(port)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, "server exited during start-up"
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server not healthy within 120 s"
                time.sleep(0.5)
            url = f"http://127.0.0.1:{port}/v1/embeddings"
            response = httpx.post(url, json={"input": ["hi", "안녕"]}, timeout=30)
            assert response.status_code == 200
            assert len(response.json()["data"]) == 2

            process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.seek(0)
        output = log.read().decode(errors="replace")
    assert f"legacy server ready on http://127.0.0.1:{port}" in output
    assert "POST /v1/embeddings status=200 inputs=2" in output
    assert "Traceback" not in output
