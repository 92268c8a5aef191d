"""A server whose tokenizer differs from the model's, found per language from its own token counts.

Step 02 asks every server how it tokenizes the documents (``captures/<target>/tokens.json``,
:mod:`embedswap.measure.server_tokens`): its own token ids through a tokenize route, else the ``usage`` of a
request of one document. Each document is then one of three cases against the model's tokenizer:

- ``same``: the server reads the tokens the model's pipeline reads (cut at its limit);
- ``context``: the same tokens, but more of them: its context is longer than the model's pipeline's cut (llama.cpp
  reads MiniLM's 512 positions where sentence-transformers cuts at 256);
- ``tokens``: other tokens (llama.cpp's WPM tokenizer drops the vowel jamo the model's tokenizer keeps in Korean).

A cause is named for a language only when its documents diverge where their tokens differ (their cosine to the
model's vectors below the gate) and the documents read alike do not (their median cosine is higher). Where the
server gave its token ids, the hypothesis is tested directly: the model run on the server's own tokens
(:func:`reembed`) has to reproduce its vectors. A server that counts only gives counts: the confinement is the
evidence then. Ids compare id for id where the server's vocabulary is the model's in the same order (llama.cpp's GGUF
keeps it: docs/measurements.md).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Any

import numpy as np

from embedswap.reasons import explain

CASES = ("same", "context", "tokens")
SHOWN_PIECES = 3  # the tokens the sentence names that the server leaves out (the most frequent)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.maximum(np.linalg.norm(a64, axis=-1) * np.linalg.norm(b64, axis=-1), 1e-30)
    return (a64 * b64).sum(-1) / norms


def _content(ids: list[int], special: set[int]) -> list[int]:
    """``ids`` without the special tokens at either end ([CLS] ... [SEP])."""
    start, end = 0, len(ids)
    while start < end and ids[start] in special:
        start += 1
    while end > start and ids[end - 1] in special:
        end -= 1
    return ids[start:end]


def classify(server: dict[str, Any], whole: list[int], cut: list[int], special: set[int]) -> str:
    """``same``, ``context`` or ``tokens`` for one document: ``server`` its record (``tokens``, ``ids``), ``whole``
    the model's tokenizer's ids uncut, ``cut`` those the model's pipeline reads (special tokens included)."""
    ids = server.get("ids")
    if ids is not None:
        mine, theirs, uncut = _content(ids, special), _content(cut, special), _content(whole, special)
        if mine == theirs:
            return "same"
        if len(mine) > len(theirs) and uncut[: len(mine)] == mine:
            return "context"
        return "tokens"
    count = int(server["tokens"])
    if count == len(cut):
        return "same"
    return "context" if len(cut) < count <= len(whole) else "tokens"


def dropped_pieces(server_ids: list[list[int]], model_ids: list[list[int]], tokenizer: Any) -> list[str]:
    """The tokens the model's tokenizer makes that the server's does not, most frequent first (``##ᅢ``)."""
    missing: Counter[int] = Counter()
    for mine, theirs in zip(server_ids, model_ids):
        missing.update(Counter(theirs) - Counter(mine))
    return [str(p) for p in tokenizer.convert_ids_to_tokens([i for i, _ in missing.most_common(SHOWN_PIECES)])]


def script_of(pieces: list[str]) -> str:
    """What the pieces are, in Unicode's words (``HANGUL JUNGSEONG``: the vowel jamo; ``HANGUL JONGSEONG``: the
    final consonants), '' when one is no letter."""
    names = set()
    for piece in pieces:
        letters = [c for c in piece.removeprefix("##") if c.isalpha()]
        if not letters:
            return ""
        name = unicodedata.name(letters[0], "")
        names.add(" ".join(name.split()[:2]))
    return ", ".join(sorted(names))


def reembed(embedder: Any, rows: list[list[int]]) -> np.ndarray:
    """The model's pooled vectors (before any normalisation) of token ids as given, up to the model's positions
    (the pipeline's own cut does not apply: a server with a longer context reads past it)."""
    import torch

    from embedswap.legacy.pipeline import pool

    positions = int(getattr(embedder.model.config, "max_position_embeddings", 0) or embedder.limit)
    out = []
    with torch.inference_mode():
        for start in range(0, len(rows), 16):
            batch = embedder._pad_ids([r[:positions] for r in rows[start: start + 16]])
            hidden = embedder.model(**batch).last_hidden_state
            pooled = pool(hidden, batch["attention_mask"], embedder.pooling, embedder.padding_side)
            for layer in embedder.dense:
                pooled = layer({"sentence_embedding": pooled})["sentence_embedding"].float()
            out.append(pooled.numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


def _wrapped(ids: list[int], cut: list[int], special: set[int]) -> list[int]:
    """The server's content tokens between the model's own special tokens ([CLS] ... [SEP])."""
    head = [i for i in cut[:1] if i in special]
    tail = [i for i in cut[-1:] if i in special]
    return head + _content(ids, special) + tail


def analyse(embedder: Any, texts: list[str], langs: list[str], record: dict[str, Any], served: np.ndarray,
            threshold: float, limit: int | None = None) -> dict[str, Any] | None:
    """Per language: the documents each case holds, their cosines, the server's and the model's counts; and the
    model run on the server's tokens where it gave them. ``texts``/``langs``/``served`` are the records' documents
    in order; ``limit`` where the model's pipeline cuts (default: the embedder's). None when the server's counts
    all agree with the model's (or it gave none)."""
    tok = embedder.tokenizer
    special = set(tok.all_special_ids) - {tok.unk_token_id}  # an unknown word is content
    docs = [d for d in record.get("documents", []) if d.get("tokens") is not None]
    if not docs or len(docs) != len(texts):
        return None
    whole = [list(r) for r in tok(texts, add_special_tokens=True)["input_ids"]]
    cut = [list(r) for r in tok(texts, add_special_tokens=True, truncation=True,
                                max_length=limit or embedder.limit)["input_ids"]]
    cases = [classify(d, w, c, special) for d, w, c in zip(docs, whole, cut)]
    if all(c == "same" for c in cases):
        return None
    truth = embedder.embed(cut).vectors.numpy()
    cos = _cos(truth, served)
    with_ids = [i for i, d in enumerate(docs) if d.get("ids") is not None]
    result: dict[str, Any] = {"source": record.get("source"), "route": record.get("route"), "documents": len(docs),
                              "by_language": {}, "reembedded": None}
    if with_ids:  # the hypothesis itself: the model on the server's own tokens
        rows = [_wrapped(docs[i]["ids"], cut[i], special) for i in with_ids]
        pooled = reembed(embedder, rows)
        again = _cos(pooled, served[with_ids])
        served_norm = float(np.median(np.linalg.norm(served[with_ids], axis=1)))
        pooled_norm = float(np.median(np.linalg.norm(pooled, axis=1)))
        result["reembedded"] = {"documents": len(with_ids), "cos_min": float(again.min()),
                                "reproduces": bool(again.min() >= threshold),
                                "unnormalised": bool(abs(served_norm - pooled_norm) <= 1e-2 * pooled_norm
                                                     and abs(served_norm - 1.0) > 1e-2)}
    for lang in dict.fromkeys(langs):
        members = [i for i, l in enumerate(langs) if l == lang]
        result["by_language"][lang] = _slice(members, cases, cos, docs, whole, cut, special, tok)
    return result


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _slice(members: list[int], cases: list[str], cos: np.ndarray, docs: list[dict[str, Any]], whole: list[list[int]],
           cut: list[list[int]], special: set[int], tok: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"documents": len(members), **{c: sum(cases[i] == c for i in members) for c in CASES}}
    for case in CASES:
        out[f"cos_median_{case}"] = _median([float(cos[i]) for i in members if cases[i] == case])
    differing = [i for i in members if cases[i] == "tokens"]
    if differing:  # the document that differs most in count: the sentence's example
        worst = max(differing, key=lambda i: abs(int(docs[i]["tokens"]) - len(cut[i])))
        out["example"] = {"row": docs[worst].get("row"), "tokens": int(docs[worst]["tokens"]),
                          "expected": len(cut[worst])}
        with_ids = [i for i in differing if docs[i].get("ids") is not None]
        pieces = dropped_pieces([_content(docs[i]["ids"], special) for i in with_ids],
                                [_content(cut[i], special) for i in with_ids], tok) if with_ids else []
        out["dropped"] = pieces
        out["script"] = script_of(pieces)
    longer = [i for i in members if cases[i] == "context"]
    if longer:
        out["context_tokens"] = max(int(docs[i]["tokens"]) for i in longer)
    out["cos_min"] = float(min(cos[i] for i in members)) if members else None
    return out


def _diverges(part: dict[str, Any], case: str, threshold: float) -> bool:
    """The documents of ``case`` diverge, and more than those read alike (the divergence is theirs)."""
    mine, alike = part.get(f"cos_median_{case}"), part.get("cos_median_same")
    if mine is None:
        return False
    if case == "context":  # a longer context moves only the longest documents: judged on their lowest cosine
        mine = part.get("cos_min", mine)
    return mine < threshold and (alike is None or alike > mine)


def tokenization_reasons(found: dict[str, Any], name: str, limit: int, threshold: float) -> list[dict[str, Any]]:
    """Reason codes per language: ``diagnosis_tokenizer_drops`` (the pieces named), ``diagnosis_tokenizer_differs``
    (counts only), ``diagnosis_context_longer``; then ``diagnosis_tokenizer_reproduced`` when the model on the
    server's own tokens gives its vectors, and ``diagnosis_normalize_missing`` when those match unnormalised."""
    codes: list[tuple[str, dict[str, Any]]] = []
    for lang, part in found["by_language"].items():
        if part["tokens"] and _diverges(part, "tokens", threshold):
            example = part["example"]
            params = {"name": name, "lang": lang, "texts": part["tokens"], "of": part["documents"],
                      "tokens": example["tokens"], "expected": example["expected"],
                      "cosine": round(float(part["cos_median_tokens"]), 3)}
            if part.get("dropped"):
                params.update(pieces=" ".join(part["dropped"]), script=part.get("script") or "-")
                codes.append(("diagnosis_tokenizer_drops", params))
            else:
                codes.append(("diagnosis_tokenizer_differs", params))
        if part["context"] and _diverges(part, "context", threshold):
            codes.append(("diagnosis_context_longer", {"name": name, "lang": lang, "texts": part["context"],
                                                       "tokens": part["context_tokens"], "limit": limit,
                                                       "cosine": round(float(part["cos_min"]), 3)}))
    again = found.get("reembedded")
    if codes and again and again["reproduces"]:
        codes.append(("diagnosis_tokenizer_reproduced", {"name": name, "texts": again["documents"],
                                                         "cosine": round(again["cos_min"], 6)}))
        if again["unnormalised"]:
            codes.append(("diagnosis_normalize_missing", {"name": name}))
    return [{"code": c, "params": p, "why": explain(c, **p)} for c, p in codes]


def with_tokenization(finding: dict[str, Any], found: dict[str, Any] | None, name: str, limit: int,
                      threshold: float) -> dict[str, Any]:
    """``finding`` with the tokenization evidence; its cause replaced when no other hypothesis explained the vectors
    (``diagnosis_unknown``) and the tokens do."""
    if found is None:
        return finding
    reasons = tokenization_reasons(found, name, limit, threshold)
    out = {**finding, "tokenization": found}
    if reasons and finding.get("cause") in (None, "diagnosis_unknown") and not finding.get("error"):
        out.update(cause=reasons[0]["code"], reasons=reasons)
    return out
