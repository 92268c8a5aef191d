"""Vector diff between two servers' answers to the same workload: dims, norms, token totals, cosine."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

UNIT_NORM_TOLERANCE = 1e-3


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cannot compare vectors of shapes {a.shape} and {b.shape}")
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def spread(values: np.ndarray | list[float]) -> dict[str, float | None]:
    values = [float(v) for v in values]
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def norms(vectors: np.ndarray) -> dict[str, Any]:
    lengths = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)
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


def compare(legacy: np.ndarray, candidate: np.ndarray, langs: list[str], doc_ids: list[str]) -> dict[str, Any]:
    """Per-document cosine of candidate vs legacy (first repeat), overall and per language, worst documents."""
    cos = rowwise_cosine(legacy, candidate)
    by_language = {
        lang: spread([c for c, l in zip(cos, langs) if l == lang]) | {"n": sum(1 for l in langs if l == lang)}
        for lang in sorted(set(langs))
    }
    order = np.argsort(cos)[:5]
    return {
        "cosine": spread(cos),
        "by_language": by_language,
        "per_document": [{"doc_id": d, "lang": l, "cosine": float(c)} for d, l, c in zip(doc_ids, langs, cos)],
        "worst": [{"doc_id": doc_ids[i], "lang": langs[i], "cosine": float(cos[i])} for i in order],
    }
