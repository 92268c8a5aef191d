"""The index part without a store: the config, the seeded draw, the Procrustes adapter, the re-embed cost and the
decision rules on typed per-query values."""

from __future__ import annotations

import numpy as np
import pytest
from embedswap.analysis.index_decision import candidate_decision, index_decisions
from embedswap.config.base import ConfigError
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.experiment import parse_experiment
from embedswap.config.index import IndexConfig
from embedswap.index.adapter import adapter_searches, fit, residual
from embedswap.index.cost import reembed_cost
from embedswap.index.searches import mixed_documents, share_draw
from embedswap.summary.types_index import IndexCandidate

BASE = {"name": "x", "date": "2026-12-01", "workload": "sample", "targets": {"legacy": {"kind": "legacy", "port": 18001},
        "vllm": {"kind": "vllm", "port": 18002}}, "candidates": ["vllm"]}


def test_config_defaults_and_wrong_keys() -> None:
    experiment = parse_experiment(dict(BASE))
    assert experiment.index.distance == "cosine" and experiment.index.shares == [0, 0.25, 0.5, 0.75, 1]
    with pytest.raises(ConfigError, match=r"unknown key 'index.distanse' \(did you mean 'distance'\?\)"):
        parse_experiment({**BASE, "index": {"distanse": "l2"}})
    with pytest.raises(ConfigError, match="index.distance"):
        parse_experiment({**BASE, "index": {"distance": "dot"}})
    with pytest.raises(ConfigError, match="shares must include 0"):
        parse_experiment({**BASE, "index": {"shares": [0.5, 1]}})
    with pytest.raises(ConfigError, match="index.dsn_env"):
        parse_experiment({**BASE, "index": {"dsn_env": "postgresql://user:pw@host/db"}})  # a DSN, not a name


def test_share_draw_is_seeded_and_nested() -> None:
    small, large = share_draw(100, 0.25, seed=4), share_draw(100, 0.5, seed=4)
    assert len(small) == 25 and len(large) == 50 and set(small) <= set(large)
    assert np.array_equal(small, share_draw(100, 0.25, seed=4))
    assert not np.array_equal(small, share_draw(100, 0.25, seed=5))
    legacy, candidate = np.zeros((100, 3), np.float32), np.ones((100, 3), np.float32)
    mixed = mixed_documents(legacy, candidate, 0.25, seed=4)
    assert mixed[small].min() == 1 and np.delete(mixed, small, axis=0).max() == 0


def test_procrustes_identity_and_rotation() -> None:
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(20, 64))  # fewer pairs than dimensions: the prior fixes the rest to the identity
    assert np.allclose(fit(docs, docs), np.eye(64), atol=1e-9)
    rotation, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    more = rng.normal(size=(50, 8))
    fitted = fit(more @ rotation, more)
    assert residual(more @ rotation, more, fitted) < 1e-3 < residual(more @ rotation, more, None)
    queries = rng.normal(size=(5, 8))
    same = adapter_searches(more, more, queries, queries, "cosine", 10, 0.5, seed=1)
    assert same["identity"] is True and same["residual_test"] == 0.0
    assert same["searches"]["adapter"] == same["searches"]["cross"] == same["searches"]["legacy"]


def test_reembed_cost() -> None:
    cost = reembed_cost(1_000_000, 100.0, 80.0, 125.0, 24.0)
    assert cost is not None
    assert cost["hours_per_replica"] == pytest.approx(1_000_000 / 100 / 3600)
    assert cost["hours_high"] == pytest.approx(1_000_000 / 80 / 3600)
    assert cost["hours_low"] == pytest.approx(1_000_000 / 125 / 3600)
    assert cost["replicas"] == 1
    tight = reembed_cost(10_000_000, 100.0, 80.0, 125.0, 8.0)
    assert tight is not None and tight["replicas"] == 4 and tight["replicas_high"] == 5
    tokens = reembed_cost(1_000_000, 100.0, None, None, 24.0, workload_mean_tokens=50, corpus_mean_tokens=200)
    assert tokens is not None and tokens["hours_per_replica"] == pytest.approx(4 * 1_000_000 / 100 / 3600)
    assert reembed_cost(1000, None, None, None, 24.0) is None


def _entry(cross: list[float], full: list[float], *, identity: bool, adapter: list[float]) -> IndexCandidate:
    n = len(cross)
    legacy = [0.5] * n
    cells = []
    for method in ("exact", "hnsw"):
        for queries, share, values in (("legacy", 0.0, legacy), ("candidate", 0.0, cross), ("candidate", 1.0, full)):
            cells.append({"queries": queries, "share": share, "method": method, "ndcg_at_10": values,
                          "recall_at_5": values, "top5_overlap": [1.0] * n,
                          "hnsw_recall": [1.0] * n if method == "hnsw" else []})
    return IndexCandidate.model_validate({
        "measured": True, "dims": 8, "cells": cells,
        "distances": [{"distance": d, "cross_overlap": [1.0] * n, "full_overlap": [1.0] * n}
                      for d in ("cosine", "inner_product", "l2")],
        "adapter": {"identity": identity, "from_identity": 0.0 if identity else 0.5, "train_docs": 10,
                    "test_docs": 10, "residual_train": 0.0, "residual_test": 0.0 if identity else 0.1,
                    "residual_unmapped": 0.0 if identity else 0.9, "basis": "ndcg_at_10",
                    "per_query": {"legacy": legacy, "cross": cross, "adapter": adapter, "full": full}}})


def test_decision_rules() -> None:
    config, index = DecisionsConfig(), IndexConfig()
    same = [0.5 + 0.001 * (i % 3) for i in range(30)]
    keep = candidate_decision(_entry(same, same, identity=True, adapter=same), config, index, "cosine", [])
    assert keep.choice == "keep" and keep.backward_compatible is True
    lost = [0.2 + 0.01 * (i % 5) for i in range(30)]
    mapped = candidate_decision(_entry(lost, same, identity=False, adapter=same), config, index, "cosine", [])
    assert (mapped.choice, mapped.map_kind) == ("map", "orthogonal") and mapped.cross.direction == "worse"
    cost = {"corpus_size": 10, "point": "concurrent", "docs_per_s": 1.0, "hours_per_replica": 1.0,
            "window_hours": 24.0, "replicas": 1}
    redo = candidate_decision(_entry(lost, same, identity=False, adapter=lost), config, index, "cosine", [cost])
    assert redo.choice == "re_embed" and redo.cost.hours_per_replica == 1.0
    # an identity map never counts as an adapter, even where it "recovers" (nothing to map)
    ident = candidate_decision(_entry(lost, same, identity=True, adapter=same), config, index, "cosine", [])
    assert ident.choice == "re_embed"


def test_blocked_and_not_measured(complete_upgraded: dict) -> None:
    from embedswap.analysis import decisions_config
    from embedswap.summary.model import validate_body

    body = dict(complete_upgraded)
    body["index"] = {"measured": True, "distance": "cosine", "by_candidate": {
        "vllm": {"measured": False, "why": "dimensions differ (384 vs 256)",
                 "reason": {"code": "dimensions_differ", "params": {"legacy": 384, "candidate": 256}}},
        "dynamo": {"measured": False, "why": "the vector store went away mid-run: x",
                   "reason": {"code": "vector_store_lost", "params": {"error": "x"}}}}}
    typed = validate_body(body)
    decided = index_decisions(typed, decisions_config(typed))
    assert decided["vllm"].choice == "blocked" and decided["dynamo"].choice == "not_measured"
    assert decided["dynamo"].reason == "vector_store_lost"


def test_a_mixed_index_that_ranks_worse_is_not_kept() -> None:
    same = [0.5 + 0.001 * (i % 3) for i in range(30)]
    entry = _entry(same, same, identity=True, adapter=same)
    worse = [0.1 + 0.01 * (i % 4) for i in range(30)]
    cells = [c.model_dump() for c in entry.cells]
    cells.append({"queries": "candidate", "share": 0.5, "method": "exact", "ndcg_at_10": worse, "recall_at_5": worse,
                  "top5_overlap": [0.4] * 30, "hnsw_recall": []})
    mixed = IndexCandidate.model_validate({**entry.model_dump(), "cells": cells})
    decision = candidate_decision(mixed, DecisionsConfig(), IndexConfig(), "cosine", [])
    assert decision.choice == "re_embed" and decision.reason == "mixed_index_worse"
    assert decision.mixed_worse == [0.5]
