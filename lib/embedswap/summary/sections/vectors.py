"""summary.json's ``vectors`` section: each server's document vectors, and every candidate against legacy."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from embedswap.summary.sections.captured import target_missing
from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.tokens import TOKENIZER_COUNTS
from embedswap.stats.vectors import compare, index_order_ok, norms, repeat_stability, token_total
from embedswap.reasons import not_measured
from embedswap.measure.workload import Workload


def _doc_vectors(attempt: Attempt, name: str) -> np.ndarray | None:
    # memory-mapped: a corpus-scale stack is paged in as each figure reads it, not loaded whole per target
    return attempt.read_array(f"{name}/doc_vectors.npy", mmap=True) if attempt.has(f"{name}/doc_vectors.npy") else None


def _norm_ratio(legacy: np.ndarray, candidate: np.ndarray) -> dict[str, Any]:
    """Per document, candidate / legacy L2 length (min, median, max) and whether any is off 1 by more than
    contract.NORM_TOLERANCE: a scaled or sliced-without-renormalising candidate, which cosine cannot see."""
    from embedswap.answers.classify import NORM_TOLERANCE

    a = np.linalg.norm(np.asarray(legacy, dtype=np.float64), axis=1)
    b = np.linalg.norm(np.asarray(candidate, dtype=np.float64), axis=1)
    ratio = np.divide(b, a, out=np.full_like(b, np.nan), where=a > 0)
    finite = ratio[np.isfinite(ratio)]
    spread = ({"min": float(finite.min()), "median": float(np.median(finite)), "max": float(finite.max())}
              if finite.size else {"min": None, "median": None, "max": None})
    return {**spread, "differs": bool(finite.size and np.any(np.abs(finite - 1.0) > NORM_TOLERANCE))}


def vectors_section(experiment: Experiment, attempt: Attempt, workload: Workload) -> dict[str, Any]:
    names = experiment.target_order()
    langs = [d.lang for d in workload.documents]
    ids = [d.id for d in workload.documents]
    by_target: dict[str, Any] = {}
    for name in names:
        missing = target_missing(attempt, name)
        stack = _doc_vectors(attempt, name)
        if missing or stack is None:
            by_target[name] = missing or not_measured("no_document_vectors", name=name)
            continue
        requests = attempt.read_jsonl(f"{name}/workload_requests.jsonl")
        by_target[name] = {
            "measured": True,
            "dimension": int(stack.shape[2]),
            "norm": norms(stack[0]),
            "token_total": token_total(requests),
            "index_order_ok": index_order_ok(requests),
            "repeat_min_cosine": repeat_stability(stack),
            "repeats": int(stack.shape[0]),
            "source": f"captures/{name}/doc_vectors.npy",
            "sha256": hashlib.sha256(np.ascontiguousarray(stack[0], dtype=np.float32).tobytes()).hexdigest(),
        }
    legacy = _doc_vectors(attempt, experiment.legacy)
    comparisons: dict[str, Any] = {}
    for name in experiment.candidates:
        candidate = _doc_vectors(attempt, name)
        if legacy is None or candidate is None or not by_target[name].get("measured"):
            comparisons[name] = not_measured("vectors_missing", legacy=experiment.legacy, name=name)
        elif legacy.shape[2] != candidate.shape[2]:
            comparisons[name] = not_measured("dimensions_differ", legacy=legacy.shape[2], candidate=candidate.shape[2])
        else:
            comparisons[name] = {"measured": True, **compare(legacy[0], candidate[0], langs, ids),
                                 "norm_ratio": _norm_ratio(legacy[0], candidate[0])}
    primary = comparisons[experiment.primary_candidate]
    counts = attempt.read_json(TOKENIZER_COUNTS) if attempt.has(TOKENIZER_COUNTS) else {}
    tokenizer_total = (counts.get("documents") or {}).get("total")
    for info in by_target.values():
        if info.get("measured"):
            info["token_total_matches_tokenizer"] = (None if tokenizer_total is None or info["token_total"] is None
                                                     else info["token_total"] == tokenizer_total)

    def role(key: str) -> dict[str, Any]:
        return {r: by_target[n].get(key) for r, n in (("legacy", experiment.legacy),
                                                     ("candidate", experiment.primary_candidate))}

    return {
        "measured": bool(primary.get("measured")),
        "dimension": role("dimension"),
        "token_total": role("token_total"),
        "norm_first": {r: (v or {}).get("first") for r, v in role("norm").items()},
        "cosine": primary.get("cosine", {"min": None, "median": None, "max": None}),
        "by_language": primary.get("by_language"),
        "worst": primary.get("worst"),
        "by_target": by_target,
        "comparisons": comparisons,
        # the model's own tokenizer, offline (captures/reference/tokenizer_counts.json): the yardstick of the totals
        "tokenizer_token_total": tokenizer_total,
        "tokenizer": {k: counts.get(k) for k in ("implementation", "max_length", "error") if counts.get(k)},
    }
