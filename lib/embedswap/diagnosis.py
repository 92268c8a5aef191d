"""Why a server's vectors differ from the model's: recompute them under each known pipeline mistake, keep the match.

One forward pass gives the token states; every hypothesis (pooling mean / cls / lasttoken / max, the model's
Dense modules applied or not, L2 normalisation on or off) is then a cheap reduction of those states. The
hypothesis that reproduces the server's vectors (same dimension, lowest cosine >= the gate, median norms within
:data:`NORM_RELATIVE_TOLERANCE`) is reported as a list of reason codes (``diagnosis_*`` in :mod:`embedswap.reasons`),
each saying what the server does differently and the fix; none reproducing it gives ``diagnosis_unknown``.
Not covered yet (issue 24 lists them): EOS appended or not, instruction template, truncation length, fp16/bf16.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.reasons import explain

POOLINGS = ("mean", "cls", "lasttoken", "max")
NORM_RELATIVE_TOLERANCE = 1e-2


@dataclass(frozen=True)
class Hypothesis:
    pooling: str
    dense: bool
    normalize: bool


def _matches(candidate: np.ndarray, served: np.ndarray, threshold: float) -> float | None:
    """Lowest cosine when ``candidate`` reproduces ``served`` (shape, direction and norm), else None."""
    if candidate.shape != served.shape:
        return None
    a, b = candidate.astype(np.float64), served.astype(np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    cos = (a * b).sum(1) / np.maximum(na * nb, 1e-30)
    if not np.all(np.isfinite(cos)) or cos.min() < threshold:
        return None
    if abs(np.median(na) - np.median(nb)) > NORM_RELATIVE_TOLERANCE * max(float(np.median(nb)), 1e-12):
        return None
    return float(cos.min())


def hypothesis_vectors(model: str | Path, texts: list[str]) -> tuple[Hypothesis, dict[Hypothesis, np.ndarray]]:
    """The model's own pipeline and the vectors of every hypothesis, from one forward pass (the legacy server's
    tokeniser and model loading, so truncation and padding are the model's)."""
    import torch
    import torch.nn.functional as F

    from embedswap.legacy_server import Embedder, LegacySettings, pool

    embedder = Embedder(LegacySettings(model=str(model)))
    truth = Hypothesis(embedder.pooling, bool(embedder.dense), embedder.normalize)
    out: dict[Hypothesis, list[torch.Tensor]] = {}
    with torch.inference_mode():
        for start in range(0, len(texts), 32):
            batch = embedder._encode(texts[start : start + 32])
            hidden = embedder.model(**batch).last_hidden_state
            for mode in POOLINGS:
                pooled = pool(hidden, batch["attention_mask"], mode, embedder.padding_side)
                projected = pooled
                for layer in embedder.dense:
                    projected = layer({"sentence_embedding": projected})["sentence_embedding"].float()
                for dense, normalize in itertools.product((True, False), (True, False)):
                    if dense and not embedder.dense:
                        continue
                    vec = projected if dense else pooled
                    vec = F.normalize(vec, p=2, dim=1) if normalize else vec
                    out.setdefault(Hypothesis(mode, dense, normalize), []).append(vec)
    return truth, {h: torch.cat(v).numpy() for h, v in out.items()}


def explain_difference(truth: Hypothesis, found: Hypothesis, name: str) -> list[dict[str, Any]]:
    """Reason codes for what ``found`` (the server) does differently from ``truth`` (the model)."""
    codes: list[tuple[str, dict[str, Any]]] = []
    if found.pooling != truth.pooling:
        codes.append(("diagnosis_pooling", {"name": name, "pooling": found.pooling, "expected": truth.pooling}))
    if truth.dense and not found.dense:
        codes.append(("diagnosis_dense_ignored", {"name": name}))
    if found.normalize and not truth.normalize:
        codes.append(("diagnosis_normalize_added", {"name": name}))
    if truth.normalize and not found.normalize:
        codes.append(("diagnosis_normalize_missing", {"name": name}))
    return [{"code": c, "params": p, "why": explain(c, **p)} for c, p in codes]


def diagnose(model: str | Path, texts: list[str], served: np.ndarray, name: str,
             threshold: float = 0.999) -> dict[str, Any]:
    """The hypothesis reproducing ``served`` and its reasons, or ``diagnosis_unknown``."""
    truth, candidates = hypothesis_vectors(model, texts)
    served = np.asarray(served, dtype=np.float32)
    if _matches(candidates[truth], served, threshold) is not None:
        return {"cause": None, "reasons": [], "hypothesis": None}
    best = None
    for hypothesis, vectors in candidates.items():
        cos = _matches(vectors, served, threshold)
        if cos is not None and (best is None or cos > best[1]):
            best = (hypothesis, cos)
    if best is None:
        reason = {"code": "diagnosis_unknown", "params": {"name": name}, "why": explain("diagnosis_unknown", name=name)}
        return {"cause": "diagnosis_unknown", "reasons": [reason], "hypothesis": None}
    reasons = explain_difference(truth, best[0], name)
    return {"cause": reasons[0]["code"] if reasons else None, "reasons": reasons,
            "hypothesis": {"pooling": best[0].pooling, "dense": best[0].dense, "normalize": best[0].normalize,
                           "cos_min": best[1]}}


def diagnose_safely(model: str | Path, texts: list[str], served: np.ndarray, name: str,
                    threshold: float = 0.999) -> dict[str, Any]:
    """:func:`diagnose`, with a failure recorded instead of raised (a model the diagnosis cannot load must not take
    the parity step down: the gate has already failed the row)."""
    try:
        return diagnose(model, texts, served, name, threshold)
    except Exception as exc:  # noqa: BLE001 - recorded as the diagnosis' own error
        return {"cause": None, "reasons": [], "hypothesis": None, "error": f"{type(exc).__name__}: {exc}"}
