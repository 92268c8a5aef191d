"""The parity matrix's batch-invariance rows and the chunked-prefill rule (embedswap.parity.matrix)."""

from __future__ import annotations

import numpy as np
import pytest

from embedswap.parity import matrix as pm
from embedswap.reasons import REASONS


class PaddingBackend:
    """Fake backend whose vectors depend on the batch it sits in (as bf16 with padding does), by ``drift``."""

    name, dtype = "fake", "bfloat16"

    def __init__(self, drift: float) -> None:
        self.batch_size, self.drift, self.sizes_seen = 4, drift, []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.sizes_seen.append(self.batch_size)
        base = np.array([[1.0, float(len(t)), 0.5] for t in texts])
        if self.batch_size > 1:
            base[:, 2] += self.drift * self.batch_size
        return base.astype(np.float32)


TEXTS = [f"text {'x' * i}" for i in range(40)]


def test_invariant_backend_passes_every_size_and_batch_size_is_restored():
    backend = PaddingBackend(drift=0.0)
    rows = pm.batch_invariance(backend, TEXTS, gate=0.999)
    assert [r.setting for r in rows] == ["bfloat16 alone vs batch 8", "bfloat16 alone vs batch 32"]
    assert all(r.passed and r.n == 40 and r.cos_min == pytest.approx(1.0) for r in rows)
    assert backend.sizes_seen == [1, 8, 32] and backend.batch_size == 4


def test_batch_dependent_vectors_fail_the_gate_with_their_cosine():
    rows = pm.batch_invariance(PaddingBackend(drift=0.05), TEXTS, gate=0.9999)
    assert [r.passed for r in rows] == [False, False]
    assert rows[1].cos_min < rows[0].cos_min < 1.0  # the bigger batch drifts more
    assert rows[0].cos_min <= rows[0].cos_median


def test_too_few_texts_is_a_reason_not_a_failure():
    rows = pm.batch_invariance(PaddingBackend(drift=0.0), TEXTS[:10], gate=0.999)
    assert rows[0].passed and rows[1].passed is None and rows[1].n == 0
    assert rows[1].reason == "parity_matrix_too_few_texts" and rows[1].reason in REASONS


def test_nan_vector_fails():
    ref = np.ones((2, 3))
    bad = ref.copy()
    bad[1, 0] = np.nan
    row = pm.compare("c", "b", "s", "cpu", ref, bad, 0.9)
    assert row.passed is False and row.cos_min is None


def test_a_row_of_another_shape_is_a_recorded_finding_not_an_exception():
    row = pm.compare("long_context", "vllm-offline", "chunked prefill off", "cpu", np.ones((3, 384)),
                     np.ones((3, 128)), 0.999)
    assert row.passed is False and row.cos_min is None and row.n == 3
    assert row.reason == "parity_matrix_shape_mismatch" and row.reason in REASONS
    stored = row.as_dict()
    assert stored["reason"] == {"code": "parity_matrix_shape_mismatch", "params": {"got": "3x128",
                                                                                  "expected": "3x384"}}
    assert stored["why"] == "the vectors have shape 3x128 where the reference has 3x384: not comparable"
    assert stored["figures"] == {"shape": [3, 128], "reference_shape": [3, 384]}


def test_empty_texts_rejected():
    with pytest.raises(ValueError, match="at least one"):
        pm.batch_invariance(PaddingBackend(0.0), [], gate=0.999)


@pytest.mark.parametrize(("pooling", "causal", "code"), [
    ("lasttoken", True, None),
    ("mean", True, "parity_chunked_prefill_pooling"),
    ("cls", True, "parity_chunked_prefill_pooling"),
    ("mean", False, "parity_chunked_prefill_encoder"),
])
def test_chunked_prefill_rule(pooling, causal, code):
    assert pm.chunked_prefill_refusal(pooling, causal) == code
    assert code is None or code in REASONS
