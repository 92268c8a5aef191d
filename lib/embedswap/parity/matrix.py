"""The parity matrix (article 003's engineering points), first part: batch invariance and the chunked-prefill rule.

Article 003 says a backend swap breaks in specific places; one is *batching*: the legacy way pads a batch to its
longest text, so the same text embedded alone and inside a batch runs through differently shaped kernels. This
module measures that: each text alone (batch 1) is the reference, the same texts in batches of 8 and 32 are the
rows. Any backend with ``embed(texts)`` and a ``batch_size`` attribute works (:class:`~embedswap.parity.
TransformersBackend` is the legacy server's padding way; the engines batch on their own).

A row that cannot run carries a reason code instead of figures (e.g. vLLM refuses chunked prefill for mean/CLS
pooling: a finding, not a failure), see :func:`chunked_prefill_refusal`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from embedswap.reasons import REASONS, explain
from embedswap.stats.vectors import rowwise_cosine
from embedswap.summary.model import Summary

BATCH_INVARIANCE = "batch_invariance"
LONG_CONTEXT = "long_context"
TENSOR_PARALLEL = "tensor_parallel"
COLD_START = "cold_start"
CHECKS: tuple[str, ...] = (BATCH_INVARIANCE, LONG_CONTEXT, TENSOR_PARALLEL, COLD_START)
DEFAULT_BATCH_SIZES: tuple[int, ...] = (8, 32)

# vLLM (0.31, vllm/config/vllm.py) keeps chunked prefill only for causal models pooled on the last token
# ("LAST"/"ALL" pooling); mean/CLS pooling needs every token's state at once, so it turns chunking off.
CHUNKED_PREFILL_POOLING = frozenset({"lasttoken"})


# What each row ran, as a code and its parameters; the report words it through the catalogues
# ([terms.parity_matrix.settings]); the English text stays in ``setting``, the row's own record.
SETTINGS = {
    "batch": "{dtype} alone vs batch {size}",
    "chunked_off": "chunked prefill off, {inputs} inputs of {tokens} tokens, max_model_len {max_model_len}",
    "chunked_on": "chunked prefill on ({chunk_tokens} tokens/step), {inputs} inputs of {tokens} tokens, "
                  "max_model_len {max_model_len}",
    "tp": "float32 TP=2 vs TP=1, VLLM_CPU_OMP_THREADS_BIND={bind}",
    "cold_start": "start to healthy, first request vs steady median",
    "cold_start_first": "start to healthy, first request",
}


class Setting(str):
    """A row's setting: the English text (a ``str``, as before) that also carries its code and parameters."""

    code: str
    params: dict[str, Any]

    def __new__(cls, code: str, **params: Any) -> Setting:
        text = super().__new__(cls, SETTINGS[code].format(**params))
        text.code, text.params = code, dict(params)
        return text

    def __deepcopy__(self, memo: dict[int, Any]) -> Setting:  # dataclasses.asdict deep-copies fields
        return self

    def __reduce__(self) -> Any:  # pickle/copy rebuild it from the code, not from the English text
        return (_rebuild_setting, (self.code, self.params))


def _rebuild_setting(code: str, params: dict[str, Any]) -> Setting:
    return Setting(code, **params)


def setting(code: str, **params: Any) -> Setting:
    return Setting(code, **params)


class BatchedBackend(Protocol):
    name: str
    dtype: str
    batch_size: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass
class MatrixRow:
    check: str
    backend: str
    setting: str
    platform: str
    n: int
    cos_min: float | None
    cos_median: float | None
    gate: float | None  # None for rows without a cosine (cold start)
    passed: bool | None  # None: the row could not run (then ``reason`` says why), or it has no gate
    reason: str | None = None  # a code of embedswap.reasons
    params: dict[str, Any] = field(default_factory=dict)  # the reason's parameters
    figures: dict[str, Any] = field(default_factory=dict)  # what else was measured (cold start; engine settings)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, the reason as the summary carries every reason: ``why`` and ``reason: {code, params}``."""
        row = asdict(self)
        row["setting"] = str(self.setting)
        if isinstance(self.setting, Setting):
            row["setting_code"], row["setting_params"] = self.setting.code, self.setting.params
        params = row.pop("params")
        row["reason"] = {"code": self.reason, "params": params} if self.reason else None
        if self.reason:
            row["why"] = explain(self.reason, **params)
        return row


def not_run(check: str, backend: str, setting: str, platform: str, gate: float | None, reason: str,
            **params: Any) -> MatrixRow:
    """A row that could not run: no figures, a reason code (embedswap.reasons) and its parameters."""
    if reason not in REASONS:
        raise ValueError(f"unknown reason code {reason!r}")
    return MatrixRow(check, backend, setting, platform, 0, None, None, None if gate is None else float(gate), None,
                     reason, dict(params))


def compare(check: str, backend: str, setting: str, platform: str, reference: np.ndarray, vectors: np.ndarray,
            gate: float) -> MatrixRow:
    """Cosine of each vector to its reference; passes when the lowest reaches ``gate``. A NaN vector fails.

    Vectors of another shape than the reference (a Dense projection applied on one side only, a missing row) fail
    the row with the reason ``parity_matrix_shape_mismatch`` and both shapes: a finding of that row, never an
    exception that would take the rest of the matrix and the gate down with it.
    """
    reference, vectors = np.asarray(reference), np.asarray(vectors)
    if reference.shape != vectors.shape:
        got, expected = "x".join(map(str, vectors.shape)), "x".join(map(str, reference.shape))
        return MatrixRow(check, backend, setting, platform, int(vectors.shape[0]) if vectors.ndim else 0, None, None,
                         float(gate), False, "parity_matrix_shape_mismatch", {"got": got, "expected": expected},
                         figures={"shape": list(vectors.shape), "reference_shape": list(reference.shape)})
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = rowwise_cosine(reference, vectors)
    finite = bool(len(cos)) and bool(np.all(np.isfinite(cos)))
    # bit-identical vectors are the finding for batching (a float64 cosine of equal vectors may be 1 - 2e-16)
    return MatrixRow(check, backend, setting, platform, len(cos),
                     float(cos.min()) if finite else None, float(np.median(cos)) if finite else None,
                     float(gate), finite and bool(np.all(cos >= gate)),
                     figures={"bit_identical": bool(np.array_equal(reference, vectors))})


def batch_invariance(backend: BatchedBackend, texts: list[str], gate: float, platform: str = "cpu",
                     sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES) -> list[MatrixRow]:
    """Each text alone against the same texts in batches of ``sizes``: one row per size.

    The backend's ``batch_size`` is set for each pass and put back afterwards. Fewer texts than a size gives a
    row with the reason ``parity_matrix_too_few_texts`` (a batch of 32 with 10 texts would not be one).
    """
    if not texts:
        raise ValueError("batch_invariance needs at least one text")
    original = backend.batch_size
    rows: list[MatrixRow] = []
    try:
        backend.batch_size = 1
        alone = backend.embed(texts)
        for size in sizes:
            setting = Setting("batch", dtype=backend.dtype, size=size)
            if len(texts) < size:
                rows.append(not_run(BATCH_INVARIANCE, backend.name, setting, platform, gate,
                                    "parity_matrix_too_few_texts"))
                continue
            backend.batch_size = size
            rows.append(compare(BATCH_INVARIANCE, backend.name, setting, platform, alone, backend.embed(texts),
                                gate))
    finally:
        backend.batch_size = original
    return rows


def chunked_prefill_refusal(pooling: str, is_causal: bool) -> str | None:
    """The reason code when vLLM turns chunked prefill off for this model, None when it keeps it."""
    if not is_causal:
        return "parity_chunked_prefill_encoder"
    if pooling not in CHUNKED_PREFILL_POOLING:
        return "parity_chunked_prefill_pooling"
    return None


def matrix_table(summary: Summary) -> Any:
    """Notebook 05's view of the matrix: one line per row (check, backend, setting, n, cos min/median, 1 - cos min,
    gate, result or why it did not run, cold-start figures), as a pandas DataFrame."""
    import pandas as pd

    matrix = summary.parity.matrix
    if matrix is None or not matrix.rows:
        return pd.DataFrame([{"parity matrix": (matrix.why if matrix is not None else None) or "not in this summary"}])
    lines = []
    for row in matrix.rows:
        lines.append({
            "check": row.check, "backend": row.backend, "setting": row.setting,
            "platform": row.platform, "n": row.n, "cos min": row.cos_min, "cos median": row.cos_median,
            "1 - cos min": None if row.cos_min is None else max(0.0, 1.0 - float(row.cos_min)), "gate": row.gate,
            "result": row.why or ("pass" if row.passed else "fail" if row.passed is False else "measured"),
            # open figures: the cold-start ones a row has (a cold_start row's; none elsewhere)
            **{k: row.figures[k] for k in ("start_s", "first_ms", "steady_median_ms", "first_over_steady")
               if k in row.figures},
        })
    return pd.DataFrame(lines).set_index(["check", "backend", "setting"])
