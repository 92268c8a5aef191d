"""Text and vector helpers of the shim: the model's tokenizer, its token limit, truncation that keeps the text,
L2 re-normalising and OpenAI's base64 encoding."""

from __future__ import annotations

import base64
import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np


@lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def model_token_limit(model_path: str) -> int | None:
    """The model's own input limit: the smallest its configuration states (measure.model_limits), else the loaded
    tokenizer's (if sane)."""
    from embedswap.model_limits import token_limit

    stated = token_limit(model_path)
    if stated:
        return stated
    folder = Path(model_path)
    st_config = folder / "sentence_bert_config.json"
    if st_config.exists():
        value = json.loads(st_config.read_text()).get("max_seq_length")
        if value:
            return int(value)
    try:
        tokenizer = load_tokenizer(model_path)
    except Exception:  # not a local model: nothing to read
        return None
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit and limit < 1_000_000 else None


def l2_renormalise(vector: list[float]) -> list[float]:
    array = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(array)
    return (array / norm).tolist() if norm else array.tolist()


def encode_base64(vector: list[float]) -> str:
    """OpenAI's base64 format: little-endian float32 bytes."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


class Truncator:
    """Cuts texts to a token budget with the model's own tokenizer (special tokens counted), keeping the text.

    The cut is made in the original string at the end of the last token that fits (offset mapping), so the text
    is not round-tripped through ``decode`` (which lowercases, splits Hangul into jamo, ...). A cut word can
    re-tokenise differently, so the result is re-counted and shortened until it fits.
    """

    def __init__(self, tokenizer: Any, limit: int) -> None:
        self.tokenizer = tokenizer
        self.limit = limit
        self.special = int(tokenizer.num_special_tokens_to_add(pair=False))
        self._lock = threading.Lock()  # a Rust tokenizer used from several threads at once can fail

    def count(self, text: str) -> int:
        with self._lock:
            return len(self.tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])

    def __call__(self, text: str) -> tuple[str, bool]:
        if self.count(text) <= self.limit:
            return text, False
        budget = self.limit - self.special
        if budget <= 0:
            return "", True
        with self._lock:
            encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = encoded.get("offset_mapping")
        ids = encoded["input_ids"]
        for keep in range(min(budget, len(ids)), max(0, budget - 64), -1):
            cut = text[: offsets[keep - 1][1]] if offsets else self.tokenizer.decode(ids[:keep])
            if self.count(cut) <= self.limit:
                return cut, True
        with self._lock:  # pathological text: fall back to the decoded ids
            return self.tokenizer.decode(ids[: max(0, budget - 64)]), True


def request_token_count(tokenizer: Any, body: dict[str, Any] | None, max_length: int | None) -> int | None:
    """What the model's own tokenizer counts for one request's inputs (special tokens included, each input cut at
    ``max_length`` as the servers cut or refuse it): the yardstick a probe's ``usage.prompt_tokens`` is compared
    with. None for a body that holds no inputs the tokenizer can count (a raw body, a number)."""
    if not isinstance(body, dict):
        return None
    inputs = body.get("input", body.get("texts", body.get("inputs")))
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs:
        return None
    if all(isinstance(x, int) and not isinstance(x, bool) for x in inputs):  # one pre-tokenised input
        return min(len(inputs), max_length or len(inputs))
    total = 0
    for item in inputs:
        if isinstance(item, str):
            ids = tokenizer(item, add_special_tokens=True, truncation=max_length is not None,
                            max_length=max_length)["input_ids"]
            total += len(ids)
        elif isinstance(item, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in item):
            total += min(len(item), max_length or len(item))
        else:
            return None
    return total
