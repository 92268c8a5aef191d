"""Parity backends that run in the kit's own environment: a running server, or plain transformers.

Every backend has a name, the dtype and device it runs in, the modality it embeds, and
``embed(texts) -> (n, dim) float32`` (:class:`ParityBackend`). vLLM's offline runner is in
:mod:`embedswap.parity.vllm` (it runs in the engine environment).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from embedswap.parity.gate import DEFAULT_BATCH_SIZE, TEXT, ParityBackendError, threshold_for
from embedswap.parity.vllm import VllmOfflineBackend


@runtime_checkable
class ParityBackend(Protocol):
    """Anything that turns texts into vectors for the gate."""

    name: str
    dtype: str
    device: str
    modality: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, in the order of ``texts``."""
        ...


def _batches(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class OpenAIBackend:
    """A running OpenAI-compatible server (legacy, vLLM, Dynamo, external): ``/v1/embeddings`` in batches of 8."""

    def __init__(self, name: str, base_url: str, model: str, dtype: str = "server default", device: str = "server",
                 modality: str = TEXT, batch_size: int = DEFAULT_BATCH_SIZE, headers: dict[str, str] | None = None,
                 verify_tls: bool = True, timeout_s: float = 120.0) -> None:
        threshold_for(modality)
        self.name, self.dtype, self.device, self.modality = name, dtype, device, modality
        self.base_url, self.model, self.batch_size = base_url, model, batch_size
        self.headers, self.verify_tls, self.timeout_s = headers, verify_tls, timeout_s

    def embed(self, texts: list[str]) -> np.ndarray:
        from embedswap.wire.client import EmbeddingClient

        out: list[np.ndarray] = []
        with EmbeddingClient(self.base_url, self.model, timeout_s=self.timeout_s, headers=self.headers,
                             verify_tls=self.verify_tls) as client:
            for number, batch in enumerate(_batches(texts, self.batch_size)):
                answer = client.embed(batch)
                if not answer.ok or answer.vectors is None or len(answer.vectors) != len(batch):
                    raise ParityBackendError(f"{self.name}: batch {number} failed (status {answer.status}: "
                                             f"{answer.error or 'wrong number of vectors'})")
                out.append(answer.as_array())
        return np.concatenate(out).astype(np.float32)


class TransformersBackend:
    """Plain transformers: AutoModel + the model's own output modules (sentence-transformers' modules.json).

    Pooling, Dense projections and Normalize go through the legacy server's own
    :func:`embedswap.legacy.pipeline.sentence_vectors`, so this reference has the server's shape and modules; pooling
    accumulates in fp32 whatever the model's dtype. Inputs are truncated at the model's ``max_seq_length`` as
    sentence-transformers does.
    """

    def __init__(self, model_path: str, device: str = "cpu", dtype: str = "float32", name: str = "transformers",
                 modality: str = TEXT, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        from embedswap.legacy.pipeline import DTYPES

        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
        threshold_for(modality)
        self.model_path, self.name, self.dtype, self.device, self.modality = model_path, name, dtype, device, modality
        self.batch_size = batch_size
        self._loaded: tuple[Any, ...] | None = None

    def _load(self) -> tuple[Any, ...]:
        if self._loaded is not None:
            return self._loaded
        import torch
        from transformers import AutoModel, AutoTokenizer

        from embedswap.legacy.pipeline import DTYPES
        from embedswap.legacy.pipeline import _load_dense, _model_max_length, read_sentence_transformers_config
        from embedswap.models import local_model_folder, resolve_model_path

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ParityBackendError(f"{self.name}: device {self.device!r} asked for, but torch sees no CUDA device")
        path = resolve_model_path(self.model_path)
        st = read_sentence_transformers_config(local_model_folder(path))
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, dtype=DTYPES[self.dtype]).to(self.device).eval()
        padding_side = "left" if st.pooling == "lasttoken" else "right"
        tokenizer.padding_side = padding_side
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        max_length = _model_max_length(st.max_seq_length, tokenizer, model)
        dense = _load_dense(local_model_folder(path), st.dense, self.device)
        self._loaded = (tokenizer, model, st, padding_side, max_length, dense)
        return self._loaded

    def embed(self, texts: list[str]) -> np.ndarray:
        import torch

        from embedswap.legacy.pipeline import sentence_vectors

        tokenizer, model, st, padding_side, max_length, dense = self._load()
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for batch in _batches(texts, self.batch_size):
                encoded = tokenizer(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                encoded = {k: v.to(self.device) for k, v in encoded.items()}
                hidden = model(**encoded).last_hidden_state
                pooled = sentence_vectors(hidden, encoded["attention_mask"], st.pooling, padding_side, dense,
                                          st.normalize)
                out.append(pooled.float().cpu().numpy())
        return np.concatenate(out).astype(np.float32)


def backend_from_spec(spec: Any, model_path: str, log_dir: Path | None = None) -> ParityBackend:
    """The backend an experiment's ``parity.backends`` entry (embedswap.config.ParityBackendSpec) describes."""
    if spec.kind == "transformers":
        return TransformersBackend(model_path, device=spec.device, dtype=spec.dtype, name=spec.label)
    if spec.kind == "vllm-offline":
        log_path = log_dir / f"parity-{spec.label}.log" if log_dir is not None else None
        return VllmOfflineBackend(model_path, dtype=spec.dtype, name=spec.label, device=spec.device,
                                  timeout_s=spec.timeout_s, log_path=log_path)
    raise ValueError(f"unknown parity backend kind {spec.kind!r}")


@dataclass
class BackendResult:
    """What :func:`measure_backend` returns: the backend's vectors (or why there are none) and its timing."""

    name: str
    dtype: str
    device: str
    modality: str
    vectors: np.ndarray | None = None
    seconds: float | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def measure_backend(backend: ParityBackend, texts: list[str]) -> BackendResult:
    """Run one backend; a failure becomes ``error`` instead of an exception (it is a finding, and fails the gate)."""
    started = time.perf_counter()
    try:
        vectors = np.asarray(backend.embed(texts), dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - recorded, the gate then fails on it
        return BackendResult(backend.name, backend.dtype, backend.device, backend.modality,
                             error=f"{type(exc).__name__}: {exc}", seconds=round(time.perf_counter() - started, 2),
                             meta=dict(getattr(backend, "meta", {}) or {}))
    return BackendResult(backend.name, backend.dtype, backend.device, backend.modality, vectors=vectors,
                         seconds=round(time.perf_counter() - started, 2),
                         meta=dict(getattr(backend, "meta", {}) or {}))
