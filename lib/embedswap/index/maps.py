"""Maps from the candidate's vector space into the legacy one (Drift-Adapter, EMNLP 2025): fitted on document pairs,
applied to the candidate's query vectors so that they search the legacy index.

- ``orthogonal``: :func:`embedswap.index.adapter.fit` (Procrustes; same dimension only; keeps lengths and angles);
- ``affine``: least squares with a bias, ridge-regularised (:class:`sklearn.linear_model.RidgeCV`, the penalty
  chosen by its efficient leave-one-out over :data:`RIDGE_ALPHAS` on the training pairs only). It works across
  dimensions (384 -> 768) and can bend the space where a rotation cannot; with few pairs per dimension the penalty
  keeps it from fitting noise.
- ``mlp``: the affine map plus a small MLP on what it leaves (Drift-Adapter's residual MLP): one hidden layer of
  ``hidden`` ReLU units (:class:`sklearn.neural_network.MLPRegressor`, Adam, L2 ``MLP_ALPHA``) fitted to
  ``unit(legacy) - affine(candidate)`` and stopped early on a held-out tenth of the training pairs, so it starts
  from the affine map and only adds what the pairs support. It needs many pairs (``index.options.mlp_min_pairs``):
  a 384 -> 256 -> 384 network has ~200,000 weights.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor

from embedswap.index.adapter import _unit, fit

MapKind = Literal["orthogonal", "affine", "mlp"]
# the ridge penalties tried (sklearn's efficient leave-one-out picks one per fit): from almost plain least squares
# to a map pulled hard towards zero, on unit-length rows
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
MLP_ALPHA = 1e-4  # sklearn's default L2 penalty; early stopping is what keeps the network from the noise
# Adam's step and the epochs: at sklearn's defaults (1e-3, 200 epochs, stop after 10 without a better held-out score)
# the network had not learnt a cubed, rotated 24-dimensional space from 1,500 pairs (median cosine 0.856 against the
# affine map's 0.854); at 3e-3, up to 500 epochs and 20 of patience it reached 0.976 in 1.9 s (tests/index)
MLP_LEARNING_RATE = 3e-3
MLP_MAX_ITER = 500
MLP_PATIENCE = 20


@dataclass(frozen=True)
class FittedMap:
    """A fitted map and what it cost: ``apply`` maps (n, d_candidate) query vectors to (n, d_legacy)."""
    kind: MapKind
    weight: np.ndarray  # (d_candidate, d_legacy)
    bias: np.ndarray  # (d_legacy,): zeros for the orthogonal map
    fit_s: float
    alpha: float | None = None  # the ridge penalty chosen (affine, and the mlp's affine part)
    network: MLPRegressor | None = None  # mlp: the residual network on top of the affine map

    def apply(self, queries: np.ndarray) -> np.ndarray:
        unit = _unit(queries)
        mapped = unit @ self.weight + self.bias
        return mapped if self.network is None else mapped + self.network.predict(unit)

    @property
    def stored_bytes(self) -> int:
        """What the map adds to a deployment, as float32."""
        floats = self.weight.size + (self.bias.size if self.kind != "orthogonal" else 0)
        if self.network is not None:
            floats += sum(w.size for w in self.network.coefs_) + sum(b.size for b in self.network.intercepts_)
        return 4 * floats


def _affine(candidate: np.ndarray, legacy: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    model = RidgeCV(alphas=RIDGE_ALPHAS, fit_intercept=True).fit(candidate, legacy)
    return (np.asarray(model.coef_, dtype=np.float64).T, np.asarray(model.intercept_, dtype=np.float64),
            float(model.alpha_))


def fit_map(kind: MapKind, candidate: np.ndarray, legacy: np.ndarray, *, hidden: int = 256,
            seed: int = 0) -> FittedMap:
    """The ``kind`` map fitted on (candidate, legacy) document pairs, its fit timed (``hidden``, ``seed``: mlp)."""
    started = time.perf_counter()
    if kind == "orthogonal":
        weight = fit(candidate, legacy)
        return FittedMap(kind, weight, np.zeros(weight.shape[1]), time.perf_counter() - started)
    a, b = _unit(candidate), _unit(legacy)
    weight, bias, alpha = _affine(a, b)
    if kind == "affine":
        return FittedMap(kind, weight, bias, time.perf_counter() - started, alpha=alpha)
    network = MLPRegressor(hidden_layer_sizes=(hidden,), activation="relu", alpha=MLP_ALPHA,
                           learning_rate_init=MLP_LEARNING_RATE, max_iter=MLP_MAX_ITER, early_stopping=True,
                           validation_fraction=0.1, n_iter_no_change=MLP_PATIENCE, random_state=seed)
    with warnings.catch_warnings():  # MLP_MAX_ITER is a cap on the fit's time; the held-out score says when to stop
        warnings.simplefilter("ignore", ConvergenceWarning)
        network.fit(a, b - (a @ weight + bias))
    return FittedMap(kind, weight, bias, time.perf_counter() - started, alpha=alpha, network=network)
