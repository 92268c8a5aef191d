"""Issue 16: the shim fixes what it can and invents nothing. Against a real HTTP server (in-process fake) that slices
`dimensions` without re-normalising (as Infinity 0.0.78 does), writes data[] in reverse and omits `usage`, the
official `openai` client through the shim gets unit-length vectors in `index` order and no `usage`."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from embedswap.wire.client import EmbeddingClient
from embedswap.shim.settings import ShimConfig
from embedswap.shim.transport import ShimTransport
from fakeservers import Behaviour, serve, unit_vector

TEXTS = ["first document", "second one", "a third, longer document"]


def _probe(client: EmbeddingClient, name: str, body: dict) -> dict:
    answer = client.post_raw(json.dumps({"model": "embedder", **body}).encode())
    return {"probe": name, "sent": body, **answer.record(), "vector": answer.vectors[0] if answer.vectors else None}


def _records(port: int) -> list[dict]:
    with EmbeddingClient(f"http://127.0.0.1:{port}", "embedder") as client:
        return [_probe(client, "plain", {"input": [TEXTS[0]]}),
                _probe(client, "dimensions_reduced", {"input": [TEXTS[0]], "dimensions": 8})]


def test_from_probes_learns_to_renormalise_only_against_unit_length_legacy() -> None:
    with serve(Behaviour()) as legacy_port, serve(Behaviour(slice_renormalise=False)) as candidate_port:
        legacy, candidate = _records(legacy_port), _records(candidate_port)
    assert np.linalg.norm(candidate[1]["vector"]) < 0.99  # the sliced answer is not unit length
    config = ShimConfig.from_probes(candidate, legacy)
    assert config.renormalise is True and config.strip_dimensions is False  # dimensions honoured, not renormalised
    assert config.reason_codes["renormalise"] == {"code": "shim_renormalise", "params": {"probes": "dimensions_reduced"}}
    assert config.reason_codes["usage"]["code"] == "shim_usage_server"
    # a legacy server whose own vectors are not unit length: nothing to restore
    scaled_legacy = [{**r, "vector": (np.asarray(r["vector"]) * 2).tolist()} for r in legacy]
    assert ShimConfig.from_probes(candidate, scaled_legacy).renormalise is False
    assert ShimConfig.from_probes(legacy, legacy).renormalise is False


def test_openai_client_gets_unit_vectors_in_index_order_and_no_invented_usage() -> None:
    openai = pytest.importorskip("openai")
    behaviour = Behaviour(slice_renormalise=False, usage=None, reverse=True)
    with serve(Behaviour()) as legacy_port, serve(behaviour) as port:
        config = ShimConfig.from_probes(_records(port), _records(legacy_port))
        transport = ShimTransport(config, f"http://127.0.0.1:{port}", model="embedder")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", max_retries=0,
                               http_client=httpx.Client(transport=transport))
        sliced = client.embeddings.create(model="embedder", input=TEXTS, dimensions=8)  # SDK default: base64
        full = client.embeddings.create(model="embedder", input=TEXTS, encoding_format="float")
        transport.close()
    upstream = [body for method, _, body in behaviour.requests if method == "POST"]
    assert upstream[-2]["dimensions"] == 8  # passed through: the server honours it, only the length is off
    for response, dim in ((sliced, 8), (full, 16)):
        assert [item.index for item in response.data] == [0, 1, 2]
        assert response.usage is None  # the server sent none; the shim does not make one up
        for text, item in zip(TEXTS, response.data):
            vector = np.asarray(item.embedding, dtype=np.float64)
            assert vector.shape == (dim,)
            assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
            expected = unit_vector(text)[:dim]
            np.testing.assert_allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
