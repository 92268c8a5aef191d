"""``index.hnsw_shares`` on the real embedded PostgreSQL + pgvector: ``ends`` builds and searches HNSW only at
shares 0 and 1 and searches the mixed shares exactly; ``auto`` picks ``all`` or ``ends`` by the corpus size (a small
limit set through the config, so a tiny corpus exercises both); the plan reaches the summary and the decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embedswap.analysis.index_decision import candidate_decision
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.index import IndexConfig
from embedswap.index import searches
from embedswap.index.adapter import rank
from embedswap.index.exact import grid_exact
from embedswap.index.searches import mixed_documents, run_searches, share_draw
from embedswap.summary.sections.index import score_candidate
from embedswap.summary.types_index import HnswPlan, IndexCandidate
from typed_summary import as_typed

N_DOCS, N_QUERIES, DIM = 120, 30, 16


def _vectors(seed: int = 7) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(N_DOCS, DIM)).astype(np.float32)
    candidate = (docs + 0.3 * rng.normal(size=docs.shape)).astype(np.float32)
    queries = (docs[rng.choice(N_DOCS, N_QUERIES, replace=False)]
               + 0.2 * rng.normal(size=(N_QUERIES, DIM))).astype(np.float32)
    return {"legacy": {"docs": docs, "queries": queries}, "cand": {"docs": candidate, "queries": queries}}


def _methods(entry: dict[str, Any]) -> dict[float, set[str]]:
    return {s["share"]: set(s["legacy"]) | set(s["candidate"]) for s in entry["shares"].values()}


def _store_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the store's HNSW builds and HNSW searches (the real ones still run)."""
    calls = {"builds": 0, "hnsw_searches": 0}
    real_build, real_search = searches.create_hnsw_index, searches.store_search

    def build(*args: Any, **kwargs: Any) -> Any:
        calls["builds"] += 1
        return real_build(*args, **kwargs)

    def search(*args: Any, **kwargs: Any) -> Any:
        calls["hnsw_searches"] += not kwargs.get("exact", False)
        return real_search(*args, **kwargs)

    monkeypatch.setattr(searches, "create_hnsw_index", build)
    monkeypatch.setattr(searches, "store_search", search)
    return calls


@pytest.mark.parametrize("exact_in", ["store", "numpy"])
def test_ends_builds_and_searches_hnsw_only_at_shares_0_and_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             exact_in: str) -> None:
    if exact_in == "numpy":
        monkeypatch.setattr(searches, "EXACT_ON_STORE_MAX_PAIRS", 0)
    calls = _store_calls(monkeypatch)
    config = IndexConfig(hnsw_shares="ends")
    capture = run_searches(_vectors(), "legacy", ["cand"], config, tmp_path / "pg")
    entry = capture["by_candidate"]["cand"]
    assert capture["measured"] and entry["measured"] and entry["exact"] == exact_in
    assert capture["hnsw_plan"] == {"setting": "ends", "mode": "ends", "documents": N_DOCS,
                                    "auto_max_documents": config.hnsw_auto_max_documents,
                                    "shares": [0.0, 1.0], "exact_only": [0.25, 0.5, 0.75]}
    assert entry["hnsw_shares"] == [0.0, 1.0]
    assert _methods(entry) == {0.0: {"exact", "hnsw"}, 0.25: {"exact"}, 0.5: {"exact"}, 0.75: {"exact"},
                               1.0: {"exact", "hnsw"}}
    assert calls == {"builds": 2, "hnsw_searches": 2 * 2}  # two shares, two query sources
    # the exact searches at the mixed shares rank the mixed index as numpy does
    vectors = _vectors()
    for share in (0.25, 0.5, 0.75):
        docs = mixed_documents(vectors["legacy"]["docs"], vectors["cand"]["docs"], share, config.seed)
        want = rank(docs, vectors["cand"]["queries"], config.distance, config.k)
        got = np.asarray(entry["shares"][f"{share:g}"]["candidate"]["exact"])
        assert (got[:, 0] == want[:, 0]).mean() >= 0.95  # float4 on the store, float64 here: near-ties only

    # scored and decided as any grid: HNSW recall from the two ends, the mixed shares exact only
    scored = score_candidate(entry, {"legacy": vectors["legacy"]["docs"], "candidate": vectors["cand"]["docs"]},
                             {"legacy": vectors["legacy"]["queries"], "candidate": vectors["cand"]["queries"]},
                             config, np.zeros((0, 0)))
    decision = candidate_decision(IndexCandidate.model_validate(scored), DecisionsConfig(), config,
                                  config.distance, [])
    hnsw_cells = {c.share for c in decision.cells if c.method == "hnsw"}
    assert hnsw_cells == {0.0, 1.0} and decision.hnsw_recall is not None
    assert {c.share for c in decision.cells if c.method == "exact"} == {0.0, 0.25, 0.5, 0.75, 1.0}


@pytest.mark.parametrize(("limit", "mode"), [(N_DOCS, "all"), (N_DOCS - 1, "ends")])
def test_auto_picks_by_the_corpus_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int,
                                       mode: str) -> None:
    calls = _store_calls(monkeypatch)
    config = IndexConfig(shares=[0, 0.5, 1], hnsw_auto_max_documents=limit)
    capture = run_searches(_vectors(), "legacy", ["cand"], config, tmp_path / "pg")
    plan = HnswPlan.model_validate(capture["hnsw_plan"])
    assert plan.setting == "auto" and plan.mode == mode and plan.auto_max_documents == limit
    assert plan.exact_only == ([] if mode == "all" else [0.5])
    assert calls["builds"] == (3 if mode == "all" else 2)
    assert _methods(capture["by_candidate"]["cand"])[0.5] == ({"exact", "hnsw"} if mode == "all" else {"exact"})


def test_grid_exact_ranks_every_share_and_distance_as_rank() -> None:
    vectors = _vectors(11)
    legacy, candidate = vectors["legacy"]["docs"], vectors["cand"]["docs"] * 1.7  # lengths differ: l2/ip move
    queries = {"legacy": vectors["legacy"]["queries"], "candidate": vectors["cand"]["queries"] * 0.5}
    shares = [0.0, 0.3, 1.0]
    masks = {}
    for share in shares:
        masks[f"{share:g}"] = np.zeros(N_DOCS, dtype=bool)
        masks[f"{share:g}"][share_draw(N_DOCS, share, 4)] = True
    got = grid_exact(legacy, candidate, queries, masks, "l2", 10)
    for distance in ("cosine", "inner_product", "l2"):
        for side, docs in (("legacy", legacy), ("candidate", candidate)):
            for source, q in queries.items():
                want = rank(docs, q, distance, 10)
                assert (got["by_distance"][distance][side][source] == want).mean() >= 0.99, (distance, side)
    for share in shares:
        docs = mixed_documents(legacy, candidate, share, 4)
        for source, q in queries.items():
            assert (got["shares"][f"{share:g}"][source] == rank(docs, q, "l2", 10)).mean() >= 0.99


def test_grades_of_the_searched_queries_only() -> None:
    from types import SimpleNamespace

    from embedswap.summary.sections.index import grades

    docs = [SimpleNamespace(id=f"d{i}") for i in range(4)]
    queries = [SimpleNamespace(id=f"q{i}") for i in range(3)]
    workload = SimpleNamespace(documents=docs, queries=queries,
                               qrels={"q0": {"d1": 2}, "q2": {"d3": 1, "d0": 2, "gone": 1}})
    whole = grades(workload)
    assert whole.shape == (3, 4) and whole[0, 1] == 2 and whole[2, 3] == 1 and whole[2, 0] == 2
    assert np.array_equal(grades(workload, np.array([2, 0])), whole[[2, 0]])


def test_step_table_names_the_hnsw_shares() -> None:
    from typed_summary import body_dict

    from embedswap.steps.index import index_table
    from embedswap.analysis.upgrade import upgrade_summary

    decided = upgrade_summary(body_dict())  # a whole summary: the table reads it typed
    decided["decisions"]["index"] = {"c": {"choice": "keep", "sample": "keep_index"}}
    assert index_table(as_typed(decided)).loc["c", "hnsw_shares"] == "all"  # no plan: an older summary, every share
    decided["index"] = {"measured": True, "hnsw_plan": {"setting": "ends", "mode": "ends", "documents": 10,
                                                        "auto_max_documents": 5, "shares": [0.0, 1.0],
                                                        "exact_only": [0.5]}}
    assert index_table(as_typed(decided)).loc["c", "hnsw_shares"] == "0 1"
