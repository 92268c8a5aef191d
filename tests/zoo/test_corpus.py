"""The offline corpus of real texts (issue 57): docstrings of the kit's pinned dependencies read with ast, each with
its summary line as a query whose relevant document is its own body; deterministic, deduplicated, written as a
workload the kit reads."""

from __future__ import annotations

import json
from pathlib import Path

from embedswap.measure.workload import load_documents, load_qrels, load_queries
from embedswap.zoo.corpus import MAX_BODY, MIN_BODY, MIN_SUMMARY, _split, docstring_corpus, write_workload


def test_a_numpydoc_docstring_splits_into_its_summary_and_prose() -> None:
    doc = """Compute the thing of an array, which is long enough to be a summary.

    A paragraph that explains what the thing is, and why one would want it, in a few sentences of prose
    that are long enough to be kept as a document of this corpus by the minimum length rule of the module.

    Parameters
    ----------
    a : array_like
        The input.

    Examples
    --------
    >>> thing([1, 2])
    """
    summary, body = _split(doc)
    assert summary.startswith("Compute the thing") and "Parameters a : array_like The input." in body
    assert "----" not in body and ">>>" not in body  # underlines dropped, examples cut
    assert _split("Too short.\n\nBody.") is None


def test_the_corpus_is_deterministic_and_deduplicated() -> None:
    first, again = docstring_corpus(limit=60), docstring_corpus(limit=60)
    assert first.sha256 == again.sha256 and len(first.ids) == 60
    assert len(set(first.documents)) == 60
    assert all(len(q) >= MIN_SUMMARY and MIN_BODY <= len(d) <= MAX_BODY for q, d in zip(first.queries,
                                                                                         first.documents))
    assert set(first.versions) >= {"numpy"}


def test_the_corpus_is_a_workload_the_kit_reads(tmp_path: Path) -> None:
    corpus = write_workload(tmp_path / "w", limit=40, queries=10)
    manifest = json.loads((tmp_path / "w" / "corpus.json").read_text())
    assert manifest["documents"] == 40 and manifest["queries"] == 10 and manifest["sha256"] == corpus.sha256
    documents = load_documents(tmp_path / "w" / "documents.jsonl")
    queries = load_queries(tmp_path / "w" / "queries.jsonl")
    qrels = load_qrels(tmp_path / "w" / "qrels.jsonl", {d.id for d in documents}, {q.id for q in queries})
    assert len(documents) == 40 and len(queries) == 10
    assert all(len(qrels[q.id]) == 1 for q in queries)
