"""vectors.py's chunked figures (issue 20): the same values as the whole-array formulas across a chunk boundary,
and no answer at all gives None figures instead of an error (mutation run on the merged module, 2026-12-02)."""
from __future__ import annotations

import numpy as np

from embedswap.stats.vectors import ROW_CHUNK, norms, rowwise_cosine


def test_norms_of_no_vectors_are_none() -> None:
    assert norms(np.zeros((0, 4), dtype=np.float32)) == {"first": None, "min": None, "median": None, "max": None,
                                                         "not_unit_length": []}


def test_chunked_figures_equal_the_whole_array_formulas_across_a_chunk_boundary() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=(ROW_CHUNK + 3, 4))
    b = a + rng.normal(scale=0.1, size=a.shape)
    a[ROW_CHUNK + 1] *= 2.0  # one row past the boundary is not unit length
    whole = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(rowwise_cosine(a, b), whole, rtol=0, atol=1e-15)
    unit = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit[ROW_CHUNK + 1] *= 2.0
    figures = norms(unit)
    assert figures["not_unit_length"] == [ROW_CHUNK + 1]
    assert figures["first"] == 1.0 or abs(figures["first"] - 1.0) < 1e-12
    assert abs(figures["max"] - 2.0) < 1e-12
