"""The diagnosis' truth pass through the reference cache (issue 61), and the model loaded only when it is needed.

Every run of one model on one workload diagnoses the same texts with the same model: its own pipeline's vectors (the
*truth*, :meth:`embedswap.diagnosis.hypotheses.Diagnoser.truth_vectors`) are the same computation each time, and
when every server reproduces them they are all the diagnosis needs. They are kept in
:mod:`embedswap.parity.reference_cache` (same folder, checks and switch, ``EMBEDSWAP_REFERENCE_CACHE=off``), keyed
by that module's :func:`~embedswap.parity.reference_cache.key_material` (the model's files, the exact texts, the
versions, the platform, the CPU, the threads) extended by what the truth pass depends on besides: the truth
hypothesis (pooling, Dense, normalisation, the expected prompt, as modules.json says), the padding side, the
max_seq_length, the server's batches and the diagnosis' own code. The token limit the Embedder derives from the
tokenizer or the model's config is not read for the key (that needs transformers, which imports torch: measured
~2 CPU-s of the Embedder's ~3.7): it is a function of the model's files and the kit's code, both in the key.

:class:`LazyEmbedder` is the legacy :class:`~embedswap.legacy.embedder.Embedder`, loaded on the first use of
anything but what modules.json says: a diagnosis read from the cache where every server reproduces it loads no
model and imports no torch (measured on the MiniLM run: see docs/environments.md).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from embedswap.parity import reference_cache

IMPLEMENTATION = "diagnosis-truth"
# the kit's code the truth pass runs: tokenise (Embedder's tokenizer settings), pad, forward, pool, Dense, normalise
CODE = ("diagnosis/hypotheses.py", "diagnosis/truth_cache.py", "legacy/embedder.py", "legacy/pipeline.py",
        "legacy/st_config.py", "legacy/mistakes.py", "models.py")


class LazyEmbedder:
    """The model's :class:`~embedswap.legacy.embedder.Embedder` (``loaded``: one already loaded), built on first
    use of any attribute but ``pooling``, ``normalize``, ``has_dense``, ``padding_side`` and ``max_seq_length``,
    which modules.json gives without torch."""

    def __init__(self, model: str, loaded: Any = None) -> None:
        self._spec = model
        self._embedder = loaded
        self._lock = threading.Lock()  # the documents' and the queries' Diagnosers share one
        from embedswap.legacy.st_config import read_sentence_transformers_config
        from embedswap.models import local_model_folder, resolve_model_path

        st = read_sentence_transformers_config(local_model_folder(resolve_model_path(model)))
        self.max_seq_length = st.max_seq_length
        self.pooling, self.normalize, self.has_dense = st.pooling, st.normalize, bool(st.dense)
        self.padding_side = "left" if st.pooling == "lasttoken" else "right"  # as the Embedder sets it
        if loaded is not None:  # what it runs (the same, but for a mistake emulated on purpose)
            self.pooling, self.normalize = loaded.pooling, loaded.normalize
            self.has_dense, self.padding_side = bool(loaded.dense), loaded.padding_side

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    def load(self) -> Any:
        with self._lock:
            if self._embedder is None:
                from embedswap.legacy.embedder import Embedder, LegacySettings

                self._embedder = Embedder(LegacySettings(model=self._spec, max_input_tokens=10**9))
            return self._embedder

    def __getattr__(self, name: str) -> Any:  # only for what __init__ did not set
        if name.startswith("__") or name in ("_spec", "_embedder", "_lock"):  # copy/pickle, or not yet set
            raise AttributeError(name)
        return getattr(self.load(), name)


def material(diagnoser: Any, model: str, batch: int) -> dict[str, Any]:
    """The key material of ``diagnoser``'s truth pass (``model``: the digest of the model's folder, ``batch``: the
    texts per forward pass)."""
    e = diagnoser.embedder
    extra = {"kind": IMPLEMENTATION, "truth": diagnoser.truth.as_dict(), "padding_side": e.padding_side,
             "max_seq_length": e.max_seq_length, "batches": diagnoser.batches}
    return reference_cache.key_material(model, diagnoser.texts, IMPLEMENTATION, batch, code=CODE, extra=extra)


class TruthCache:
    """One Diagnoser's truth entry: looked up once (:meth:`cached`), stored once computed (:meth:`computed`);
    ``origin`` says where the truth came from (None before it was needed), for captures/diagnosis/vectors.json."""

    def __init__(self, diagnoser: Any, batch: int) -> None:
        self._diagnoser = diagnoser
        self._batch = batch
        self._vectors: np.ndarray | None = None
        self._entry: tuple[str, dict[str, Any]] | None = None
        self.origin: dict[str, Any] | None = None

    def cached(self) -> np.ndarray | None:
        """The truth read from the cache, or None (looked up on the first call only)."""
        if self.origin is not None:
            return self._vectors
        root = reference_cache.cache_root()
        model = reference_cache.model_key(self._diagnoser.path) if root is not None else None
        if root is None or model is None:
            self.origin = reference_cache.not_cached(
                "the reference cache is off" if root is None else "no local model folder to hash")
            return None
        found = material(self._diagnoser, model, self._batch)
        self._vectors, self.origin, key = reference_cache.find(root, found)
        if self._vectors is None:
            self._entry = (key, found)
        return self._vectors

    def computed(self, vectors: np.ndarray) -> None:
        """The truth computed now: stored where the lookup missed."""
        self.cached()
        root = reference_cache.cache_root()
        if self._entry is not None and root is not None and self.origin is not None:
            reference_cache.keep(root, *self._entry, vectors, "the diagnosis' truth pass", self.origin)
            self._entry = None

    def record(self) -> dict[str, Any]:
        """Where the truth came from, and whether the model was loaded at all."""
        origin = self.origin or {"computed": "not needed"}
        return {**origin, "model_loaded": bool(self._diagnoser.embedder.loaded)}
