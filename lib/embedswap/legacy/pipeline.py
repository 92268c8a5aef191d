"""The legacy server's model pipeline as sentence-transformers writes it: ``modules.json`` read into pooling, Dense
projections and normalisation (read by :mod:`embedswap.legacy.st_config`, re-exported here), and the pooling itself
(the diagnosis and the parity backend reuse both).

A module the server cannot run faithfully (anything but Transformer, Pooling, Dense, Normalize) is refused at start
(:class:`UnsupportedModuleError`), never skipped: skipping it would serve vectors that differ from the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import PreTrainedTokenizerBase

from embedswap.legacy.st_config import (  # noqa: F401 - re-exported: the pipeline's callers import them here
    PoolingMode, SentenceTransformersConfig, UnsupportedModuleError, read_sentence_transformers_config)

# tokenizer.model_max_length is set to ~1e30 when a tokenizer has no limit; beyond this we trust the model config.
ABSURD_MODEL_MAX_LENGTH = 1_000_000


# ---------------------------------------------------------------------------------------------------------------------
# Pooling and model configuration


def pool(last_hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str, padding_side: str) -> torch.Tensor:
    """Reduce token states ``(batch, seq, hidden)`` to one vector per row ``(batch, hidden)``, in float32.

    ``attention_mask`` is 1 on real tokens. ``padding_side`` tells where the padding sits, which decides where the
    first (cls) and last (lasttoken) real token are.
    """
    hidden = last_hidden.float()  # accumulate in fp32 even for bf16/fp16 models
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    if mode == "mean":
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    if mode == "max":
        return hidden.masked_fill(mask == 0, float("-inf")).max(dim=1).values
    lengths = attention_mask.sum(dim=1).long()
    seq_len = attention_mask.shape[1]
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if mode == "cls":
        first = seq_len - lengths if padding_side == "left" else torch.zeros_like(lengths)
        return hidden[rows, first]
    if mode == "lasttoken":
        last = torch.full_like(lengths, seq_len - 1) if padding_side == "left" else lengths - 1
        return hidden[rows, last]
    raise ValueError(f"unsupported pooling mode '{mode}'")


def sentence_vectors(last_hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str, padding_side: str,
                     dense: list[torch.nn.Module], normalize: bool) -> torch.Tensor:
    """The model's output side in modules.json's order: pool, each Dense projection, then Normalize (float32).

    The one place the legacy server and every parity reference (gate witnesses, matrix rows) turn token states into
    the model's vector, so a reference can never skip a module the server applies.
    """
    vectors = pool(last_hidden, attention_mask, pooling, padding_side)
    for layer in dense:  # sentence-transformers' own Dense modules: same weights, same activation
        vectors = layer({"sentence_embedding": vectors})["sentence_embedding"].float()
    return F.normalize(vectors, p=2, dim=1) if normalize else vectors


def _model_max_length(st_max: int | None, tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module) -> int:
    if st_max:
        return int(st_max)
    if tokenizer.model_max_length and tokenizer.model_max_length < ABSURD_MODEL_MAX_LENGTH:
        return int(tokenizer.model_max_length)
    return int(model.config.max_position_embeddings)


def _load_dense(folder: Path | None, paths: tuple[str, ...], device: str) -> list[torch.nn.Module]:
    """The model's Dense projections, loaded by sentence-transformers itself (weights and activation as it runs)."""
    if not paths:
        return []
    from sentence_transformers.sentence_transformer.modules import Dense

    assert folder is not None  # paths come from the folder's modules.json
    return [Dense.load(str(folder), subfolder=sub).to(device).eval() for sub in paths]


# the dtypes the server accepts (--dtype) and what one request's embedding returns
DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class EmbedResult:
    vectors: torch.Tensor  # (n, dim) float32 on CPU
    tokens: int
