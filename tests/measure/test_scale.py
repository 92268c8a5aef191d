"""Corpus scale (issue 20): streamed captures, batched queries, samples, chunked exact search."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from embedswap.measure import capture as measure
from embedswap.captures import CaptureExistsError, new_attempt, verify_attempt
from embedswap.wire.client import EmbeddingResponse
from embedswap.measure.errors import StepFailed
from embedswap.measure.capture import capture_queries, capture_workload
from embedswap.ranking.metrics import evaluate, ranking_from, top_rankings
from embedswap.measure.workload import Document, Query, Workload, WorkloadError, load_documents, stratified_sample

DIM = 6


def _vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


class FakeClient:
    """Deterministic in-process answers; ``fail_calls``: the call numbers (0-based) that answer HTTP 500;
    ``short_calls``: calls answered with vectors one dimension short."""

    def __init__(self, fail_calls: set[int] = frozenset(), short_calls: set[int] = frozenset()) -> None:
        self.calls = 0
        self.sizes: list[int] = []
        self.fail_calls, self.short_calls = set(fail_calls), set(short_calls)

    def embed(self, texts: list[str], **fields: object) -> EmbeddingResponse:
        call, self.calls = self.calls, self.calls + 1
        self.sizes.append(len(texts))
        if call in self.fail_calls:
            return EmbeddingResponse(status=500, latency_ms=1.0, error="HTTP 500")
        vectors = [_vector(t + str(fields))[: DIM - 1 if call in self.short_calls else DIM] for t in texts]
        return EmbeddingResponse(status=200, latency_ms=1.0, vectors=vectors, indices=list(range(len(texts))),
                                 prompt_tokens=len(texts))


def _workload(n: int = 25, batch: int = 4, queries: int = 0) -> Workload:
    docs = [Document(id=f"d{i}", text=f"document {i}", lang=["ko", "en", "ja"][i % 3]) for i in range(n)]
    return Workload(documents=docs, queries=[Query(id=f"q{i}", text=f"query {i}") for i in range(queries)],
                    batch_size=batch)


def _no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_streamed_workload_capture_equals_the_answers_and_is_in_the_manifest(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    workload = _workload()
    capture_workload(FakeClient(), workload, attempt, "t", repeats=2)
    stack = attempt.read_array("t/doc_vectors.npy")
    assert stack.shape == (2, 25, DIM) and stack.dtype == np.float32
    expected = np.asarray([_vector(d.text + "{}") for d in workload.documents], dtype=np.float32)
    np.testing.assert_array_equal(stack[0], expected)
    np.testing.assert_array_equal(stack[1], expected)
    assert "captures/t/doc_vectors.npy" in attempt.manifest()["files"] and verify_attempt(attempt) == []
    assert _no_temp_files(attempt.path)
    assert np.asarray(attempt.read_array("t/doc_vectors.npy", mmap=True)[0]).tolist() == expected.tolist()


def test_a_failed_repeat_is_left_out_and_a_short_answer_is_a_failure(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    batches = 7  # 25 documents in batches of 4
    client = FakeClient(fail_calls={batches + 2}, short_calls={2 * batches + 1})  # repeat 1 fails, repeat 2 short
    with pytest.raises(StepFailed, match="2 workload request"):
        capture_workload(client, _workload(), attempt, "t", repeats=3)
    stack = attempt.read_array("t/doc_vectors.npy")
    assert stack.shape == (1, 25, DIM)  # only the complete repeat 0
    assert _no_temp_files(attempt.path)
    assert len(attempt.read_jsonl("t/workload_requests.jsonl")) == 3 * batches


def test_nothing_answered_leaves_no_vectors_file_and_no_temp_file(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    with pytest.raises(StepFailed):
        capture_workload(FakeClient(fail_calls=set(range(100))), _workload(), attempt, "t", repeats=1)
    assert not attempt.has("t/doc_vectors.npy") and _no_temp_files(attempt.path)


def test_an_array_stream_never_overwrites_and_aborts_cleanly(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    attempt.write_array("x/a.npy", np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(CaptureExistsError):
        attempt.array_stream("x/a.npy", (2, 2))
    with pytest.raises(RuntimeError):
        with attempt.array_stream("x/b.npy", (3, 2)) as stream:
            stream[0] = [1, 2]
            raise RuntimeError("server died")
    assert not attempt.has("x/b.npy") and _no_temp_files(attempt.path)
    with attempt.array_stream("x/c.npy", (3, 2)) as stream:
        stream[:] = np.arange(6).reshape(3, 2)
        stream.commit()
    assert attempt.read_array("x/c.npy").tolist() == [[0, 1], [2, 3], [4, 5]]


def test_queries_go_in_batches_and_come_back_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.config import load_experiment

    monkeypatch.setattr(measure, "QUERY_BATCH", 4)
    attempt = new_attempt(tmp_path)
    experiment = load_experiment(_experiment_dir(tmp_path))
    workload = _workload(queries=10)
    client = FakeClient()
    capture_queries(client, experiment, workload, attempt, "t")
    assert client.sizes == [4, 4, 2] * 3
    plain = attempt.read_array("t/query_vectors_plain.npy")
    np.testing.assert_array_equal(plain, np.asarray([_vector(q.text + "{}") for q in workload.queries], np.float32))
    records = {r["variant"]: r for r in attempt.read_jsonl("t/query_requests.jsonl")}
    assert records["plain"]["requests"] == 3 and records["plain"]["prompt_tokens"] == 10
    assert records["plain"]["n_vectors"] == 10 and records["plain"]["status"] == 200


def test_a_failed_query_batch_keeps_no_vectors_of_that_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.config import load_experiment

    monkeypatch.setattr(measure, "QUERY_BATCH", 4)
    attempt = new_attempt(tmp_path)
    capture_queries(FakeClient(fail_calls={1}), load_experiment(_experiment_dir(tmp_path)), _workload(queries=10),
                    attempt, "t")
    assert not attempt.has("t/query_vectors_plain.npy") and attempt.has("t/query_vectors_server_instruction.npy")
    records = {r["variant"]: r for r in attempt.read_jsonl("t/query_requests.jsonl")}
    assert records["plain"]["status"] == 500 and records["plain"]["requests"] == 2
    assert _no_temp_files(attempt.path)


def _experiment_dir(tmp_path: Path) -> Path:
    from embedswap.scaffold import new_experiment

    return new_experiment("scale", tmp_path / "experiments", preset="minilm")


def test_stratified_sample_keeps_every_language_and_its_share() -> None:
    langs = ["ko"] * 700 + ["en"] * 250 + ["ja"] * 49 + ["zh"] * 1
    chosen = stratified_sample(langs, 512)
    assert len(chosen) == 512 and chosen == sorted(set(chosen))
    counts = {lang: sum(1 for i in chosen if langs[i] == lang) for lang in ("ko", "en", "ja", "zh")}
    assert counts["zh"] == 1 and abs(counts["ko"] - 358) <= 1 and abs(counts["en"] - 128) <= 1
    assert stratified_sample(langs, 512) == chosen  # seeded
    assert stratified_sample(langs, 5000) == list(range(1000))


def test_latency_sample_cuts_the_request_batches() -> None:
    workload = _workload(n=100, batch=8)
    assert sum(len(b) for b in workload.latency_batches(None)) == 100
    batches = workload.latency_batches(20)
    ids = [d.id for b in batches for d in b]
    assert len(ids) == 20 and ids == sorted(ids, key=lambda i: int(i[1:])) and len(batches) == 3
    assert ids == [d.id for b in workload.latency_batches(20) for d in b]


def test_chunked_top_k_equals_the_full_stable_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    import embedswap.ranking.metrics as ranking

    rng = np.random.default_rng(3)
    docs = rng.standard_normal((300, 8)).astype(np.float32)
    docs[10] = docs[20] = docs[250]  # ties: document order decides
    queries = np.vstack([rng.standard_normal((40, 8)), docs[250:251]]).astype(np.float32)
    monkeypatch.setattr(ranking, "SEARCH_CHUNK_CELLS", 300 * 7)  # several chunks
    order, scores = top_rankings(docs, queries, 10)
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    full = unit(queries.astype(np.float32)) @ unit(docs).T
    for row in range(len(queries)):
        assert order[row].tolist() == ranking_from(full[row].astype(np.float32))[:10].tolist()
    assert order[-1][:3].tolist() == [10, 20, 250]
    result = evaluate(docs, queries, [f"q{i}" for i in range(41)], [f"d{i}" for i in range(300)],
                      {"q40": {"d20": 2}})
    assert result["per_query"]["q40"]["recall_at_5"] == 1.0 and result["judged_queries"] == 1


def test_duplicate_ids_are_still_named(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n')
    with pytest.raises(WorkloadError, match=r"duplicate document ids \['a'\]"):
        load_documents(path)
