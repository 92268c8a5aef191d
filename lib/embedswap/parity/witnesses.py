"""Several witnesses for step 05's reference: the gate trusts what independent implementations agree on.

One golden reference can be the broken side (sentence-transformers on an older transformers ran a model with causal
attention; a reference that read hidden states before the final norm; a pooling that reads a fixed position picks up
padding in a batch, so a batched reference differs from itself run one text at a time). So the model is run by
independent implementations, each one text at a time and in padded batches:

- ``sentence-transformers``: the library's own ``encode`` (the kit's former single golden reference, batched);
- ``transformers``: the kit's transformers backend (``parity.backends.TransformersBackend``: AutoModel and the
  model's pooling, with the padding side and attention mask the pooling needs);
- ``vllm-transformers``: vLLM's offline pooling runner on the model's transformers implementation
  (``model_impl="transformers"``) in the engine environment, batched only (vLLM schedules the texts together
  whatever the call size). Another engine's reading of the same weights, without vLLM's own model code; one engine
  start (~15-20 s on 2 CPU cores, MiniLM). ``parity.engine_witness`` decides whether it runs.

Their pairwise agreement (lowest cosine over the sample) is a small matrix. The consensus is the largest group of
witnesses that all agree at the gate's threshold; a witness outside it is named with its reason and left out: it
differs from itself across batching (its vectors depend on batch mates: padding side, a pooling at a fixed
position, an attention mask ignored) or from the others. The gate compares every server with a consensus witness.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

BATCH = 32
# the witness the gate prefers as its reference, in order, among those of the consensus
PREFERENCE = ("sentence-transformers batch", "sentence-transformers alone", "transformers alone",
              "transformers batch")


@dataclass(frozen=True)
class Witness:
    """One implementation run one way: ``batch`` 1 is one text at a time."""

    implementation: str
    batch: int

    @property
    def name(self) -> str:
        return f"{self.implementation} {'alone' if self.batch == 1 else 'batch'}"


WITNESSES = [Witness("sentence-transformers", BATCH), Witness("sentence-transformers", 1),
             Witness("transformers", 1), Witness("transformers", BATCH)]
ENGINE_WITNESS = Witness("vllm-transformers", BATCH)


def _sentence_transformers(model_path: str) -> Callable[[list[str], int], np.ndarray]:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(model_path, device="cpu", model_kwargs={"torch_dtype": torch.float32})

    def embed(texts: list[str], batch: int) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=batch, convert_to_numpy=True, show_progress_bar=False),
                          dtype=np.float32)

    return embed


def _transformers(model_path: str) -> Callable[[list[str], int], np.ndarray]:
    from embedswap.parity.backends import TransformersBackend

    backend = TransformersBackend(model_path, name="transformers")

    def embed(texts: list[str], batch: int) -> np.ndarray:
        backend.batch_size = batch
        return backend.embed(texts)

    return embed


def _vllm_transformers(model_path: str) -> Callable[[list[str], int], np.ndarray]:
    from embedswap.model_limits import token_limit
    from embedswap.parity.vllm import VllmOfflineBackend

    # the engine's context is the model's own limit, as sentence-transformers truncates at it
    backend = VllmOfflineBackend(model_path, "float32", name="vllm-transformers", max_model_len=token_limit(model_path),
                                 engine_kwargs={"model_impl": "transformers"}, timeout_s=900)

    def embed(texts: list[str], batch: int) -> np.ndarray:
        backend.batch_size = batch
        return backend.embed(texts)

    return embed


IMPLEMENTATIONS: dict[str, Callable[[str], Callable[[list[str], int], np.ndarray]]] = {
    "sentence-transformers": _sentence_transformers, "transformers": _transformers,
    "vllm-transformers": _vllm_transformers}


def witness_vectors(model_path: str, texts: list[str],
                    witnesses: list[Witness] = WITNESSES) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Each witness' vectors of ``texts``, and the error of each witness that could not run."""
    vectors: dict[str, np.ndarray] = {}
    errors: dict[str, str] = {}
    loaded: dict[str, Callable[[list[str], int], np.ndarray] | Exception] = {}
    for witness in witnesses:
        if witness.implementation not in loaded:
            try:
                loaded[witness.implementation] = IMPLEMENTATIONS[witness.implementation](model_path)
            except Exception as exc:  # noqa: BLE001 - a witness that cannot load is named, not fatal
                loaded[witness.implementation] = exc
        embed = loaded[witness.implementation]
        try:
            if isinstance(embed, Exception):
                raise embed
            vectors[witness.name] = embed(texts, witness.batch)
        except Exception as exc:  # noqa: BLE001
            errors[witness.name] = f"{type(exc).__name__}: {exc}"[:300]
    return vectors, errors


def _min_cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.shape != b.shape:
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    cos = (a64 * b64).sum(1) / np.maximum(np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1), 1e-30)
    return float(cos.min()) if np.all(np.isfinite(cos)) else None


def agreement(vectors: dict[str, np.ndarray], threshold: float,
              errors: dict[str, str] | None = None) -> dict[str, Any]:
    """The pairwise matrix, the consensus, the witnesses left out (with why) and the one the gate uses."""
    names = list(vectors)
    pairs = [{"a": a, "b": b, "cos_min": _min_cosine(vectors[a], vectors[b])}
             for a, b in itertools.combinations(names, 2)]
    agree = {(p["a"], p["b"]) for p in pairs if p["cos_min"] is not None and p["cos_min"] >= threshold}

    def agrees(a: str, b: str) -> bool:
        return (a, b) in agree or (b, a) in agree

    consensus: list[str] = []
    for size in range(len(names), 0, -1):  # the largest group agreeing pairwise (at most a handful of witnesses)
        groups = [g for g in itertools.combinations(names, size)
                  if all(agrees(a, b) for a, b in itertools.combinations(g, 2))]
        if groups:
            consensus = list(max(groups, key=lambda g: sum(n in PREFERENCE[:2] for n in g)))
            break
    if len(consensus) < 2 and len(names) > 1:
        consensus = []  # no two witnesses agree: there is no consensus to gate against
    left_out = []
    for name in names:
        if name in consensus:
            continue
        sibling = next((n for n in names if n != name and n.split(" ")[0] == name.split(" ")[0]), None)
        if sibling is not None and not agrees(name, sibling):
            code = "witness_batch_dependent"
            params = {"name": name, "other": sibling,
                      "cos_min": _fmt(_min_cosine(vectors[name], vectors[sibling]))}
        else:
            code = "witness_disagrees"
            closest = max((p["cos_min"] for p in pairs if name in (p["a"], p["b"]) and p["cos_min"] is not None),
                          default=None)
            params = {"name": name, "cos_min": _fmt(closest)}
        left_out.append({"name": name, "code": code, "params": params})
    for name, error in (errors or {}).items():
        left_out.append({"name": name, "code": "witness_failed", "params": {"name": name, "error": error}})
    reference = next((n for n in PREFERENCE if n in consensus), consensus[0] if consensus else None)
    return {"witnesses": names + list(errors or {}), "pairs": pairs, "consensus": consensus,
            "left_out": left_out, "reference": reference, "threshold": threshold,
            "all_agree": bool(consensus) and len(consensus) == len(names) and not errors}


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6f}"
