"""What a model folder's sentence-transformers files say (modules.json, the Pooling config, sentence_bert_config):
pooling, Dense projections, normalisation, max length and query prompt. Apart from :mod:`embedswap.legacy.pipeline`
(which re-exports it) because it needs no torch: the diagnosis keys its truth cache on it without importing torch
(~1.9 s of a cold start, ``python -X importtime``), which it needs only when it computes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from embedswap.models import sentence_transformers_prompts

PoolingMode = Literal["mean", "cls", "lasttoken", "max"]


@dataclass(frozen=True)
class SentenceTransformersConfig:
    """What the sentence-transformers files of a model folder say about turning token states into one vector."""

    pooling: PoolingMode
    normalize: bool
    max_seq_length: int | None
    query_prefix: str | None
    # sub-folders of the model's Dense modules, in modules.json order (applied after pooling, before Normalize)
    dense: tuple[str, ...] = ()


class UnsupportedModuleError(ValueError):
    """modules.json names a module the legacy server cannot run faithfully: it refuses to start."""


# sentence-transformers < 6 stores one boolean per mode; 6+ stores a single "pooling_mode" string.
_LEGACY_POOLING_KEYS: dict[str, str] = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}


def _pooling_from_config(config: dict[str, Any]) -> PoolingMode:
    mode = config.get("pooling_mode")
    if isinstance(mode, list) and len(mode) == 1:
        mode = mode[0]
    if mode is None:
        active = [name for key, name in _LEGACY_POOLING_KEYS.items() if config.get(key)]
        mode = active[0] if len(active) == 1 else active
    if mode not in PoolingMode.__args__:  # type: ignore[attr-defined]
        raise ValueError(f"pooling {mode!r} is not supported by the legacy server (mean, cls, lasttoken, max)")
    return mode  # type: ignore[return-value]


# modules.json types (last dotted part) the server runs itself: the transformer, then pool, project, normalise
_SERVED_MODULES: tuple[str, ...] = ("Transformer", "Pooling", "Dense", "Normalize")


def read_sentence_transformers_config(folder: Path | None) -> SentenceTransformersConfig:
    """Pooling, normalisation, max length and query prompt from a model folder; mean + normalize without files."""
    if folder is None or not (folder / "modules.json").is_file():
        return SentenceTransformersConfig(pooling="mean", normalize=True, max_seq_length=None, query_prefix=None)
    modules = json.loads((folder / "modules.json").read_text())
    normalize = False
    pooling: PoolingMode = "mean"
    dense: list[str] = []
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind not in _SERVED_MODULES:
            raise UnsupportedModuleError(
                f"modules.json: module {module.get('type')!r} ({module.get('path') or module.get('name')}) is not "
                f"served by the legacy server (it runs {', '.join(_SERVED_MODULES)}); refusing to serve vectors "
                "that would differ from the model's"
            )
        if normalize and kind != "Normalize":
            raise UnsupportedModuleError(f"modules.json: module {module.get('type')!r} after Normalize is not served")
        if kind == "Pooling":
            config_file = folder / module.get("path", "") / "config.json"
            if config_file.is_file():
                pooling = _pooling_from_config(json.loads(config_file.read_text()))
        elif kind == "Dense":
            dense.append(str(module.get("path", "")))
        elif kind == "Normalize":
            normalize = True
    max_seq_length = None
    bert_config = folder / "sentence_bert_config.json"
    if bert_config.is_file():
        max_seq_length = json.loads(bert_config.read_text()).get("max_seq_length")
    query_prefix = sentence_transformers_prompts(folder).get("query") or None
    return SentenceTransformersConfig(pooling, normalize, max_seq_length, query_prefix, tuple(dense))
