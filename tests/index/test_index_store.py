"""The index part at the analysis level on the real embedded PostgreSQL + pgvector, with synthetic vectors whose
relation to the legacy ones is known: identical (keep), length only (cosine unchanged, inner product changed),
rotated (the cross search loses, the Procrustes map recovers it) and unrelated (re-embed). A full run per case
would cost minutes of CI each; the demo's identical case also runs end to end (tests/e2e/test_end_to_end.py)."""

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

N_DOCS, N_QUERIES, DIM = 160, 40, 24


def _world(seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit document vectors, queries near their grade-2 document, grades (queries, docs): 2 for the source, 1 for
    its nearest other document."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(N_DOCS, DIM))
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    source = rng.choice(N_DOCS, size=N_QUERIES, replace=False)
    queries = docs[source] + 0.35 * rng.normal(size=(N_QUERIES, DIM)) / np.sqrt(DIM)
    grades = np.zeros((N_QUERIES, N_DOCS))
    for q, d in enumerate(source):
        grades[q, d] = 2
        near = np.argsort(-(docs @ docs[d]))
        grades[q, near[1]] = 1
    return docs.astype(np.float32), queries.astype(np.float32), grades


def _decide(tmp_path: Path, candidate_docs: np.ndarray, candidate_queries: np.ndarray,
            config: IndexConfig) -> tuple[IndexDecision, dict[str, Any]]:
    docs, queries, grades = _world()
    vectors = {"legacy": {"docs": docs, "queries": queries},
               "cand": {"docs": candidate_docs, "queries": candidate_queries}}
    capture = run_searches(vectors, "legacy", ["cand"], config, tmp_path / "pg")
    assert capture["measured"] and capture["store"]["kind"] == "embedded", capture
    assert capture["store"]["server_version"].startswith("18") and capture["store"]["pgvector_version"] == "0.8.5"
    scored = score_candidate(capture["by_candidate"]["cand"], {"legacy": docs, "candidate": candidate_docs},
                             {"legacy": queries, "candidate": candidate_queries}, config, grades)
    entry = IndexCandidate.model_validate(scored)
    return candidate_decision(entry, DecisionsConfig(), config, config.distance, []), scored


def test_identical_vectors_keep_the_index_with_the_identity_map(tmp_path: Path) -> None:
    docs, queries, _ = _world()
    decision, scored = _decide(tmp_path, docs.copy(), queries.copy(), IndexConfig())
    assert decision.choice == "keep" and decision.cross.code == "equivalent"
    assert decision.retention == pytest.approx(1.0) and decision.backward_compatible is True
    assert decision.adapter.identity is True and decision.adapter.residual_test < 1e-6
    assert decision.adapter.retained == pytest.approx(1.0)  # the identity: no improvement claimed
    assert decision.length == "same" and decision.advice == "none"
    assert 0.8 <= decision.hnsw_recall <= 1.0
    shares = sorted({c["share"] for c in scored["cells"]})
    assert shares == [0.0, 0.25, 0.5, 0.75, 1.0]


@pytest.mark.parametrize("distance", ["cosine", "inner_product"])
def test_length_only_difference(tmp_path: Path, distance: str) -> None:
    docs, queries, _ = _world()
    rng = np.random.default_rng(11)
    scale = rng.uniform(0.3, 3.0, size=(N_DOCS, 1)).astype(np.float32)  # a server that does not normalise
    decision, _ = _decide(tmp_path, docs * scale, queries * 2.0, IndexConfig(distance=distance))
    assert decision.length == "length_only"
    if distance == "cosine":
        assert decision.advice == "keep_cosine" and decision.choice == "keep"
    else:
        assert decision.advice == "use_cosine_or_renormalise"
        full = next(c for c in decision.cells if c.queries == "candidate" and c.share == 1
                    and c.method == "exact")
        assert full.overlap.code != "equivalent"  # the inner-product index ranks differently


def test_rotated_space_loses_the_cross_search_and_the_adapter_recovers_it(tmp_path: Path) -> None:
    docs, queries, _ = _world()
    rotation, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(DIM, DIM)))
    decision, _ = _decide(tmp_path, (docs @ rotation).astype(np.float32),
                               (queries @ rotation).astype(np.float32), IndexConfig())
    assert decision.cross.code == "different" and decision.cross.direction == "worse"
    assert decision.cross.high < 0  # the whole interval is a loss
    assert decision.backward_compatible is False and decision.retention < 0.5
    assert decision.adapter.identity is False and decision.adapter.residual_test < 1e-3
    assert decision.adapter.retained == pytest.approx(1.0, abs=0.02)
    assert (decision.choice, decision.map_kind) == ("map", "orthogonal")
    curve = sorted((c for c in decision.cells if c.queries == "candidate" and c.method == "exact"),
                   key=lambda c: c.share)
    assert curve[0].ndcg_at_10 < curve[2].ndcg_at_10 < curve[-1].ndcg_at_10  # the mixed-share curve


def test_unrelated_space_is_re_embedded(tmp_path: Path) -> None:
    # another model's space: the same relevance structure, no linear relation to the legacy vectors
    docs, queries, _ = _world()
    rng = np.random.default_rng(9)
    w = rng.normal(size=(DIM, DIM)).astype(np.float32)
    decision, _ = _decide(tmp_path, np.tanh(3 * docs @ w), np.tanh(3 * queries @ w), IndexConfig())
    assert decision.cross.code == "different" and decision.choice == "re_embed"
    assert decision.adapter.identity is False
    assert decision.adapter.verdict.code not in ("equivalent", "non_inferior")


def test_user_dsn_wrong_dsn_and_a_server_lost_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    from embedswap.index import searches
    from embedswap.vectorstore.server import EmbeddedPostgres

    docs, queries, _ = _world()
    vectors = {"legacy": {"docs": docs, "queries": queries}, "a": {"docs": docs, "queries": queries},
               "b": {"docs": docs, "queries": queries}}
    config = IndexConfig(dsn_env="EMBEDSWAP_TEST_INDEX_DSN", shares=[0, 1], schema_name="embedswap_idx")
    with EmbeddedPostgres(tmp_path / "user") as user_server:
        # the user's own PostgreSQL (here the kit's, reached by TCP with a password like any other server)
        monkeypatch.setenv("EMBEDSWAP_TEST_INDEX_DSN", user_server.dsn)
        capture = run_searches(vectors, "legacy", ["a"], config, tmp_path / "unused")
        assert capture["store"] == {"kind": "dsn", "server_version": capture["store"]["server_version"],
                                    "pgvector_version": "0.8.5", "dsn_env": "EMBEDSWAP_TEST_INDEX_DSN"}
        assert capture["by_candidate"]["a"]["measured"] is True
        assert user_server.password not in str(capture)
        assert not (tmp_path / "unused").exists()  # nothing started locally

        monkeypatch.setenv("EMBEDSWAP_TEST_INDEX_DSN", user_server.dsn.replace(user_server.password, "wrong-pw-1"))
        failed = run_searches(vectors, "legacy", ["a"], config, tmp_path / "unused")
        assert failed["measured"] is False and failed["reason"]["code"] == "vector_store_failed"
        assert "\n" not in failed["why"] and "wrong-pw-1" not in failed["why"]

    # the embedded server killed while the second candidate is searched: the first is kept, the second recorded
    real_search = searches.store_search
    calls = {"n": 0}

    def dying_search(conn: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 30:  # well into candidate "b" (a candidate makes 2 shares x 4 + 2 x 3 x 2 = 20 searches)
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            postmaster = int((Path(conn.execute("SHOW data_directory").fetchone()[0]) / "postmaster.pid")
                             .read_text().splitlines()[0])
            assert pid != postmaster
            os.killpg(postmaster, signal.SIGKILL)
            # the backend is a session leader of its own (PostgreSQL's setsid): the group kill leaves it to notice
            # the postmaster's death later, and under load it could answer the rest of "b"'s searches
            os.kill(pid, signal.SIGKILL)
        return real_search(conn, *args, **kwargs)

    monkeypatch.setattr(searches, "store_search", dying_search)
    lost = run_searches(vectors, "legacy", ["a", "b"], IndexConfig(shares=[0, 1]), tmp_path / "pg")
    assert lost["measured"] is True and lost["by_candidate"]["a"]["measured"] is True
    assert lost["by_candidate"]["b"]["reason"]["code"] == "vector_store_lost"
    assert "\n" not in lost["by_candidate"]["b"]["why"]


def test_numpy_exact_beyond_the_store_limit_ranks_as_the_store(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.index import searches

    docs, queries, _ = _world()
    vectors = {"legacy": {"docs": docs, "queries": queries}, "c": {"docs": docs * 1.5, "queries": queries}}
    config = IndexConfig(shares=[0, 1])
    on_store = run_searches(vectors, "legacy", ["c"], config, tmp_path / "a")["by_candidate"]["c"]
    monkeypatch.setattr(searches, "EXACT_ON_STORE_MAX_PAIRS", 0)
    in_numpy = run_searches(vectors, "legacy", ["c"], config, tmp_path / "b")["by_candidate"]["c"]
    assert (on_store["exact"], in_numpy["exact"]) == ("store", "numpy")
    for distance in ("cosine", "inner_product", "l2"):
        for side in ("legacy", "candidate"):
            for source in ("legacy", "candidate"):
                a = np.asarray(on_store["by_distance"][distance][side][source])
                b = np.asarray(in_numpy["by_distance"][distance][side][source])
                assert (a[:, 0] == b[:, 0]).mean() >= 0.95, (distance, side, source)  # float4 vs float64 ties
    assert np.mean(np.asarray(on_store["shares"]["1"]["candidate"]["exact"])
                   == np.asarray(in_numpy["shares"]["1"]["candidate"]["exact"])) >= 0.95
