"""Maps from the candidate's vector space into the legacy one (Drift-Adapter, EMNLP 2025): fitted on document pairs,
applied to the candidate's query vectors so that they search the legacy index.

- ``orthogonal``: :func:`embedswap.index.adapter.fit` (Procrustes; same dimension only; keeps lengths and angles);
- ``affine``: least squares with a bias, ridge-regularised (:class:`sklearn.linear_model.RidgeCV`, the penalty
  chosen by its efficient leave-one-out over :data:`RIDGE_ALPHAS` on the training pairs only). It works across
  dimensions (384 -> 768) and can bend the space where a rotation cannot; with few pairs per dimension the penalty
  keeps it from fitting noise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.linear_model import RidgeCV

from embedswap.index.adapter import _unit, fit

MapKind = Literal["orthogonal", "affine"]
# the ridge penalties tried (sklearn's efficient leave-one-out picks one per fit): from almost plain least squares
# to a map pulled hard towards zero, on unit-length rows
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


@dataclass(frozen=True)
class FittedMap:
    """A fitted map and what it cost: ``apply`` maps (n, d_candidate) query vectors to (n, d_legacy)."""
    kind: MapKind
    weight: np.ndarray  # (d_candidate, d_legacy)
    bias: np.ndarray  # (d_legacy,): zeros for the orthogonal map
    fit_s: float
    alpha: float | None = None  # the ridge penalty chosen (affine)

    def apply(self, queries: np.ndarray) -> np.ndarray:
        return _unit(queries) @ self.weight + self.bias

    @property
    def stored_bytes(self) -> int:
        """What the map adds to a deployment, as float32."""
        return 4 * (self.weight.size + (self.bias.size if self.kind == "affine" else 0))


def fit_map(kind: MapKind, candidate: np.ndarray, legacy: np.ndarray) -> FittedMap:
    """The ``kind`` map fitted on (candidate, legacy) document pairs, its fit timed."""
    started = time.perf_counter()
    if kind == "orthogonal":
        weight = fit(candidate, legacy)
        return FittedMap(kind, weight, np.zeros(weight.shape[1]), time.perf_counter() - started)
    model = RidgeCV(alphas=RIDGE_ALPHAS, fit_intercept=True).fit(_unit(candidate), _unit(legacy))
    return FittedMap(kind, np.asarray(model.coef_, dtype=np.float64).T, np.asarray(model.intercept_, dtype=np.float64),
                     time.perf_counter() - started, alpha=float(model.alpha_))
