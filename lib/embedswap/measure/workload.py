"""The fixed workload: documents (sent in batches, in file order), queries, and relevance judgements (JSONL)."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from embedswap.config.experiment import Experiment, resolve_path


SAMPLE_SEED = 20  # the samples are reproducible: the same corpus and size give the same documents


class WorkloadError(ValueError):
    """A workload file is missing or has a malformed line; the message names file and line."""


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    lang: str = "und"
    title: str = ""


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    lang: str = "und"


@dataclass(frozen=True)
class Workload:
    documents: list[Document]
    queries: list[Query] = field(default_factory=list)
    # query id -> {doc id: graded relevance}
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    batch_size: int = 8

    def batches(self) -> list[list[Document]]:
        """Consecutive batches in file order (the legacy client's real batching)."""
        docs = self.documents
        return [docs[i : i + self.batch_size] for i in range(0, len(docs), self.batch_size)]

    def doc_index(self) -> dict[str, int]:
        return {doc.id: i for i, doc in enumerate(self.documents)}

    def latency_sample(self, sample: int | None, seed: int = SAMPLE_SEED) -> list[int]:
        """Indices of the documents the latency requests are cut from (all of them when ``sample`` is None)."""
        if sample is None or sample >= len(self.documents):
            return list(range(len(self.documents)))
        return sorted(random.Random(seed).sample(range(len(self.documents)), sample))

    def latency_batches(self, sample: int | None, seed: int = SAMPLE_SEED) -> list[list[Document]]:
        """The batches the latency runs cut their requests from: the whole corpus, or ``sample`` documents drawn
        with a fixed seed and kept in file order (``latency.sample``)."""
        if sample is None or sample >= len(self.documents):
            return self.batches()
        docs = [self.documents[i] for i in self.latency_sample(sample, seed)]
        return [docs[i : i + self.batch_size] for i in range(0, len(docs), self.batch_size)]


def stratified_sample(langs: Sequence[str], size: int, seed: int = SAMPLE_SEED) -> list[int]:
    """Indices of ``size`` documents, stratified by language, in file order (``parity.sample``).

    Each language gets its share of ``size`` by largest remainder, and at least one document, so a language with
    few documents is still gated; within a language the documents are drawn with a fixed seed. A corpus of
    ``size`` documents or fewer is returned whole.
    """
    n = len(langs)
    if size >= n:
        return list(range(n))
    groups: dict[str, list[int]] = {}
    for i, lang in enumerate(langs):
        groups.setdefault(lang, []).append(i)
    quota = {lang: max(1, size * len(ix) // n) for lang, ix in groups.items()}
    remainders = sorted(groups, key=lambda lang: (-(size * len(groups[lang]) % n), lang))
    for lang in remainders:  # largest remainder first, until the sample has its size
        if sum(quota.values()) >= size:
            break
        if quota[lang] < len(groups[lang]):
            quota[lang] += 1
    rng = random.Random(seed)
    chosen = [i for lang in sorted(groups) for i in rng.sample(groups[lang], min(quota[lang], len(groups[lang])))]
    return sorted(chosen)


def sample_record(langs: Sequence[str], chosen: Sequence[int], method: str) -> dict[str, object]:
    """What the summary records of a sample: its size, the corpus size, per language, how it was drawn."""
    return {"documents": len(chosen), "of": len(langs), "whole": len(chosen) == len(langs), "method": method,
            "seed": SAMPLE_SEED, "languages": dict(sorted(Counter(langs[i] for i in chosen).items()))}


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    if not path.exists():
        raise WorkloadError(f"{path}: not found")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WorkloadError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise WorkloadError(f"{path}:{number}: expected a JSON object")
            yield number, record


def _require(path: Path, number: int, record: dict, key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise WorkloadError(f"{path}:{number}: missing or empty '{key}'")
    return value


def load_documents(path: Path) -> list[Document]:
    docs = [
        Document(
            id=_require(path, n, r, "id"),
            text=_require(path, n, r, "text"),
            lang=str(r.get("lang", "und")),
            title=str(r.get("title", "")),
        )
        for n, r in _read_jsonl(path)
    ]
    # Counter, not list.count: at 100k documents the quadratic check alone took minutes
    duplicates = sorted(i for i, n in Counter(d.id for d in docs).items() if n > 1)
    if duplicates:
        raise WorkloadError(f"{path}: duplicate document ids {duplicates}")
    if not docs:
        raise WorkloadError(f"{path}: no documents")
    return docs


def load_queries(path: Path) -> list[Query]:
    return [
        Query(id=_require(path, n, r, "id"), text=_require(path, n, r, "text"), lang=str(r.get("lang", "und")))
        for n, r in _read_jsonl(path)
    ]


def load_qrels(path: Path, doc_ids: set[str], query_ids: set[str]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for number, record in _read_jsonl(path):
        query_id = _require(path, number, record, "query_id")
        doc_id = _require(path, number, record, "doc_id")
        if query_id not in query_ids:
            raise WorkloadError(f"{path}:{number}: unknown query_id '{query_id}'")
        if doc_id not in doc_ids:
            raise WorkloadError(f"{path}:{number}: unknown doc_id '{doc_id}'")
        qrels.setdefault(query_id, {})[doc_id] = int(record.get("relevance", 1))
    return qrels


def load_workload(experiment: Experiment, experiment_dir: Path) -> Workload:
    config = experiment.workload
    documents = load_documents(resolve_path(experiment_dir, config.documents))
    queries = load_queries(resolve_path(experiment_dir, config.queries)) if config.queries else []
    qrels: dict[str, dict[str, int]] = {}
    if config.qrels and queries:
        qrels = load_qrels(
            resolve_path(experiment_dir, config.qrels), {d.id for d in documents}, {q.id for q in queries}
        )
    return Workload(documents=documents, queries=queries, qrels=qrels, batch_size=config.batch_size)
