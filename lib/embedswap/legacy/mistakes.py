"""Fault emulation for the diagnosis zoo: the legacy server started with ``--emulate-mistake NAME`` makes ONE
known pipeline mistake on purpose, so that a test can run a server that reproduces a cause through the whole kit.

Each name is a mistake reported on vLLM's / sentence-transformers' trackers: a ``2_Dense`` projection
not loaded (vLLM #39579), the pooling parsed as another mode (vLLM #45995), ``Normalize`` dropped or added, the
end token (BERT ``[SEP]``, Qwen3 ``<|endoftext|>``) dropped before pooling (Qwen3-Embedding #54/#122), the query
prompt put before documents too. Truncation and dtype need no emulation: ``--max-input-tokens`` and ``--dtype``
are ordinary options. The default ``none`` is the faithful server; nothing else in the kit sets this option.
"""

from __future__ import annotations

from typing import Any

MISTAKES: tuple[str, ...] = (
    "none",
    "ignore-dense",  # skip the model's Dense modules (vectors of the Transformer's width)
    "skip-normalize",  # leave out the model's Normalize
    "add-normalize",  # L2-normalise a model that has no Normalize
    "drop-end-token",  # remove the last token the tokenizer appends to every text ([SEP], <|endoftext|>)
    "prompt-on-documents",  # put the query prompt before every input, documents included
    "pooling-mean", "pooling-cls", "pooling-lasttoken", "pooling-max",  # pool with another mode than the model's
)


def apply_to_pipeline(embedder: Any, mistake: str) -> None:
    """Change the loaded :class:`~embedswap.legacy.server.Embedder`'s output side (pooling, Dense, Normalize)."""
    if mistake not in MISTAKES:
        raise ValueError(f"emulate_mistake must be one of {MISTAKES}, not {mistake!r}")
    if mistake == "ignore-dense":
        if not embedder.dense:
            raise ValueError("emulate_mistake 'ignore-dense': the model has no Dense module to ignore")
        embedder.dense = []
    elif mistake == "skip-normalize":
        embedder.normalize = False
    elif mistake == "add-normalize":
        embedder.normalize = True
    elif mistake.startswith("pooling-"):
        embedder.pooling = mistake.removeprefix("pooling-")


def drop_end_token(rows: list[list[int]]) -> list[list[int]]:
    """Token ids without their last token (kept when it is the only one)."""
    return [row[:-1] or row for row in rows]
