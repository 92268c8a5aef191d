"""Every exact search of one candidate's grid in numpy, for an index too large to scan on the store per query.

The grid's exact searches are the same few products over and over: each share's mixed index holds, per document,
either its legacy or its candidate vector, and each distance is a function of the dot product and the two norms.
So per chunk of queries this computes ``queries @ docs.T`` once for the legacy documents and once for the
candidate's, and derives from them every distance's ranking on both sides and the ranking at every mixed share
(a document's score taken from the side it holds at that share). That is two matrix products per query source
instead of one per share and distance; the work stays documents x queries (linear in the corpus), in float64 as
:func:`embedswap.index.adapter.rank`, in chunks of :data:`~embedswap.index.adapter.RANK_CHUNK` queries so the
(queries, documents) scores never exist whole.

Rankings equal :func:`~embedswap.index.adapter.rank`'s up to near-ties of the float rounding (cosine divides the
dot product by the document's norm here, where ``rank`` normalises the document first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.index.adapter import RANK_CHUNK, top_k

DISTANCES = ("cosine", "inner_product", "l2")


def _scores(dots: np.ndarray, norms: np.ndarray, squares: np.ndarray, distance: str) -> np.ndarray:
    """Per-query scores, higher is better; a term that is the same for every document of a query (the query's
    norm) is left out, since it does not change that query's ranking."""
    if distance == "inner_product":
        return dots
    if distance == "cosine":
        return dots / np.where(norms == 0, 1.0, norms)[None, :]
    return 2 * dots - squares[None, :]  # -(|q|^2 - 2 q.d + |d|^2) without |q|^2


def grid_exact(legacy_docs: np.ndarray, candidate_docs: np.ndarray, queries: dict[str, np.ndarray],
               masks: dict[str, np.ndarray], distance: str, k: int) -> dict[str, Any]:
    """``{"shares": {key: {source: top-k}}, "by_distance": {distance: {side: {source: top-k}}}}``.

    ``masks[key]``: which documents hold the candidate's vector at that share (all False: share 0, all True:
    share 1); ``queries``: source -> (queries, dim); ``distance``: the index's, used for the shares."""
    sides = {"legacy": np.asarray(legacy_docs, dtype=np.float64),
             "candidate": np.asarray(candidate_docs, dtype=np.float64)}
    squares = {side: np.einsum("ij,ij->i", docs, docs) for side, docs in sides.items()}
    norms = {side: np.sqrt(sq) for side, sq in squares.items()}
    depth = min(k, len(legacy_docs))
    shares: dict[str, dict[str, np.ndarray]] = {key: {} for key in masks}
    by_distance: dict[str, dict[str, dict[str, np.ndarray]]] = {d: {s: {} for s in sides} for d in DISTANCES}
    for source, vectors in queries.items():
        vectors = np.asarray(vectors, dtype=np.float64)
        for table in (*(shares[key] for key in masks), *(by_distance[d][s] for d in DISTANCES for s in sides)):
            table[source] = np.empty((len(vectors), depth), dtype=np.int64)
        for start in range(0, len(vectors), RANK_CHUNK):
            rows = slice(start, start + RANK_CHUNK)
            dots = {side: vectors[rows] @ docs.T for side, docs in sides.items()}
            for name in DISTANCES:
                scored = {side: _scores(dots[side], norms[side], squares[side], name) for side in sides}
                for side in sides:
                    by_distance[name][side][source][rows] = top_k(scored[side], depth)
                if name != distance:
                    continue
                for key, mask in masks.items():
                    if not mask.any():
                        shares[key][source][rows] = by_distance[name]["legacy"][source][rows]
                    elif mask.all():
                        shares[key][source][rows] = by_distance[name]["candidate"][source][rows]
                    else:
                        mixed = np.where(mask[None, :], scored["candidate"], scored["legacy"])
                        shares[key][source][rows] = top_k(mixed, depth)
            del dots
    return {"shares": shares, "by_distance": by_distance}
