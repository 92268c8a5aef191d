"""The parity gate: the golden fp32 reference, the thresholds per modality, one row per backend and modality.

The golden reference is the model run in fp32 on the CPU through sentence-transformers, with the model's own
pooling and normalisation: an implementation independent of both the legacy server and the engines. A backend
passes a modality when its *lowest* cosine reaches that modality's threshold (article 003: text >= 0.999,
text+image >= 0.995). A NaN or infinite vector fails.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.reasons import explain
from embedswap.stats.vectors import rowwise_cosine

WORST_LISTED = 5
TEXT = "text"
TEXT_IMAGE = "text+image"
MODALITIES: tuple[str, ...] = (TEXT, TEXT_IMAGE)
DEFAULT_BATCH_SIZE = 8


class ParityBackendError(RuntimeError):
    """A backend could not produce vectors (no CUDA, engine failed, a request failed); the message says why."""


# ---------------------------------------------------------------------------------------------------------------------
# The golden reference


def golden_reference(model_path: str, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """fp32 CPU vectors for ``texts``, normalised as the model's own modules say."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(model_path, device="cpu", model_kwargs={"torch_dtype": torch.float32})
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


# ---------------------------------------------------------------------------------------------------------------------
# The gate


def threshold_for(modality: str, text_threshold: float = 0.999, multimodal_threshold: float = 0.995) -> float:
    """The pass threshold of a modality ("text" or "text+image")."""
    if modality == TEXT:
        return float(text_threshold)
    if modality == TEXT_IMAGE:
        return float(multimodal_threshold)
    raise ValueError(f"unknown modality {modality!r} (expected one of {', '.join(MODALITIES)})")


def thresholds_from(parity_config: Any) -> dict[str, float]:
    """{modality: threshold} from an experiment's ``parity`` section (embedswap.config.ParityConfig)."""
    return {TEXT: float(parity_config.text_threshold), TEXT_IMAGE: float(parity_config.multimodal_threshold)}


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@dataclass
class ParityRow:
    backend: str
    dtype: str
    device: str
    modality: str
    n: int
    cos_min: float | None  # None when some vector was NaN/inf (then the row fails)
    cos_median: float | None
    cos_max: float | None
    threshold: float
    passed: bool
    worst: list[dict[str, Any]]
    non_finite: int = 0  # vectors whose cosine could not be computed (NaN/inf values, zero vector)
    # why the row fails without (or beside) a cosine: another dimension or another norm than the reference
    why: str | None = None
    reason: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["pass"] = row.pop("passed")
        return row


def gate(backend: str, dtype: str, device: str, modality: str, reference: np.ndarray, vectors: np.ndarray,
         ids: list[str], threshold: float | None = None, thresholds: dict[str, float] | None = None) -> ParityRow:
    """Cosine of each vector to its reference; the backend passes when the lowest cosine reaches the threshold.

    Give ``threshold`` directly, or ``thresholds`` ({modality: threshold}, e.g. :func:`thresholds_from`) to take
    the one of ``modality``. A NaN/inf vector (or a zero vector) counts as failing; its cosine is listed as None.
    """
    if threshold is None:
        if thresholds is None:
            raise ValueError("give threshold or thresholds")
        if modality not in thresholds:
            raise ValueError(f"no threshold for modality {modality!r} (have {sorted(thresholds)})")
        threshold = thresholds[modality]
    threshold_for(modality)  # validates the modality name
    reference = np.asarray(reference)
    vectors = np.asarray(vectors)
    if len(ids) != len(reference):
        raise ValueError(f"{len(ids)} ids for {len(reference)} reference vectors")
    if reference.ndim == 2 and vectors.ndim == 2 and len(vectors) == len(reference) \
            and vectors.shape[1] != reference.shape[1]:
        return _shape_failure(backend, dtype, device, modality, len(ids), float(threshold), vectors, reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = rowwise_cosine(reference, vectors)
    finite = np.isfinite(cos)
    bad = int((~finite).sum())
    # broken vectors first, then the lowest cosines
    order = np.argsort(np.where(finite, cos, -np.inf), kind="stable")[:WORST_LISTED]
    cause = (_cosine_cause(backend, cos, ids, float(threshold)) or _norm_cause(backend, reference, vectors))
    return ParityRow(
        backend=backend,
        dtype=dtype,
        device=device,
        modality=modality,
        n=len(cos),
        cos_min=_finite_or_none(cos.min()) if len(cos) else None,
        cos_median=_finite_or_none(np.median(cos)) if len(cos) else None,
        cos_max=_finite_or_none(cos.max()) if len(cos) else None,
        threshold=float(threshold),
        # NaN compares False: a broken vector fails; so does another norm than the reference's
        passed=bool(len(cos)) and bool(np.all(cos >= threshold)) and not cause,
        worst=[{"id": ids[i], "cosine": _finite_or_none(cos[i])} for i in order],
        non_finite=bad,
        **cause,
    )


# Norms may differ by the rounding of another dtype; a Normalize module on or off changes them by far more.
NORM_RELATIVE_TOLERANCE = 1e-2


def _cause(code: str, **params: Any) -> dict[str, Any]:
    return {"why": explain(code, **params), "reason": {"code": code, "params": params}}


def _cosine_cause(backend: str, cos: np.ndarray, ids: list[str], threshold: float) -> dict[str, Any]:
    """A cause when finite cosines fall below the threshold: the directions differ. A norm is never named then: a
    length cannot move a cosine, so a norm that also differs explains nothing of this failure."""
    finite = np.isfinite(cos)
    below = finite & (cos < threshold)
    if not below.any():
        return {}
    worst = int(np.argmin(np.where(finite, cos, np.inf)))
    return _cause("parity_cosine_below", name=backend, cosine=f"{float(cos[worst]):.4f}", worst=ids[worst],
                  below=int(below.sum()), n=len(cos), threshold=f"{threshold:g}")


def _norm_cause(backend: str, reference: np.ndarray, vectors: np.ndarray) -> dict[str, Any]:
    """A cause when the median norm differs from the reference's beyond rounding (cosine alone cannot see it)."""
    if not len(reference) or not len(vectors):  # no median to compare (numpy warns on an empty one)
        return {}
    with np.errstate(invalid="ignore"):
        ref = float(np.median(np.linalg.norm(np.asarray(reference, dtype=np.float64), axis=1)))
        got = float(np.median(np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)))
    if not (math.isfinite(ref) and math.isfinite(got)) or abs(got - ref) <= NORM_RELATIVE_TOLERANCE * max(ref, 1e-12):
        return {}
    return _cause("parity_norm_mismatch", name=backend, norm=f"{got:.4g}", reference=f"{ref:.4g}")


def _shape_failure(backend: str, dtype: str, device: str, modality: str, n: int, threshold: float,
                   vectors: np.ndarray, reference: np.ndarray) -> ParityRow:
    """Vectors of another dimension fail the gate with that cause: they cannot be the model's vectors."""
    return ParityRow(backend=backend, dtype=dtype, device=device, modality=modality, n=n, cos_min=None,
                     cos_median=None, cos_max=None, threshold=threshold, passed=False, worst=[],
                     **_cause("parity_dimension_mismatch", name=backend, dim=int(vectors.shape[1]),
                              reference=int(reference.shape[1])))


def gate_by_modality(backend: str, dtype: str, device: str, reference: np.ndarray, vectors: np.ndarray,
                     ids: list[str], modalities: list[str], thresholds: dict[str, float]) -> list[ParityRow]:
    """One row per modality present in ``modalities`` (one entry per record), each with its own threshold."""
    if len(modalities) != len(ids):
        raise ValueError(f"{len(modalities)} modalities for {len(ids)} records")
    unknown = sorted(set(modalities) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality {unknown[0]!r} (expected one of {', '.join(MODALITIES)})")
    rows = []
    for modality in MODALITIES:
        index = [i for i, m in enumerate(modalities) if m == modality]
        if not index:
            continue
        rows.append(gate(backend, dtype, device, modality, np.asarray(reference)[index], np.asarray(vectors)[index],
                         [ids[i] for i in index], thresholds=thresholds))
    return rows


def record_modalities(documents_path: str | Path) -> dict[str, str]:
    """{record id: "text" or "text+image"} from a workload JSONL; a record with an ``image`` field is text+image.

    embedswap.measure.workload keeps only the text of a record; this reads the same file for the image field.
    """
    out: dict[str, str] = {}
    with Path(documents_path).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            if isinstance(record, dict) and "id" in record:
                out[str(record["id"])] = TEXT_IMAGE if record.get("image") else TEXT
    return out
