"""The index options of a model change (issue 57), each searched on the real store (pgvector HNSW, the index's
distance) with k-fold cross-validation over the documents: the maps are fitted on the other folds' document pairs
and every query searches the held-out fold, so no map is scored on a document it was fitted on.

Per fold, two tables of the held-out documents: the old index (legacy vectors) and the re-embedded one (candidate
vectors). The searches, each as document positions, best first:

- ``re_embed``: the candidate's queries on the re-embedded index — the reference every option is scored against;
- ``keep``: the candidate's queries on the old index, unmapped (same dimension only);
- ``orthogonal`` / ``affine`` / ``mlp``: the candidate's queries mapped into the old space
  (:mod:`embedswap.index.maps`); the mlp map only where every fold trains on ``mlp_min_pairs`` pairs or more;
- ``rescore``: the legacy queries' top ``rescore_depth`` on the old index, re-ranked by the candidate's vectors of
  those documents (embedflow's G(K): the old index finds, the new model orders);
- ``dual_read``: halfway through a re-embed (``dual_read_share`` of the fold re-embedded): the candidate's queries on
  the re-embedded part and the legacy queries on the rest, merged by reciprocal rank (Cormack et al., SIGIR 2009:
  the two models' scores are not on one scale, their ranks are).

Each option's searches are timed per query (``query_ms``: its search path, map or re-rank included); the overhead is
that against the re-embedded index's own search, measured in the same fold.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from embedswap.config.index import IndexConfig
from embedswap.index.adapter import _unit
from embedswap.index.names import OPTIONS  # noqa: F401  (re-exported: defined apart, for the summary)

if TYPE_CHECKING:
    from embedswap.index.maps import FittedMap
from embedswap.vectorstore.session import Store
from embedswap.vectorstore.tables import bulk_load, create_hnsw_index, create_table, drop_table
from embedswap.vectorstore.tables import search as store_search

RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009: 60 was best across their runs)


def _load(store: Store, name: str, docs: np.ndarray, ids: np.ndarray, config: IndexConfig) -> None:
    create_table(store.conn, store.schema, name, docs.shape[1])
    store.tables.append(name)
    bulk_load(store.conn, store.schema, name, docs, ids=ids)
    create_hnsw_index(store.conn, store.schema, name, config.distance, m=config.hnsw_m,
                      ef_construction=config.ef_construction)


def _drop(store: Store, name: str) -> None:
    drop_table(store.conn, store.schema, name)
    store.tables.remove(name)


def _timed(fn: Any, n: int) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    found = fn()
    return found, 1000.0 * (time.perf_counter() - started) / max(n, 1)


def _fused(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion of two top-k id lists per query (-1: no row)."""
    out = np.full((len(a), k), -1, dtype=np.int64)
    for q in range(len(a)):
        scores: dict[int, float] = {}
        for ranking in (a[q], b[q]):
            for rank, doc in enumerate(int(d) for d in ranking if d >= 0):
                scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
        best = sorted(scores, key=lambda d: (-scores[d], d))[:k]
        out[q, : len(best)] = best
    return out


def _rescored(old_top: np.ndarray, candidate_docs: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """The old index's top list re-ranked by the candidate's cosine (ties by position)."""
    out = np.full((len(old_top), k), -1, dtype=np.int64)
    unit_q, unit_d = _unit(queries), _unit(candidate_docs)
    for q, ids in enumerate(old_top):
        ids = ids[ids >= 0]
        order = np.lexsort((ids, -(unit_d[ids] @ unit_q[q])))[:k]
        out[q, : len(order)] = ids[order]
    return out


def _fold(store: Store, tag: str, fold: int, test: np.ndarray, docs: dict[str, np.ndarray],
          queries: dict[str, np.ndarray], maps: dict[str, FittedMap], config: IndexConfig
          ) -> dict[str, Any]:
    k, depth, distance = config.k, config.options.rescore_depth, config.distance
    same_dim = docs["legacy"].shape[1] == docs["candidate"].shape[1]
    names = {"old": f"{tag}_o{fold}", "new": f"{tag}_n{fold}"}
    _load(store, names["old"], docs["legacy"][test], test, config)
    _load(store, names["new"], docs["candidate"][test], test, config)
    n = len(queries["candidate"])

    def search(table: str, vectors: np.ndarray, depth_: int = k) -> np.ndarray:
        return store_search(store.conn, store.schema, table, vectors, depth_, distance,  # type: ignore[arg-type]
                            ef_search=max(config.ef_search, depth_))

    # one untimed search per table first: the first query on a fresh table reads its pages and plans the statement
    # (measured ~10x a warm query on 20 documents), which would be charged to whichever option ran first
    search(names["old"], queries["legacy"][:1])
    search(names["new"], queries["candidate"][:1])
    found: dict[str, np.ndarray] = {}
    ms: dict[str, float] = {}
    found["re_embed"], ms["re_embed"] = _timed(lambda: search(names["new"], queries["candidate"]), n)
    if same_dim:
        found["keep"], ms["keep"] = _timed(lambda: search(names["old"], queries["candidate"]), n)
    for kind, fitted in maps.items():
        found[kind], ms[kind] = _timed(lambda f=fitted: search(names["old"], f.apply(queries["candidate"])), n)
    found["rescore"], ms["rescore"] = _timed(lambda: _rescored(search(names["old"], queries["legacy"], depth),
                                                               docs["candidate"], queries["candidate"], k), n)
    # halfway through the re-embed: a seeded part of the fold in the new index, the rest still in the old one
    part = np.random.default_rng(config.seed + fold).random(len(test)) < config.options.dual_read_share
    done, rest = f"{tag}_d{fold}", f"{tag}_r{fold}"
    _load(store, done, docs["candidate"][test[part]], test[part], config)
    _load(store, rest, docs["legacy"][test[~part]], test[~part], config)
    search(done, queries["candidate"][:1])
    search(rest, queries["legacy"][:1])
    found["dual_read"], ms["dual_read"] = _timed(
        lambda: _fused(search(done, queries["candidate"]), search(rest, queries["legacy"]), k), n)
    for table in (*names.values(), done, rest):
        _drop(store, table)
    return {"test": test.tolist(), "found": {o: f.tolist() for o, f in found.items()}, "query_ms": ms}


def option_searches(store: Store, legacy_docs: np.ndarray, candidate_docs: np.ndarray, legacy_queries: np.ndarray,
                    candidate_queries: np.ndarray, config: IndexConfig, tag: str) -> dict[str, Any]:
    """Every option's searches per fold, the maps' fit seconds, and what each option stores (see the module doc)."""
    docs = {"legacy": np.asarray(legacy_docs), "candidate": np.asarray(candidate_docs)}
    queries = {"legacy": np.asarray(legacy_queries), "candidate": np.asarray(candidate_queries)}
    folds = min(config.options.folds, len(docs["legacy"]))
    # imported here, not above: scikit-learn takes ~2.9 s to import, and every notebook's kernel imported this
    # module (for OPTIONS, through the summary builder, before embedswap.index.names) where only step 03's searches fit the maps
    from sklearn.model_selection import KFold

    from embedswap.index.maps import fit_map

    splitter = KFold(n_splits=folds, shuffle=True, random_state=config.seed)
    same_dim = docs["legacy"].shape[1] == docs["candidate"].shape[1]
    kinds = ["orthogonal", "affine"] if same_dim else ["affine"]  # a rotation needs one dimension
    splits = list(splitter.split(docs["legacy"]))
    # the fewest training pairs of a fold: the mlp map is fitted only where every fold has enough of them
    pairs = min(len(train) for train, _ in splits)
    if pairs >= config.options.mlp_min_pairs:
        kinds.append("mlp")
    runs, fit_s, stored, alphas = [], {kind: [] for kind in kinds}, {}, []
    for fold, (train, test) in enumerate(splits):
        maps = {kind: fit_map(kind, docs["candidate"][train], docs["legacy"][train],  # type: ignore[arg-type]
                              hidden=config.options.mlp_hidden, seed=config.seed + fold) for kind in kinds}
        for kind, fitted in maps.items():
            fit_s[kind].append(fitted.fit_s)
            stored[kind] = fitted.stored_bytes
            if kind == "affine" and fitted.alpha is not None:  # the mlp map's affine part picks the same one
                alphas.append(fitted.alpha)
        runs.append(_fold(store, tag, fold, np.sort(test), docs, queries, maps, config))
    n, d_new = docs["candidate"].shape
    return {"measured": True, "folds": runs, "k": config.k, "rescore_depth": config.options.rescore_depth,
            "dual_read_share": config.options.dual_read_share, "documents": int(n),
            "fit_s": {kind: float(np.mean(v)) for kind, v in fit_s.items()},
            "ridge_alphas": alphas, "training_pairs": int(pairs), "mlp_min_pairs": config.options.mlp_min_pairs,
            # float32 bytes an option adds to the deployment: the map; the candidate's document vectors (re-score
            # reads them for the re-ranked documents, re-embed and dual-read index them)
            "storage_bytes": {"keep": 0, **stored, "rescore": 4 * n * d_new, "dual_read": 4 * n * d_new,
                              "re_embed": 4 * n * d_new}}
