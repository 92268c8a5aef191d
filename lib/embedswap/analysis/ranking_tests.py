"""Is a ranking delta more than query-to-query noise? A paired test per metric on the per-query values.

For each candidate variant (address swap only, through the shim) and each metric (nDCG@10, recall@5, MRR@10), the
per-query differences ``variant - legacy`` over the judged queries get:

- a **paired randomization test** (sign flips of the per-query differences, scipy's ``permutation_test`` with
  ``permutation_type="samples"``; exact when 2**n is at most :data:`PERMUTATIONS`, else that many seeded flips):
  the two-sided p-value of the mean difference;
- a **95 % bootstrap interval** of the mean difference (scipy's ``bootstrap``, BCa; a constant difference has
  no spread, its interval is the value itself);
- the verdict ``differs`` when p < :data:`ALPHA`, else ``no_difference`` (never "better" or "worse": the sign is
  stated, the verdict only says whether it exceeds the noise);
- the **minimum detectable difference**: the mean difference this many queries would detect with 80 % power at
  alpha 0.05, ``(t_0.975 + t_0.80) * sd / sqrt(n)`` with the observed spread of the differences (None when every
  query moved by the same amount: then any consistent change is detected).
"""

from __future__ import annotations

import math
import numpy as np

from embedswap.summary.types_decisions import PairedTest
from embedswap.summary.types_sections import RankingRun

ALPHA = 0.05
POWER = 0.80
PERMUTATIONS = 20000
SEED = 17
METRICS = ("ndcg_at_10", "recall_at_5", "mrr_at_10")


def paired_values(legacy: RankingRun | None, variant: RankingRun | None,
                  metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The metric of the queries both sides judged, in legacy's query order: (legacy, variant)."""
    left = legacy.per_query if legacy is not None else {}
    right = variant.per_query if variant is not None else {}
    pairs = [(getattr(row, metric), getattr(right[q], metric) if q in right else None) for q, row in left.items()]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    return np.array([a for a, _ in pairs], dtype=float), np.array([b for _, b in pairs], dtype=float)


def detectable(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The mean paired difference n queries detect with ``power`` (t approximation); None for n < 2 or sd 0."""
    from scipy import stats

    if n < 2 or not sd > 0:
        return None
    return float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) * sd / math.sqrt(n))


def paired_test(reference: np.ndarray, other: np.ndarray, seed: int = SEED) -> PairedTest:
    """``{delta, low, high, p_value, n, verdict, detectable, sd}`` for ``other - reference`` per query."""
    from scipy import stats

    diff = other - reference
    n = len(diff)
    if n == 0:
        return PairedTest(delta=None, low=None, high=None, p_value=None, n=0, verdict="missing", detectable=None,
                          sd=None)
    delta = float(diff.mean())
    constant = n < 2 or bool(np.allclose(diff, diff[0]))
    # a constant shift (MRR 1 -> 1/3 on every query) has sd 0, not float residue that would claim "detects 0.000"
    sd = 0.0 if constant else float(diff.std(ddof=1))
    if constant:
        p = 1.0 if abs(delta) < 1e-12 else 2.0 ** (1 - n) if n > 1 else 1.0  # only the all-same-sign flips
        low = high = delta
    else:
        rng = np.random.default_rng(seed)
        test = stats.permutation_test((other, reference), lambda x, y, axis: np.mean(x - y, axis=axis),
                                      permutation_type="samples", n_resamples=PERMUTATIONS, vectorized=True,
                                      alternative="two-sided", random_state=rng)
        p = float(test.pvalue)
        boot = stats.bootstrap((diff,), np.mean, confidence_level=0.95, method="BCa", n_resamples=5000,
                               random_state=np.random.default_rng(seed))
        low, high = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
        if not (math.isfinite(low) and math.isfinite(high)):  # BCa degenerates on a few distinct values
            boot = stats.bootstrap((diff,), np.mean, confidence_level=0.95, method="percentile", n_resamples=5000,
                                   random_state=np.random.default_rng(seed))
            low, high = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
    return PairedTest(delta=delta, low=low, high=high, p_value=p, n=n,
                      verdict="differs" if p < ALPHA else "no_difference", detectable=detectable(sd, n), sd=sd)


def variant_tests(legacy: RankingRun | None, variant: RankingRun | None) -> dict[str, PairedTest]:
    """metric -> paired test of one variant against legacy (empty when either side has no per-query values)."""
    out: dict[str, PairedTest] = {}
    for metric in METRICS:
        reference, other = paired_values(legacy, variant, metric)
        if len(reference):
            out[metric] = paired_test(reference, other)
    return out
