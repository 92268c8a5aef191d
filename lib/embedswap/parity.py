"""Parity: every backend's vectors against a golden reference, with a pass/fail gate per modality.

The golden reference is the model run in fp32 on the CPU through sentence-transformers, with the model's own
pooling and normalisation: an implementation independent of both the legacy server and the engines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from embedswap.vectors import rowwise_cosine

WORST_LISTED = 5


def golden_reference(model_path: str, texts: list[str], batch_size: int = 8) -> np.ndarray:
    """fp32 CPU vectors for ``texts``, normalised as the model's own modules say."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(model_path, device="cpu", model_kwargs={"torch_dtype": torch.float32})
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


@dataclass
class ParityRow:
    backend: str
    dtype: str
    device: str
    modality: str
    n: int
    cos_min: float
    cos_median: float
    cos_max: float
    threshold: float
    passed: bool
    worst: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["pass"] = row.pop("passed")
        return row


def gate(backend: str, dtype: str, device: str, modality: str, reference: np.ndarray, vectors: np.ndarray,
         ids: list[str], threshold: float) -> ParityRow:
    """Cosine of each vector to its reference; the backend passes when the lowest cosine reaches the threshold."""
    cos = rowwise_cosine(reference, vectors)
    order = np.argsort(cos)[:WORST_LISTED]
    return ParityRow(
        backend=backend,
        dtype=dtype,
        device=device,
        modality=modality,
        n=len(cos),
        cos_min=float(cos.min()),
        cos_median=float(np.median(cos)),
        cos_max=float(cos.max()),
        threshold=threshold,
        passed=bool(np.all(cos >= threshold)),  # NaN (a broken vector) fails
        worst=[{"id": ids[i], "cosine": float(cos[i])} for i in order],
    )
