"""Parity: every backend's vectors against a golden reference, with a pass/fail gate per modality.

The code lives in smaller modules; this one keeps the import path ``embedswap.parity`` that notebooks, scripts and
other modules use:

- :mod:`embedswap.parity_gate`: the golden reference (fp32 sentence-transformers on the CPU), the thresholds, the
  gate (:func:`gate`, :func:`gate_by_modality`) and its rows;
- :mod:`embedswap.parity_backends`: :class:`OpenAIBackend` (a running ``/v1/embeddings`` server, batches of 8),
  :class:`TransformersBackend` (plain transformers with the model's own pooling: the legacy server's way);
- :mod:`embedswap.parity_vllm`: :class:`VllmOfflineBackend`, vLLM's offline pooling runner in the engine
  environment, and :func:`run_vllm_jobs` (several jobs in one engine start);
- :mod:`embedswap.parity_matrix` / :mod:`embedswap.parity_checks`: article 003's matrix (batch invariance, long
  context with chunked prefill on and off, tensor parallel, cold start).
"""

from __future__ import annotations

from embedswap.parity_backends import (
    BackendResult,
    OpenAIBackend,
    ParityBackend,
    TransformersBackend,
    backend_from_spec,
    measure_backend,
)
from embedswap.parity_gate import (
    DEFAULT_BATCH_SIZE,
    MODALITIES,
    NORM_RELATIVE_TOLERANCE,
    TEXT,
    TEXT_IMAGE,
    WORST_LISTED,
    ParityBackendError,
    ParityRow,
    gate,
    gate_by_modality,
    golden_reference,
    record_modalities,
    threshold_for,
    thresholds_from,
)
from embedswap.parity_gate import _cause, _finite_or_none, _norm_cause, _shape_failure  # noqa: F401 (old private names)
from embedswap.parity_vllm import VllmOfflineBackend, run_vllm_jobs

__all__ = [
    "BackendResult", "DEFAULT_BATCH_SIZE", "MODALITIES", "NORM_RELATIVE_TOLERANCE", "OpenAIBackend", "ParityBackend",
    "ParityBackendError", "ParityRow", "TEXT", "TEXT_IMAGE", "TransformersBackend", "VllmOfflineBackend",
    "WORST_LISTED", "backend_from_spec", "gate", "gate_by_modality", "golden_reference", "measure_backend",
    "record_modalities", "run_vllm_jobs", "threshold_for", "thresholds_from",
]
