"""Latency verdicts in the kit's vocabulary (:mod:`embedswap.stats.equivalence`): a candidate/legacy ratio decided
on the log scale against a ratio margin, and the error gate that fails a point whose error rate exceeds its margin
(named by status, with the Retry-After a server sent) before any ratio is read from its few answered requests."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from embedswap.stats.equivalence import ALPHA, POWER, Verdict, decide_interval


def log_ratio_interval(candidate: Sequence[float] | np.ndarray, legacy: Sequence[float] | np.ndarray,
                       alpha: float = ALPHA) -> tuple[float, float, float, int]:
    """(ratio, low, high, n): the candidate/legacy ratio of geometric means with its (1 - 2 alpha) Welch t
    interval on the log values; n is the smaller side (what the interval's width scales with)."""
    from scipy import stats

    a = np.log(np.asarray(candidate, dtype=np.float64))
    b = np.log(np.asarray(legacy, dtype=np.float64))
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    diff = float(a.mean() - b.mean())
    tc = float(stats.t.ppf(1 - alpha, df))
    return math.exp(diff), math.exp(diff - tc * se), math.exp(diff + tc * se), min(len(a), len(b))


def ratio_verdict(estimate: float | None, low: float | None, high: float | None, margin: float, *,
                  n: int | None = None, confidence: float | None = None, lower_is_better: bool = True,
                  faster_is_harmless: bool = True, errors: Verdict | None = None, alpha: float = ALPHA,
                  power: float = POWER) -> Verdict:
    """Verdict on a candidate/legacy ratio (latency p50/p99: ``lower_is_better``; docs/s: not) from its interval
    at ``confidence`` (default 1 - 2 alpha; the 95 % of :mod:`embedswap.analysis.intervals` is rescaled).
    ``margin`` is a ratio > 1, symmetric on the log scale. ``errors`` (:func:`error_gate`) that ``failed`` decide
    the point: no ratio is read from the requests that survived. ``n`` (requests per side) gives ``n_needed``."""
    from scipy import stats

    if not margin > 1:
        raise ValueError("a ratio margin must be > 1")
    if errors is not None and errors.code == "failed":
        return errors.but(params={**errors.params, "ratio": estimate})
    extra = {"error_rate": errors.estimate, "errors": errors.code} if errors is not None else {}
    if estimate is None or low is None or high is None or not (0 < low <= estimate <= high):
        return Verdict(code="inconclusive", estimate=estimate, low=low, high=high, margin=margin, n=n, scale="ratio",
                       reason="missing_interval", params=extra)
    conf = 1 - 2 * alpha if confidence is None else confidence
    z_have, z_want = float(stats.norm.ppf((1 + conf) / 2)), float(stats.norm.ppf(1 - alpha))
    le, m = math.log(estimate), math.log(margin)
    ll = le - (le - math.log(low)) * z_want / z_have
    lh = le + (math.log(high) - le) * z_want / z_have
    se = (lh - ll) / (2 * z_want)
    if se > 0:
        p_low, p_up = float(stats.norm.sf((le + m) / se)), float(stats.norm.cdf((le - m) / se))
        p_diff = float(2 * stats.norm.sf(abs(le) / se))
    else:
        p_low, p_up, p_diff = float(le <= -m), float(le >= m), 0.0 if le != 0 else 1.0
    sd_unit = se * math.sqrt(n) if n and n >= 2 else None
    got = decide_interval(le, ll, lh, m, n=n or 0, sd_unit=sd_unit, p_low=p_low, p_up=p_up, p_diff=p_diff,
                  higher_is_better=not lower_is_better, better_is_harmless=faster_is_harmless,
                  names=("slower", "faster"), alpha=alpha, power=power)
    return Verdict(code=got["code"], direction=got["direction"], estimate=estimate, low=math.exp(ll),
                   high=math.exp(lh), margin=margin, n=n, n_needed=got["n_needed"],
                   p_equivalence=got.get("p_equivalence"), p_difference=p_diff, scale="ratio", reason=got["reason"],
                   params={**got["params"], **extra})


# --- errors ---------------------------------------------------------------------------------------------------

def classify_status(status: int | str) -> str:
    """``ok`` (2xx), ``429``, ``5xx``, ``timeout``, another 4xx by its code, or the error's own name."""
    text = str(status).strip().lower()
    if text in ("ok", "success") or (text.isdigit() and text.startswith("2") and len(text) == 3):
        return "ok"
    if text.isdigit() and len(text) == 3:
        return "5xx" if text.startswith("5") else text
    if "timeout" in text or "timed out" in text:
        return "timeout"
    return text or "unknown"


def error_gate(outcomes: Mapping[int | str, int], margin: float, *,
               retry_after: Mapping[int | str, Any] | None = None, alpha: float = ALPHA,
               power: float = POWER) -> Verdict:
    """Requests by status (``{200: 44, 429: 76}``, ``"timeout"``, ``"connection"``) against the error-rate
    margin: ``failed`` when the observed rate exceeds it, naming the statuses (most frequent first) and the
    Retry-After each sent; ``non_inferior`` when the (1 - 2 alpha) Clopper-Pearson upper bound is within it;
    else ``inconclusive`` with the requests that would show it."""
    from scipy import stats

    counts: dict[str, int] = {}
    for status, count in outcomes.items():
        key = classify_status(status)
        counts[key] = counts.get(key, 0) + int(count)
    total = sum(counts.values())
    errors = {k: v for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if k != "ok" and v}
    k = sum(errors.values())
    waits = {classify_status(s): v for s, v in (retry_after or {}).items() if v is not None}
    params: dict[str, Any] = {"statuses": errors, "errors": k, "requests": total}
    if waits:
        params["retry_after"] = waits
    if total == 0:
        return Verdict(code="inconclusive", margin=margin, n=0, scale="rate", reason="no_requests", params=params)
    ci = stats.binomtest(k, total, margin).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    rate = k / total
    common = dict(estimate=rate, low=float(ci.low), high=float(ci.high), margin=margin, n=total, scale="rate")
    p_excess = float(stats.binomtest(k, total, margin, alternative="greater").pvalue)
    p_within = float(stats.binomtest(k, total, margin, alternative="less").pvalue) if margin > 0 else 1.0
    if rate > margin:
        return Verdict(code="failed", p_equivalence=p_within, p_difference=p_excess, reason="error_rate_above_margin",
                       params=params, **common)
    if ci.high <= margin:
        return Verdict(code="non_inferior", p_equivalence=p_within, p_difference=p_excess,
                       reason="error_rate_within_margin", params=params, **common)
    # requests that would bound the rate at the margin: zero errors need log(alpha)/log(1-margin); a rate p > 0,
    # the normal approximation of the one-sided test
    z = float(stats.norm.ppf(1 - alpha) + stats.norm.ppf(power))
    need = math.ceil(math.log(alpha) / math.log(1 - margin)) if margin > 0 else None
    if need is not None and rate > 0:
        need = max(need, math.ceil(z ** 2 * rate * (1 - rate) / (margin - rate) ** 2)) if rate < margin else None
    return Verdict(code="inconclusive", p_equivalence=p_within, p_difference=p_excess, n_needed=need,
                   reason="error_rate_bound_above_margin", params=params, **common)


# --- several comparisons --------------------------------------------------------------------------------------
