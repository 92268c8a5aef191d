"""Step 03's searches for the compatibility grid, on the real vector store, written as one raw capture.

Per candidate, one table per re-embedded share (0: the legacy documents, 1: the candidate's, in between a seeded,
nested draw of documents holding candidate vectors), each with an HNSW index of the index's distance; both query
sources
(legacy, candidate) are searched through the index and exactly (on the store while the index is small, with numpy
beyond: :func:`exact_on_store`). The four corners of the grid are shares 0 and 1
with either query source. Beside it, the legacy index, the cross search and the full re-embed are searched exactly
with every distance, since a change of vector length moves inner-product and L2 rankings but not cosine ones.

Only top-k document positions are captured (``captures/index/searches.json``); the summary scores them. A store that
goes away mid-run is recorded as the reason for the candidates not searched; the ones done are kept.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.config.index import IndexConfig
from embedswap.index.adapter import rank
from embedswap.reasons import not_measured
from embedswap.vectorstore.connect import one_line
from embedswap.vectorstore.server import StoreError
from embedswap.vectorstore.session import Store, open_store
from embedswap.vectorstore.tables import (
    MAX_DIM,
    StoreLost,
    bulk_load,
    create_hnsw_index,
    create_table,
    drop_table,
)
from embedswap.vectorstore.tables import search as store_search

CAPTURE = "index/searches.json"
DISTANCES = ("cosine", "inner_product", "l2")
QUERY_FILES = {"shim": "query_vectors_client_prefixed.npy", "naive": "query_vectors_server_instruction.npy"}
LEGACY_QUERY_FILE = "query_vectors_server_instruction.npy"  # what the old client sent (as ranking's legacy)
EXACT_ON_STORE_MAX_PAIRS = 1_000_000  # documents x queries searched exactly on the store (see exact_on_store)


def share_draw(n_docs: int, share: float, seed: int) -> np.ndarray:
    """The documents re-embedded at ``share``: a seeded permutation's first ``round(share * n)``, so a larger
    share holds every document of a smaller one (a rolling re-embed only adds)."""
    order = np.random.default_rng(seed).permutation(n_docs)
    return np.sort(order[: round(share * n_docs)])


def mixed_documents(legacy: np.ndarray, candidate: np.ndarray, share: float, seed: int) -> np.ndarray:
    docs = np.array(legacy, dtype=np.float32, copy=True)
    drawn = share_draw(len(legacy), share, seed)
    docs[drawn] = candidate[drawn]
    return docs


def _table(store: Store, name: str, docs: np.ndarray, config: IndexConfig, *, hnsw: bool) -> dict[str, float]:
    timing: dict[str, float] = {}
    started = time.perf_counter()
    create_table(store.conn, store.schema, name, docs.shape[1])
    store.tables.append(name)
    bulk_load(store.conn, store.schema, name, docs)
    timing["load_s"] = time.perf_counter() - started
    if hnsw:
        started = time.perf_counter()
        create_hnsw_index(store.conn, store.schema, name, config.distance, m=config.hnsw_m,
                          ef_construction=config.ef_construction)
        timing["index_s"] = time.perf_counter() - started
    return timing


def _drop(store: Store, name: str) -> None:
    drop_table(store.conn, store.schema, name)
    store.tables.remove(name)


def _exact(store: Store | None, name: str | None, docs: np.ndarray, vectors: np.ndarray, config: IndexConfig,
           distance: str) -> list[list[int]]:
    if store is not None and name is not None:
        return store_search(store.conn, store.schema, name, vectors, config.k, distance,  # type: ignore[arg-type]
                            exact=True).tolist()
    return rank(docs, vectors, distance, config.k).tolist()


def _searches(store: Store, name: str, docs: np.ndarray, queries: dict[str, np.ndarray], config: IndexConfig,
              *, exact_on_store: bool) -> dict[str, dict[str, list[list[int]]]]:
    out: dict[str, dict[str, list[list[int]]]] = {}
    for source, vectors in queries.items():
        out[source] = {
            "exact": _exact(store if exact_on_store else None, name, docs, vectors, config, config.distance),
            "hnsw": store_search(store.conn, store.schema, name, vectors, config.k, config.distance,
                                 ef_search=config.ef_search).tolist()}
    return out


def exact_on_store(n_docs: int, n_queries: int) -> bool:
    """Exact search on the store (a sequential scan per query) while it stays small; beyond, numpy's exact scan
    (float64, the same ranking up to near-ties of the store's float4): at 100k documents and 500 queries the
    store's scans would take about an hour on two cores (docs/measurements.md)."""
    return n_docs * n_queries <= EXACT_ON_STORE_MAX_PAIRS


def candidate_searches(store: Store, legacy_docs: np.ndarray, candidate_docs: np.ndarray,
                       legacy_queries: np.ndarray, candidate_queries: np.ndarray, config: IndexConfig,
                       tag: str) -> dict[str, Any]:
    """Every search of one candidate (``tag``: a short table-name part)."""
    queries = {"legacy": legacy_queries, "candidate": candidate_queries}
    on_store = exact_on_store(len(legacy_docs), 2 * len(legacy_queries))
    shares: dict[str, Any] = {}
    seconds = {"load_s": 0.0, "index_s": 0.0, "search_s": 0.0, "exact_s": 0.0}
    # one fresh index per share: updating rows in place under an HNSW index (a rolling re-embed) was measured far
    # slower than a rebuild (docs/measurements.md), so each share is loaded and built anew
    for i, share in enumerate(config.shares):
        name = f"{tag}_s{i}"
        docs = mixed_documents(legacy_docs, candidate_docs, share, config.seed)
        for key, value in _table(store, name, docs, config, hnsw=True).items():
            seconds[key] += value
        started = time.perf_counter()
        shares[f"{share:g}"] = {"share": share, "reembedded": share_draw(len(docs), share, config.seed).tolist(),
                                **_searches(store, name, docs, queries, config, exact_on_store=on_store)}
        seconds["search_s"] += time.perf_counter() - started
        _drop(store, name)
    started = time.perf_counter()
    by_distance: dict[str, Any] = {}
    for side, docs in (("legacy", legacy_docs), ("candidate", candidate_docs)):
        name = f"{tag}_{side}_exact"
        if on_store:
            _table(store, name, docs, config, hnsw=False)
        for distance in DISTANCES:
            by_distance.setdefault(distance, {})[side] = {
                src: _exact(store if on_store else None, name, docs, vectors, config, distance)
                for src, vectors in queries.items()}
        if on_store:
            _drop(store, name)
    seconds["exact_s"] = time.perf_counter() - started
    return {"measured": True, "exact": "store" if on_store else "numpy", "shares": shares,
            "by_distance": by_distance, "seconds": {k: round(v, 4) for k, v in seconds.items()}}


def _blocked(legacy_docs: np.ndarray, candidate_docs: np.ndarray) -> dict[str, Any] | None:
    if legacy_docs.shape[1] != candidate_docs.shape[1]:
        return not_measured("dimensions_differ", legacy=legacy_docs.shape[1], candidate=candidate_docs.shape[1])
    if legacy_docs.shape[1] > MAX_DIM:
        return not_measured("index_dimensions_too_many", dim=legacy_docs.shape[1], max=MAX_DIM)
    return None


def run_searches(vectors: dict[str, dict[str, np.ndarray]], legacy: str, candidates: list[str],
                 config: IndexConfig, folder: Path) -> dict[str, Any]:
    """The capture: ``vectors[name]`` holds ``docs`` and ``queries`` (legacy: the old client's queries; a
    candidate: the queries its client sends after the swap). ``folder``: the embedded server's data folder."""
    result: dict[str, Any] = {
        "measured": True, "distance": config.distance, "k": config.k, "ef_search": config.ef_search,
        "hnsw": {"m": config.hnsw_m, "ef_construction": config.ef_construction},
        "shares": config.shares, "seed": config.seed, "by_candidate": {}}
    by_candidate: dict[str, Any] = result["by_candidate"]
    try:
        with open_store(folder, config.dsn_env, config.schema_name) as store:
            result["store"] = {"kind": store.kind, "server_version": store.server_version,
                               "pgvector_version": store.pgvector_version, "dsn_env": config.dsn_env}
            for number, name in enumerate(candidates):
                blocked = _blocked(vectors[legacy]["docs"], vectors[name]["docs"])
                if blocked is not None:
                    by_candidate[name] = blocked
                    continue
                by_candidate[name] = candidate_searches(
                    store, vectors[legacy]["docs"], vectors[name]["docs"], vectors[legacy]["queries"],
                    vectors[name]["queries"], config, f"c{number}")
    except StoreLost as exc:
        lost = not_measured("vector_store_lost", error=one_line(exc))
        for name in candidates:
            by_candidate.setdefault(name, lost)
    except StoreError as exc:
        if not by_candidate:
            return not_measured("vector_store_failed", error=str(exc))
        for name in candidates:
            by_candidate.setdefault(name, not_measured("vector_store_failed", error=str(exc)))
    return result
