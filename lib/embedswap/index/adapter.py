"""An orthogonal Procrustes map from the candidate's vector space to the legacy one (Drift-Adapter, EMNLP 2025:
fitted on old/new pairs it recovers most of a full re-embed's recall), fitted on a seeded training split of the
captured document pairs and tested on the held-out documents with every query.

The fit is :func:`scipy.linalg.orthogonal_procrustes` on L2-normalised rows, with ``sqrt(PRIOR)`` times the
identity appended to both sides: with fewer pairs than dimensions (a workload of 40 documents, 384 dimensions) the
plain problem leaves the rotation free outside the documents' span, and an SVD would fill that part arbitrarily;
the prior fixes it to the identity there, so identical vectors give exactly the identity map (residual 0) and
nothing else changes measurably (PRIOR is 1e-3 of one document's weight).
"""

from __future__ import annotations

from typing import Any

import numpy as np

PRIOR = 1e-3
RANK_CHUNK = 64
IDENTITY_TOL = 1e-6  # ||R - I||_F / sqrt(dim) below this: the identity map (float32 captures give ~1e-8)


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def fit(candidate: np.ndarray, legacy: np.ndarray) -> np.ndarray:
    """The orthogonal ``R`` minimising ``||unit(candidate) R - unit(legacy)||`` (with the identity prior)."""
    from scipy.linalg import orthogonal_procrustes  # here: ~0.15 s of import that only a fit needs (issue 61)

    a, b = _unit(candidate), _unit(legacy)
    eye = np.sqrt(PRIOR) * np.eye(a.shape[1])
    rotation, _ = orthogonal_procrustes(np.vstack([a, eye]), np.vstack([b, eye]))
    return rotation


def residual(candidate: np.ndarray, legacy: np.ndarray, rotation: np.ndarray | None) -> float:
    """``||unit(candidate) R - unit(legacy)||_F / ||unit(legacy)||_F`` (``R`` None: the identity)."""
    a, b = _unit(candidate), _unit(legacy)
    mapped = a if rotation is None else a @ rotation
    denominator = float(np.linalg.norm(b))
    return float(np.linalg.norm(mapped - b)) / denominator if denominator else 0.0


def split(n_docs: int, train_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) document positions: a seeded permutation cut at ``round(train_share * n)`` (each side >= 1)."""
    order = np.random.default_rng(seed).permutation(n_docs)
    cut = min(max(1, round(train_share * n_docs)), n_docs - 1)
    return np.sort(order[:cut]), np.sort(order[cut:])


def scores(docs: np.ndarray, queries: np.ndarray, distance: str) -> np.ndarray:
    """(queries, docs), higher is better, for the index's distance."""
    docs, queries = np.asarray(docs, dtype=np.float64), np.asarray(queries, dtype=np.float64)
    if distance == "cosine":
        return _unit(queries) @ _unit(docs).T
    if distance == "inner_product":
        return queries @ docs.T
    return -(np.sum(queries**2, 1)[:, None] - 2 * queries @ docs.T + np.sum(docs**2, 1)[None, :])


def rank(docs: np.ndarray, queries: np.ndarray, distance: str, k: int) -> np.ndarray:
    """Top-``k`` document positions per query, best first, in chunks of :data:`RANK_CHUNK` queries so that a
    corpus-scale index never needs the whole (queries, documents) score matrix."""
    docs = _unit(docs) if distance == "cosine" else np.asarray(docs, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    k = min(k, len(docs))
    out = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), RANK_CHUNK):
        chunk = scores(docs, queries[start : start + RANK_CHUNK], "inner_product" if distance == "cosine"
                       else distance)
        if distance == "cosine":
            chunk /= np.maximum(np.linalg.norm(queries[start : start + RANK_CHUNK], axis=1, keepdims=True), 1e-30)
        out[start : start + len(chunk)] = top_k(chunk, k)
    return out


def top_k(chunk: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best columns of each row of a (queries, documents) score block, best first, ties by position."""
    k = min(k, chunk.shape[1])
    top = np.argpartition(-chunk, k - 1, axis=1)[:, :k] if k < chunk.shape[1] else \
        np.tile(np.arange(chunk.shape[1]), (len(chunk), 1))
    best = np.take_along_axis(chunk, top, axis=1)
    order = np.lexsort((top, -best), axis=1)  # by score, ties by document position
    return np.take_along_axis(top, order, axis=1)


def adapter_searches(legacy_docs: np.ndarray, candidate_docs: np.ndarray, candidate_queries: np.ndarray,
                     legacy_queries: np.ndarray, distance: str, k: int, train_share: float,
                     seed: int) -> dict[str, Any]:
    """The map fitted on the training documents and the held-out searches (positions into the full document list):
    ``legacy`` (old queries, old index), ``cross`` (new queries, old index), ``adapter`` (new queries mapped, old
    index), ``full`` (new queries, the held-out documents re-embedded)."""
    train, test = split(len(legacy_docs), train_share, seed)
    rotation = fit(candidate_docs[train], legacy_docs[train])
    dim = rotation.shape[0]
    from_identity = float(np.linalg.norm(rotation - np.eye(dim)) / np.sqrt(dim))
    identity = from_identity < IDENTITY_TOL
    mapped = candidate_queries if identity else np.asarray(candidate_queries, dtype=np.float64) @ rotation
    held_legacy, held_candidate = legacy_docs[test], candidate_docs[test]
    depth = min(k, len(test))

    def search(docs: np.ndarray, queries: np.ndarray) -> list[list[int]]:
        return test[rank(docs, queries, distance, depth)].tolist()

    return {
        "identity": identity,
        "from_identity": from_identity,
        "train": train.tolist(),
        "test": test.tolist(),
        "residual_train": residual(candidate_docs[train], legacy_docs[train], None if identity else rotation),
        "residual_test": residual(held_candidate, held_legacy, None if identity else rotation),
        "residual_unmapped": residual(held_candidate, held_legacy, None),
        "searches": {
            "legacy": search(held_legacy, legacy_queries),
            "cross": search(held_legacy, candidate_queries),
            "adapter": search(held_legacy, mapped),
            "full": search(held_candidate, candidate_queries),
        },
    }
