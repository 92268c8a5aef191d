"""summary.json's ``long_input`` section: what each server did with an input longer than the model takes.

Each hypothesis' vector is built from the server's own answers to its pieces (``captures/<target>/long_input.json``,
:mod:`embedswap.measure.long_input`): ``truncated`` at a limit is its answer to the first tokens (the better of the
tokenizer's cut, first ``L - 1`` ids and the final special token, and the plain first ``L``); ``chunk_average`` is the
average of its answers to the consecutive pieces, weighted by each piece's tokens (vLLM's rule). A hypothesis
explains the answer when its cosine to it reaches the text parity gate; exactly one must, else the finding says
``ambiguous`` or ``unexplained`` (with the closest). A server that cuts at 256 cuts the 512-token head too (and one that
splits at 256 splits a 512-token piece), so of several passing hypotheses of one kind the smallest limit is named. A norm is not read: the cosine is the question.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.long_input import CAPTURE
from embedswap.reasons import not_measured
from embedswap.stats.vectors import pair_cosine


def _vectors(answer: dict[str, Any] | None, count: int) -> np.ndarray | None:
    """The answer's vectors when it gave one per input, else None."""
    if not answer or answer.get("status") != 200 or len(answer.get("vectors") or []) != count:
        return None
    return np.asarray(answer["vectors"], dtype=np.float64)


def hypotheses(evidence: dict[str, Any], answer: np.ndarray) -> list[dict[str, Any]]:
    """Every hypothesis the capture asked the pieces of, with its cosine to the answer (None: no usable answer)."""
    found = []
    for limit, asked in sorted(evidence.get("hypotheses", {}).items(), key=lambda kv: int(kv[0])):
        heads = [v for key in ("head", "head_plain") if (v := _vectors(asked.get(key), 1)) is not None]
        cosines = [c for v in heads if (c := pair_cosine(answer, v[0])) is not None]
        found.append({"name": "truncated", "limit": int(limit), "cosine": max(cosines) if cosines else None,
                      "pieces": 1, "pieces_as": (asked.get("head") or {}).get("as")})
        weights = np.asarray(asked.get("piece_tokens") or [], dtype=np.float64)
        pieces = _vectors(asked.get("pieces"), len(weights))
        average = None if pieces is None or not weights.sum() else weights @ pieces / weights.sum()
        found.append({"name": "chunk_average", "limit": int(limit), "pieces": len(weights),
                      "cosine": None if average is None else pair_cosine(answer, average),
                      "pieces_as": (asked.get("pieces") or {}).get("as")})
    return found


def reading(name: str, evidence: dict[str, Any], threshold: float) -> dict[str, Any]:
    """One server's finding: refused, the one hypothesis that passes the gate, or ambiguous/unexplained."""
    answer = evidence.get("answer") or {}
    base = {"target": name, "status": answer.get("status"), "prompt_tokens": answer.get("prompt_tokens")}
    if evidence.get("error") or not answer:
        return {**base, "code": "error", "error": evidence.get("error")}
    if answer.get("status") != 200:
        return {**base, "code": "refused", "error": (answer.get("error") or "")[:300] or None}
    vector = _vectors(answer, 1)
    if vector is None:
        return {**base, "code": "error", "error": "the answer to the long document carried no single vector"}
    found = hypotheses(evidence, vector[0])
    passing = [h for h in found if h["cosine"] is not None and h["cosine"] >= threshold]
    # a server that cuts (or splits) at L also cuts a longer head (splits a longer piece) at L: of the passing
    # hypotheses of one kind the smallest limit is the one it works at
    passing = [next(h for h in passing if h["name"] == kind) for kind in dict.fromkeys(h["name"] for h in passing)]
    scored = [h for h in found if h["cosine"] is not None]
    best = passing[0] if len(passing) == 1 else max(scored, key=lambda h: h["cosine"], default=None)
    code = passing[0]["name"] if len(passing) == 1 else "ambiguous" if passing else "unexplained"
    return {**base, "code": code, "limit": best["limit"] if best and code != "ambiguous" else None,
            "cosine": best["cosine"] if best else None, "hypotheses": found}


def long_input_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    """``{measured, document_tokens, limits, threshold, by_target}``; each candidate also says whether it handles
    the long document as the legacy server does (the same code at the same limit)."""
    captured = {name: attempt.read_json(f"{name}/{CAPTURE}") for name in experiment.target_order()
                if attempt.has(f"{name}/{CAPTURE}")}
    if not captured:
        return not_measured("long_input_not_probed")
    threshold = experiment.parity.text_threshold
    found = {name: reading(name, evidence, threshold) for name, evidence in captured.items()}
    legacy = found.get(experiment.legacy)
    for name in experiment.candidates:
        if name in found and legacy is not None:
            found[name]["same_as_legacy"] = (found[name]["code"], found[name].get("limit")) == (
                legacy["code"], legacy.get("limit"))
    first = next(iter(captured.values()))
    return {"measured": True, "document_tokens": first.get("document_tokens"), "limits": first.get("limits") or [],
            "threshold": threshold, "by_target": found}
