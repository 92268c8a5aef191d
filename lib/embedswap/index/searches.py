"""Step 03's searches for the compatibility grid, on the real vector store, written as one raw capture.

Per candidate, one index per re-embedded share (0: the legacy documents, 1: the candidate's, in between a seeded,
nested draw of documents holding candidate vectors). Both query sources (legacy, candidate) are searched exactly at
every share (on the store while the grid is small, in numpy beyond: :func:`exact_on_store`) and through an HNSW
index of the index's distance at the shares ``index.hnsw_shares`` gives (:func:`hnsw_plan`: every share, or only 0
and 1 on a large corpus, where one HNSW build per share would make the part grow faster than the corpus). The four
corners of the grid are shares 0 and 1 with either query source. Beside it, the legacy index, the cross search and
the full re-embed are searched exactly with every distance, since a change of vector length moves inner-product
and L2 rankings but not cosine ones.

Only top-k document positions are captured (``captures/index/searches.json``, with the HNSW plan); the summary
scores them. A store that goes away mid-run is recorded as the reason for the candidates not searched; the ones done
are kept.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.config.index import IndexConfig
from embedswap.index.exact import grid_exact
from embedswap.reasons import not_measured
from embedswap.index.names import CAPTURE  # noqa: F401  (re-exported: defined apart, for the summary)
from embedswap.index.options import option_searches
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


def _store_searches(store: Store, name: str, queries: dict[str, np.ndarray], config: IndexConfig, *,
                    hnsw: bool, seconds: dict[str, float]) -> dict[str, dict[str, list[list[int]]]]:
    out: dict[str, dict[str, list[list[int]]]] = {}
    for source, vectors in queries.items():
        started = time.perf_counter()
        out[source] = {"exact": store_search(store.conn, store.schema, name, vectors, config.k,
                                             config.distance, exact=True).tolist()}  # type: ignore[arg-type]
        seconds["exact_shares_s"] += time.perf_counter() - started
        if hnsw:
            started = time.perf_counter()
            out[source]["hnsw"] = store_search(store.conn, store.schema, name, vectors, config.k,
                                               config.distance,  # type: ignore[arg-type]
                                               ef_search=config.ef_search).tolist()
            seconds["hnsw_search_s"] += time.perf_counter() - started
    return out


def _hnsw_searches(store: Store, name: str, queries: dict[str, np.ndarray], config: IndexConfig,
                   seconds: dict[str, float]) -> dict[str, list[list[int]]]:
    started = time.perf_counter()
    out = {source: store_search(store.conn, store.schema, name, vectors, config.k,
                                config.distance,  # type: ignore[arg-type]
                                ef_search=config.ef_search).tolist()
           for source, vectors in queries.items()}
    seconds["hnsw_search_s"] += time.perf_counter() - started
    return out


def exact_on_store(n_docs: int, n_queries: int) -> bool:
    """Exact search on the store (a sequential scan per query) while it stays small; beyond, numpy's exact scan
    (float64, the same ranking up to near-ties of the store's float4): at 100k documents and 500 queries the
    store's scans would take about an hour on two cores (docs/measurements.md)."""
    return n_docs * n_queries <= EXACT_ON_STORE_MAX_PAIRS


def hnsw_plan(config: IndexConfig, n_docs: int) -> dict[str, Any]:
    """Which shares get an HNSW build and search (``index.hnsw_shares`` resolved for ``n_docs`` documents), as
    the capture records it."""
    with_hnsw = config.hnsw_share_list(n_docs)
    return {"setting": config.hnsw_shares, "mode": config.hnsw_mode(n_docs), "documents": n_docs,
            "auto_max_documents": config.hnsw_auto_max_documents, "shares": with_hnsw,
            "exact_only": [s for s in config.shares if s not in with_hnsw]}


def _store_exact_by_distance(store: Store, legacy_docs: np.ndarray, candidate_docs: np.ndarray,
                             queries: dict[str, np.ndarray], config: IndexConfig, tag: str) -> dict[str, Any]:
    by_distance: dict[str, Any] = {}
    for side, docs in (("legacy", legacy_docs), ("candidate", candidate_docs)):
        name = f"{tag}_{side}_exact"
        _table(store, name, docs, config, hnsw=False)
        for distance in DISTANCES:
            by_distance.setdefault(distance, {})[side] = {
                src: store_search(store.conn, store.schema, name, vectors, config.k, distance,  # type: ignore[arg-type]
                                  exact=True).tolist()
                for src, vectors in queries.items()}
        _drop(store, name)
    return by_distance


def candidate_searches(store: Store, legacy_docs: np.ndarray, candidate_docs: np.ndarray,
                       legacy_queries: np.ndarray, candidate_queries: np.ndarray, config: IndexConfig,
                       tag: str) -> dict[str, Any]:
    """Every search of one candidate (``tag``: a short table-name part).

    HNSW runs at the shares of :func:`hnsw_plan`; every share is searched exactly. A small grid is searched
    exactly on the store (a table per share, with or without its index); a large one in numpy
    (:func:`embedswap.index.exact.grid_exact`), where a share without HNSW needs no table at all."""
    queries = {"legacy": legacy_queries, "candidate": candidate_queries}
    n_docs = len(legacy_docs)
    on_store = exact_on_store(n_docs, 2 * len(legacy_queries))
    with_hnsw = hnsw_plan(config, n_docs)["shares"]
    seconds = {"load_s": 0.0, "index_s": 0.0, "hnsw_search_s": 0.0, "exact_shares_s": 0.0, "exact_s": 0.0}
    draws = {f"{share:g}": share_draw(n_docs, share, config.seed) for share in config.shares}
    in_numpy: dict[str, Any] | None = None
    if not on_store:
        started = time.perf_counter()
        masks = {}
        for key, drawn in draws.items():
            masks[key] = np.zeros(n_docs, dtype=bool)
            masks[key][drawn] = True
        in_numpy = grid_exact(legacy_docs, candidate_docs, queries, masks, config.distance, config.k)
        seconds["exact_s"] = time.perf_counter() - started
    shares: dict[str, Any] = {}
    # one fresh index per share: updating rows in place under an HNSW index (a rolling re-embed) was measured far
    # slower than a rebuild (docs/measurements.md), so each share is loaded and built anew
    for i, share in enumerate(config.shares):
        key, hnsw = f"{share:g}", share in with_hnsw
        entry: dict[str, Any] = {"share": share, "reembedded": draws[key].tolist()}
        if on_store or hnsw:
            name = f"{tag}_s{i}"
            docs = mixed_documents(legacy_docs, candidate_docs, share, config.seed)
            for part, value in _table(store, name, docs, config, hnsw=hnsw).items():
                seconds[part] += value
            if on_store:
                entry.update(_store_searches(store, name, queries, config, hnsw=hnsw, seconds=seconds))
            else:
                found = _hnsw_searches(store, name, queries, config, seconds)
                for source in queries:
                    entry[source] = {"exact": in_numpy["shares"][key][source].tolist(),  # type: ignore[index]
                                     "hnsw": found[source]}
            _drop(store, name)
        else:
            entry.update({source: {"exact": in_numpy["shares"][key][source].tolist()}  # type: ignore[index]
                          for source in queries})
        shares[key] = entry
    if on_store:
        started = time.perf_counter()
        by_distance = _store_exact_by_distance(store, legacy_docs, candidate_docs, queries, config, tag)
        seconds["exact_s"] = time.perf_counter() - started
    else:
        by_distance = {d: {side: {src: found.tolist() for src, found in by_source.items()}
                           for side, by_source in sides.items()}
                       for d, sides in in_numpy["by_distance"].items()}  # type: ignore[index]
    # the share loop's searches, as the capture always named them
    seconds["search_s"] = seconds["hnsw_search_s"] + seconds["exact_shares_s"]
    return {"measured": True, "exact": "store" if on_store else "numpy", "shares": shares,
            "hnsw_shares": with_hnsw, "by_distance": by_distance,
            "seconds": {k: round(v, 4) for k, v in seconds.items()}}


def _blocked(legacy_docs: np.ndarray, candidate_docs: np.ndarray) -> dict[str, Any] | None:
    if legacy_docs.shape[1] != candidate_docs.shape[1]:
        return not_measured("dimensions_differ", legacy=legacy_docs.shape[1], candidate=candidate_docs.shape[1])
    if legacy_docs.shape[1] > MAX_DIM:
        return not_measured("index_dimensions_too_many", dim=legacy_docs.shape[1], max=MAX_DIM)
    return None


def _options(store: Store, vectors: dict[str, dict[str, np.ndarray]], legacy: str, name: str, config: IndexConfig,
             number: int) -> dict[str, Any]:
    """The index options' searches (embedswap.index.options), or why they were not measured."""
    old, new = vectors[legacy], vectors[name]
    if max(old["docs"].shape[1], new["docs"].shape[1]) > MAX_DIM:
        return not_measured("index_dimensions_too_many", dim=max(old["docs"].shape[1], new["docs"].shape[1]),
                            max=MAX_DIM)
    try:
        return option_searches(store, old["docs"], new["docs"], old["queries"], new["queries"], config, f"o{number}")
    except StoreLost:
        raise
    except StoreError as exc:  # the options are beside the grid: a failure here is theirs alone
        return not_measured("index_options_failed", error=one_line(exc))


def run_searches(vectors: dict[str, dict[str, np.ndarray]], legacy: str, candidates: list[str],
                 config: IndexConfig, folder: Path) -> dict[str, Any]:
    """The capture: ``vectors[name]`` holds ``docs`` and ``queries`` (legacy: the old client's queries; a
    candidate: the queries its client sends after the swap). ``folder``: the embedded server's data folder."""
    result: dict[str, Any] = {
        "measured": True, "distance": config.distance, "k": config.k, "ef_search": config.ef_search,
        "hnsw": {"m": config.hnsw_m, "ef_construction": config.ef_construction},
        "shares": config.shares, "seed": config.seed, "by_candidate": {}}
    documents = {len(vectors[name]["docs"]) for name in (legacy, *candidates)}
    # every candidate's documents are the legacy ones re-embedded, so one corpus size decides the plan
    result["hnsw_plan"] = hnsw_plan(config, max(documents))
    by_candidate: dict[str, Any] = result["by_candidate"]
    try:
        with open_store(folder, config.dsn_env, config.schema_name) as store:
            result["store"] = {"kind": store.kind, "server_version": store.server_version,
                               "pgvector_version": store.pgvector_version, "dsn_env": config.dsn_env}
            for number, name in enumerate(candidates):
                if config.options.enabled:  # across dimensions too: an affine map, re-score and dual-read need none
                    result.setdefault("options", {})[name] = _options(store, vectors, legacy, name, config, number)
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
