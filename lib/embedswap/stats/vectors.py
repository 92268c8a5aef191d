"""Vector diff between two servers' answers to the same workload: dims, norms, token totals, cosine."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from embedswap.reasons import not_measured

UNIT_NORM_TOLERANCE = 1e-3


ROW_CHUNK = 8192  # rows read at a time: a memory-mapped 100k x 384 stack is paged in chunk by chunk


def pair_cosine(a: Any, b: Any) -> float | None:
    """The cosine of two vectors in float64; None where there is none: two lengths, a zero vector, a non-finite
    value."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return None
    denominator = float(np.linalg.norm(x) * np.linalg.norm(y))
    value = float(x @ y / denominator) if denominator else None
    return value if value is not None and np.isfinite(value) else None


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of ``a`` with row i of ``b``, computed in float64, ``ROW_CHUNK`` rows at a time (memory-mapped
    captures are paged in chunk by chunk).

    ``einsum`` with a float64 ``dtype`` multiplies and sums in float64 without float64 copies of the rows: at
    20,000 x 384 float32 rows it took 0.02 s in a fresh process, where float64 copies and norms took 0.15 s in
    chunks and 0.29 s whole (the copies' first touch, not the arithmetic)."""
    if np.shape(a) != np.shape(b):
        raise ValueError(f"cannot compare vectors of shapes {np.shape(a)} and {np.shape(b)}")
    out = np.empty(len(a), dtype=np.float64)
    for start in range(0, len(a), ROW_CHUNK):
        x, y = np.asarray(a[start : start + ROW_CHUNK]), np.asarray(b[start : start + ROW_CHUNK])
        dots = np.einsum("ij,ij->i", x, y, dtype=np.float64)
        lengths = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64) * np.einsum("ij,ij->i", y, y, dtype=np.float64))
        out[start : start + len(x)] = dots / lengths
    return out


def spread(values: np.ndarray | list[float]) -> dict[str, float | None]:
    values = [float(v) for v in values]
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def norms(vectors: np.ndarray) -> dict[str, Any]:
    if len(vectors) == 0:  # no answer to measure: every figure is None (never an IndexError deep in a summary)
        return {"first": None, **spread([]), "not_unit_length": []}
    lengths = np.concatenate([np.linalg.norm(np.asarray(vectors[i : i + ROW_CHUNK], dtype=np.float64), axis=1)
                              for i in range(0, len(vectors), ROW_CHUNK)])
    off = [int(i) for i in np.where(np.abs(lengths - 1.0) > UNIT_NORM_TOLERANCE)[0]]
    return {"first": float(lengths[0]), **spread(lengths), "not_unit_length": off}


def repeat_stability(stack: np.ndarray) -> float | None:
    """Lowest cosine between a document's vector in repeat 0 and in any later repeat (1.0: deterministic)."""
    if stack.ndim != 3 or stack.shape[0] < 2:
        return None
    return float(min(rowwise_cosine(stack[0], stack[r]).min() for r in range(1, stack.shape[0])))


def token_total(requests: list[dict[str, Any]]) -> int | None:
    """Sum of usage.prompt_tokens over the first repeat's batches (None if any batch failed or lacked usage)."""
    first = [r for r in requests if r.get("repeat") == 0]
    if not first or any(r.get("status") != 200 or r.get("prompt_tokens") is None for r in first):
        return None
    return int(sum(r["prompt_tokens"] for r in first))


def index_order_ok(requests: list[dict[str, Any]]) -> bool:
    """data[].index came back as 0..n-1 in order on every successful request."""
    return all(r.get("indices") == list(range(r.get("n_vectors") or 0)) for r in requests if r.get("status") == 200)


def comparable(legacy: np.ndarray, candidate: np.ndarray) -> dict[str, Any] | None:
    """None when the two answers can be compared row by row, else the not-measured verdict saying why (shapes
    differ, or no vectors): one bad figure is a recorded verdict, never an exception that takes the summary down."""
    a, b = np.asarray(legacy), np.asarray(candidate)
    if a.ndim != 2 or b.ndim != 2 or a.shape != b.shape:
        return not_measured("vector_shapes_differ", a=list(a.shape), b=list(b.shape))
    if a.shape[0] == 0 or a.shape[1] == 0:
        return not_measured("vectors_empty", legacy=list(a.shape), candidate=list(b.shape))
    return None


def compare(legacy: np.ndarray, candidate: np.ndarray, langs: list[str], doc_ids: list[str]) -> dict[str, Any]:
    """Per-document cosine of candidate vs legacy (first repeat), overall and per language, worst documents.

    Mismatched shapes or empty answers give ``{"measured": False, "why", "reason"}`` instead of figures; documents
    whose cosine is not finite (NaN/inf values, a zero vector) are left out of the spreads, counted in
    ``non_finite`` with its reason, and their per-document cosine is None."""
    verdict = comparable(legacy, candidate)
    if verdict is not None:
        return verdict
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        raw = rowwise_cosine(legacy, candidate)
    finite = np.isfinite(raw)
    if not finite.any():
        return not_measured("vectors_non_finite", n=int(raw.size), total=int(raw.size))
    cos = np.where(finite, raw, np.inf)  # non-finite rows sort last and are excluded from every spread below
    langs_ok = [l for l, ok in zip(langs, finite) if ok]
    vals = cos[finite]
    by_language = {
        lang: spread([c for c, l in zip(vals, langs_ok) if l == lang]) | {"n": sum(1 for l in langs_ok if l == lang)}
        for lang in sorted(set(langs))
    }
    order = [int(i) for i in np.argsort(cos)[:5] if finite[i]]
    bad = int((~finite).sum())
    return {
        "measured": True,
        "cosine": spread(vals),
        "by_language": by_language,
        "per_document": [{"doc_id": d, "lang": l, "cosine": float(c) if ok else None}
                         for d, l, c, ok in zip(doc_ids, langs, raw, finite)],
        "worst": [{"doc_id": doc_ids[i], "lang": langs[i], "cosine": float(cos[i])} for i in order],
        "non_finite": ({"n": bad, **{k: v for k, v in not_measured("vectors_non_finite", n=bad,
                                                                    total=int(raw.size)).items() if k != "measured"}}
                       if bad else None),
    }
