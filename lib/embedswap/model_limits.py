"""The model's own input limit, read from its configuration: never a fixed 512.

Three files may each state a limit and the smallest one is what every engine enforces: the model's position
embeddings (``config.json`` ``max_position_embeddings``; RoBERTa-style models spend two positions on the padding
offset), the tokenizer's ``model_max_length`` (``tokenizer_config.json``; a huge sentinel means "unset") and
sentence-transformers' ``max_seq_length`` (``sentence_bert_config.json``). vLLM derives its ``max_model_len``
from the same three and refuses a larger one ("User-specified max_model_len (512) is greater than the derived
max_model_len"), so long-input rows, probes and truncation searches are sized from :func:`model_limits`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

UNSET = 1_000_000  # transformers writes int(1e30) for "no limit"
_PADDING_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "mpnet": 2}


@dataclass(frozen=True)
class ModelLimits:
    """Each stated limit (None: not stated) and the one that applies (``tokens``: the smallest stated)."""

    positions: int | None
    tokenizer: int | None
    sentence_transformers: int | None

    @property
    def stated(self) -> list[int]:
        """Every limit stated, ascending, each once."""
        return sorted({v for v in (self.positions, self.tokenizer, self.sentence_transformers) if v})

    @property
    def tokens(self) -> int | None:
        return self.stated[0] if self.stated else None

    def record(self) -> dict[str, Any]:
        return {"positions": self.positions, "tokenizer": self.tokenizer,
                "sentence_transformers": self.sentence_transformers, "tokens": self.tokens}


def _read(folder: Path, name: str) -> dict[str, Any]:
    path = folder / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if 0 < value < UNSET else None


def model_limits(model_path: str | Path) -> ModelLimits:
    """The limits a local model folder (or a cached HF id's snapshot) states; all None where none is found."""
    from embedswap.models import local_model_folder

    folder = local_model_folder(str(model_path)) or Path(model_path)
    config = _read(folder, "config.json")
    text_config = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    positions = _positive(config.get("max_position_embeddings", text_config.get("max_position_embeddings")))
    if positions is not None:
        positions -= _PADDING_OFFSET.get(str(config.get("model_type")), 0)
    tokenizer = _positive(_read(folder, "tokenizer_config.json").get("model_max_length"))
    st = _positive(_read(folder, "sentence_bert_config.json").get("max_seq_length"))
    return ModelLimits(positions, tokenizer, st)


def token_limit(model_path: str | Path, fallback: int | None = None) -> int | None:
    """The limit that applies to ``model_path`` (``fallback`` where the folder states none)."""
    return model_limits(model_path).tokens or fallback
