"""The real input limit: where a server cuts its inputs, found from its own vectors (and its own ``usage``).

A server may cut inputs at its own length (a number of words, of characters, or a token limit below the model's)
that neither it nor its documentation states, so the truncation hypothesis of a stated or probed limit does not
find it. Here the shortest document whose vector differs from the model's is searched cut by cut: every cut of its
tokens is embedded with the model's own pipeline (one batch: the content tokens ``1..n-1`` between the tokenizer's
special tokens) and the cut that reproduces the server's vector is kept, read in three units: tokens, words
(whitespace-separated words the kept text holds) and characters. A limit is one length in one unit, so the next
differing documents (up to :data:`SEARCHED`, shortest first) are only cut where each unit predicts; the unit that
reproduces all of them is the server's limit (tokens first, then words). The limit is confirmed when cutting every
diagnosed document that way reproduces all of the server's vectors. The server's own ``usage`` is the evidence
beside it: the ``prompt_tokens`` of its answer to the over-long probe against the token count of that input cut the
same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.reasons import explain

SEARCHED = 6  # differing documents the limit has to reproduce before it is confirmed on every text
UNITS = ("tokens", "words", "characters")


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.maximum(np.linalg.norm(a64, axis=-1) * np.linalg.norm(b64, axis=-1), 1e-30)
    return (a64 * b64).sum(-1) / norms


def _special(tokenizer: Any) -> tuple[int, int]:
    """How many special tokens the tokenizer puts before and after the content ([CLS] ... [SEP]: 1, 1)."""
    marked = tokenizer("a", add_special_tokens=True, return_special_tokens_mask=True)["special_tokens_mask"]
    head = next((i for i, m in enumerate(marked) if not m), 0)
    tail = len(marked) - 1 - max((i for i, m in enumerate(marked) if not m), default=len(marked) - 1)
    return head, tail


def _cut_ids(ids: list[int], head: int, tail: int, keep: int) -> list[int]:
    return ids[:head] + ids[head: head + keep] + (ids[len(ids) - tail:] if tail else [])


def cut_text(text: str, unit: str, limit: int) -> str:
    """``text`` cut at ``limit`` words or characters."""
    return " ".join(text.split()[:limit]) if unit == "words" else text[:limit]


def _one(embedder: Any, text: str, served: np.ndarray, threshold: float,
         head: int, tail: int) -> dict[str, Any] | None:
    """The cut of one document that reproduces the served vector: kept content tokens, words and characters."""
    tok = embedder.tokenizer
    encoded = tok(text, truncation=True, max_length=embedder.limit, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), list(encoded["offset_mapping"])
    content = len(ids) - head - tail
    if content < 2:
        return None
    cuts = list(range(1, content))
    vectors = embedder.embed([_cut_ids(ids, head, tail, k) for k in cuts]).vectors.numpy()
    cos = _cos(vectors, served[None, :])
    best = int(np.argmax(cos))
    if not cos[best] >= threshold:
        return None
    keep = cuts[best]
    end = offsets[head + keep - 1][1]
    return {"tokens": keep + head + tail, "content_tokens": keep, "words": len(text[:end].split()),
            "characters": end, "cosine": float(cos[best])}


def _as_read(tokenizer: Any, text: str, unit: str, limit: int) -> Any:
    """What a server cutting at ``limit`` ``unit`` embeds of ``text``: its token ids (a token limit counts the
    special tokens, as a server's max_length does) or the cut text."""
    if unit == "tokens":
        return list(tokenizer(text, truncation=True, max_length=limit)["input_ids"])
    return cut_text(text, unit, limit)


def _read_tokens(tokenizer: Any, text: str, unit: str, limit: int) -> int:
    """How many tokens (the special ones counted) a server cutting at ``limit`` ``unit`` embeds of ``text``."""
    read = _as_read(tokenizer, text, unit, limit)
    return len(read) if isinstance(read, list) else len(tokenizer(read)["input_ids"])


def _reproduces(embedder: Any, text: str, served: np.ndarray, unit: str, limit: int, threshold: float) -> bool:
    """Whether ``text`` cut at ``limit`` ``unit`` gives the server's vector."""
    read = _as_read(embedder.tokenizer, text, unit, limit)
    return bool(_cos(embedder.embed([read]).vectors.numpy(), served[None, :])[0] >= threshold)


def search_truncation(embedder: Any, texts: list[str], served: np.ndarray, truth: np.ndarray, threshold: float,
                      evidence: dict[str, Any] | None = None,
                      confirm: tuple[list[str], np.ndarray] | None = None) -> dict[str, Any] | None:
    """Where the server cuts, or ``{"found": False}`` when no cut reproduces its vectors; None when no document
    differs. ``truth`` is the model's own vectors of ``texts``; ``evidence`` the server's answer to the over-long
    probe (``prompt_tokens`` and the input text ``text``); ``confirm``: the texts (and the server's vectors of
    them) the limit found must reproduce, when not ``texts`` themselves (the search ran on a probe of them)."""
    served = np.asarray(served, dtype=np.float32)
    cos = _cos(truth, served)
    differing = [int(i) for i in np.argsort(cos, kind="stable") if cos[i] < threshold]
    if not differing:
        return None
    # the shortest first: every differing document has to be a cut of its own, so any of them can refute a limit,
    # and a document's search embeds each of its cuts (cost grows with the square of its length)
    lengths = [len(ids) for ids in embedder.tokenizer([texts[i] for i in differing])["input_ids"]]
    differing = [i for _, i in sorted(zip(lengths, differing))][:SEARCHED]
    head, tail = _special(embedder.tokenizer)
    first = _one(embedder, texts[differing[0]], served[differing[0]], threshold, head, tail)
    if first is None:
        return {"found": False, "searched": len(differing)}
    # the other documents: only the cuts the first one predicts, one per unit (a limit is one length in one unit)
    units = {unit: int(first[unit]) for unit in UNITS}
    for i in differing[1:]:
        units = {u: n for u, n in units.items() if _reproduces(embedder, texts[i], served[i], u, n, threshold)}
        if not units:
            return {"found": False, "searched": len(differing)}
    name = next(u for u in UNITS if u in units)
    limit = units[name]
    every, every_served = confirm if confirm is not None else (texts, served)
    tok = embedder.tokenizer
    inputs = [_as_read(tok, t, name, limit) for t in every]
    confirmed = _cos(embedder.embed(inputs).vectors.numpy(), np.asarray(every_served, dtype=np.float32))
    if not float(confirmed.min()) >= threshold:
        return {"found": False, "searched": len(differing)}
    tokens = sorted(_read_tokens(tok, texts[i], name, limit) for i in differing)
    result: dict[str, Any] = {"found": True, "unit": name, "limit": limit, "tokens": tokens[len(tokens) // 2],
                              "searched": len(differing), "confirmed_on": len(every),
                              "cos_min": float(confirmed.min())}
    result["usage"] = _usage(embedder.tokenizer, name, limit, evidence)
    return result


def _usage(tokenizer: Any, unit: str, limit: int, evidence: dict[str, Any] | None) -> dict[str, Any] | None:
    """The server's own count for the over-long probe against the tokens of that input cut the way found."""
    if not evidence or not isinstance(evidence.get("prompt_tokens"), int) or not evidence.get("text"):
        return None
    expected = _read_tokens(tokenizer, str(evidence["text"]), unit, limit)
    return {"prompt_tokens": evidence["prompt_tokens"], "expected": expected,
            "agrees": abs(evidence["prompt_tokens"] - expected) <= 2}


def truncation_finding(d: Any, served: np.ndarray, name: str, threshold: float,
                       evidence: dict[str, Any] | None) -> dict[str, Any]:
    """A server cutting inputs at its own length (words, characters, a token limit nobody stated), else
    ``diagnosis_unknown`` saying that no truncation reproduces the vectors either. ``d``: the
    :class:`~embedswap.diagnosis.hypotheses.Diagnoser` that found no other hypothesis."""
    cut = _search_cut(d, served, threshold, evidence)
    if cut is not None and cut.get("found"):
        params = {"name": name, "limit": cut["limit"], "tokens": cut["tokens"], "expected": d.limit}
        code = f"diagnosis_truncation_{cut['unit']}"
        reasons = [{"code": code, "params": params, "why": explain(code, **params)}]
        usage = cut.get("usage")
        if usage is not None:
            code = "diagnosis_truncation_usage" if usage["agrees"] else "diagnosis_truncation_usage_differs"
            params = {"name": name, "prompt_tokens": usage["prompt_tokens"], "expected": usage["expected"]}
            reasons.append({"code": code, "params": params, "why": explain(code, **params)})
        hypothesis = {**d.truth.as_dict(), "max_tokens": cut["tokens"], "cos_min": cut["cos_min"]}
        return {"cause": reasons[0]["code"], "reasons": reasons, "hypothesis": hypothesis, "truncation": cut}
    reasons = [{"code": "diagnosis_unknown", "params": {"name": name},
                "why": explain("diagnosis_unknown", name=name)}]
    if cut is not None:  # the documents differ, and no cut of them reproduces the server's vectors
        reasons.append({"code": "diagnosis_no_truncation", "params": {"name": name},
                        "why": explain("diagnosis_no_truncation", name=name)})
    out = {"cause": "diagnosis_unknown", "reasons": reasons, "hypothesis": None}
    return {**out, "truncation": cut} if cut is not None else out


def _search_cut(d: Any, served: np.ndarray, threshold: float,
                evidence: dict[str, Any] | None) -> dict[str, Any] | None:
    """:func:`search_truncation` on the probe texts when the model's own pass ran on those only (every text has to
    be a cut of its own, so the probe's differing texts can find or refute a limit), the limit confirmed on every
    text; else on every text."""
    if d.truth.prompt is not None or served.shape[0] != len(d.texts):
        return None
    if d.rows is not None and d.truth not in d.candidates:
        probe = d.truth_on_probe()
        if probe.shape != served[d.rows].shape:
            return None
        return search_truncation(d.embedder, [d.texts[i] for i in d.rows], served[d.rows], probe, threshold,
                                 evidence, confirm=(d.texts, served))
    if d.truth_vectors().shape != served.shape:
        return None
    return search_truncation(d.embedder, d.texts, served, d.truth_vectors(), threshold, evidence)
