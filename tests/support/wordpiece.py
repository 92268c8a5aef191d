"""An independent token count for BERT-style (WordPiece) tokenizers, read from tokenizer.json's vocabulary directly.

Tests compare the servers' `usage` with this count instead of with the same `transformers` call the code under test
makes, so a change in how the kit counts is seen (issue 23). It follows BertNormalizer + BertPreTokenizer + WordPiece
as tokenizer.json declares them for MiniLM: clean text, spaces around CJK ideographs, lowercase, NFD and drop
combining marks, split on whitespace and punctuation, greedy longest match with `##` continuations, [CLS]/[SEP].
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or \
        unicodedata.category(ch).startswith("P")


def load_vocab(model_dir: str | Path) -> dict[str, int]:
    return json.loads((Path(model_dir) / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]


def words(text: str) -> list[str]:
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
            continue
        out.append(f" {ch} " if _is_cjk(cp) else (" " if ch.isspace() else ch))
    normal = "".join(c for c in unicodedata.normalize("NFD", "".join(out).lower()) if unicodedata.category(c) != "Mn")
    pieces: list[str] = []
    for word in normal.split():
        current = ""
        for ch in word:
            if _is_punct(ch):
                if current:
                    pieces.append(current)
                pieces.append(ch)
                current = ""
            else:
                current += ch
        if current:
            pieces.append(current)
    return pieces


def wordpiece(word: str, vocab: dict[str, int]) -> list[str]:
    if len(word) > 100:
        return ["[UNK]"]
    tokens, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                tokens.append(piece)
                break
            end -= 1
        else:
            return ["[UNK]"]
        start = end
    return tokens


SPECIAL = ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")  # tokenizer.json's added_tokens: matched in the raw text


def count_tokens(text: str, vocab: dict[str, int], max_length: int | None = None) -> int:
    """Tokens of one input with [CLS] and [SEP], cut at `max_length` when given (as a truncating server does)."""
    pattern = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL) + ")")
    n = 2
    for part in pattern.split(text):
        n += 1 if part in SPECIAL else sum(len(wordpiece(w, vocab)) for w in words(part))
    return min(n, max_length) if max_length else n
