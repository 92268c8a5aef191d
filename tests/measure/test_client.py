import base64
import json

import httpx
import numpy as np

from embedswap.wire.client import EmbeddingClient


def _client(handler) -> EmbeddingClient:
    client = EmbeddingClient("http://test", "m")
    client._http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(handler))
    return client


def _ok(data, tokens=5) -> httpx.Response:
    return httpx.Response(200, json={"data": data, "usage": {"prompt_tokens": tokens}, "model": "m"})


def test_base64_is_decoded_numerically() -> None:
    vector = np.array([0.25, -1.5, 3.0], dtype="<f4")
    encoded = base64.b64encode(vector.tobytes()).decode()
    answer = _client(lambda r: _ok([{"index": 0, "embedding": encoded}])).embed("x", encoding_format="base64")
    assert answer.ok and answer.encoding == "base64"
    assert answer.vectors == [[0.25, -1.5, 3.0]]


def test_reordered_indices_are_sorted_but_recorded() -> None:
    data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
    answer = _client(lambda r: _ok(data)).embed(["a", "b"])
    assert answer.vectors == [[1.0, 0.0], [0.0, 1.0]]
    assert answer.indices == [1, 0]


def test_http_errors_become_records_with_the_message() -> None:
    answer = _client(lambda r: httpx.Response(400, json={"error": {"message": "too long"}})).embed("x")
    assert (answer.status, answer.error, answer.ok) == (400, "too long", False)


def test_malformed_and_nan_answers_are_not_trusted() -> None:
    answer = _client(lambda r: httpx.Response(200, content=b"<html>oops")).embed("x")
    assert answer.status == 200 and not answer.ok and "malformed" in answer.error
    nan_body = b'{"data": [{"index": 0, "embedding": [NaN, 1.0]}], "usage": {"prompt_tokens": 1}}'
    answer = _client(lambda r: httpx.Response(200, content=nan_body)).embed("x")
    assert not answer.ok and "non-finite" in answer.error
    short = [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]
    answer = _client(lambda r: _ok(short)).embed(["a", "b"])
    assert not answer.ok and "different lengths" in answer.error


def test_request_body_is_sent_as_given() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        return _ok([{"index": 0, "embedding": [1.0]}])

    _client(handler).embed(["안녕"], dimensions=2)
    assert seen == {"model": "m", "input": ["안녕"], "dimensions": 2}


def _cohere(embeddings, tokens=7) -> httpx.Response:
    body = {"id": "embd-1", "embeddings": embeddings, "texts": None,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": tokens}}}
    return httpx.Response(200, content=json.dumps(body).encode(),  # json.dumps writes NaN, as a broken server may
                          headers={"content-type": "application/json"})


def test_cohere_shape_is_read_from_another_route() -> None:
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return _cohere({"float": [[1.0, 0.0], [0.0, 2.0]]})

    answer = _client(handler).post_raw(b'{"texts": ["a", "b"], "input_type": "query"}', path="/v2/embed")
    assert paths == ["/v2/embed"]
    assert answer.ok and answer.shape == "cohere" and answer.encoding == "float"
    assert answer.vectors == [[1.0, 0.0], [0.0, 2.0]] and answer.indices == [0, 1]
    assert answer.prompt_tokens == 7
    assert answer.record()["shape"] == "cohere"
    assert "shape" not in _client(lambda r: _ok([{"index": 0, "embedding": [1.0]}])).embed("x").record()


def test_cohere_base64_and_malformed_answers() -> None:
    encoded = base64.b64encode(np.array([0.5, -2.0], dtype="<f4").tobytes()).decode()
    answer = _client(lambda r: _cohere({"base64": [encoded]})).post_raw(b"{}", path="/v2/embed")
    assert answer.ok and answer.encoding == "base64" and answer.vectors == [[0.5, -2.0]]
    for embeddings in ({"binary": [[1, 0]]}, {"float": [[float("nan"), 1.0]]}, {"float": [[1.0], [1.0, 2.0]]}):
        bad = _client(lambda r, e=embeddings: _cohere(e)).post_raw(b"{}", path="/v2/embed")
        assert bad.status == 200 and not bad.ok and bad.error, embeddings
