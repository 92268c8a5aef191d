"""One verdict vocabulary for every comparison that decides something: equivalence and non-inferiority.

"No difference detected" is not "the same": at 24 queries a candidate losing 0.06 nDCG@10 passes a paired test.
A migration needs *no worse than a stated margin* (``decisions.margins`` in experiment.yaml,
:mod:`embedswap.config.decisions`), decided by two one-sided tests (TOST, Schuirmann 1987):

=================  ====================================================================================
``equivalent``     the (1 - 2 alpha) interval of the change lies inside ``(-margin, +margin)`` (90 % at
                   alpha 0.05: both one-sided tests reject at alpha).
``non_inferior``   only the harmful side is bounded by the margin, where the other direction is harmless
                   (a faster server, fewer errors, a higher nDCG when the caller says so); with a
                   ``direction`` (``faster``/``better``) when it is significantly better beyond the margin.
``different``      with a ``direction`` (``worse``/``better`` for quality, ``slower``/``faster`` for latency and
                   throughput): the estimate lies outside the margin *and* the change is significant (two-sided
                   test of no change at alpha, ``p_difference``; the same level as the kit's paired tests).
``inconclusive``   neither: ``n_needed`` carries the n that would decide it at 80 % power if the true change is
                   the observed one (TOST when the estimate is inside the margin, a one-sided test for a
                   difference when it is outside), and ``params["n_if_identical"]`` the n that shows equivalence
                   of truly identical servers. **Never read inconclusive as unchanged.**
``failed``         the error rate exceeds its margin: the statuses are named (``429`` with the Retry-After it
                   sent, ``5xx``, ``timeout``); no latency figure is drawn from the surviving requests.
=================  ====================================================================================

Paired quality differences (per-query nDCG@10, recall@k, top-k overlap) use the **t interval of the mean
delta**, not a bootstrap: TOST is defined on it, its coverage at n = 20..50 is close to nominal for bounded
per-query deltas (the mean of 24 such values is already near normal), while percentile/BCa bootstrap intervals
are *too narrow* at small n (they use z and the biased variance; Hesterberg 2015), which for equivalence is the
anti-conservative direction: it would call servers equivalent too easily. ``benchmarks/equivalence_calibration.py``
measures it. A change that is the same on every query has no sampling noise: its interval is the value itself.

Ratios (latency p50/p99 candidate/legacy, docs/s) are decided on the log scale, with the margin symmetric there
(1.10 accepts 1/1.10 .. 1.10). :func:`~embedswap.stats.latency_equivalence.ratio_verdict` takes a precomputed interval, e.g. the stratified bootstrap of
:mod:`embedswap.analysis.intervals` (95 %); an interval at another confidence is rescaled to (1 - 2 alpha), each side
separately (exact for a normal log-ratio, keeps a bootstrap's asymmetry). :func:`~embedswap.stats.latency_equivalence.log_ratio_interval` is the
analytic alternative (Welch t on log latencies: the ratio of geometric means, which is the ratio of medians for
lognormal latencies).

Across slices (languages, query types, metrics) :func:`sliced_verdict` Holm-adjusts the difference tests (a
"worse" claim about *some* slice is a union of tests); the overall "all equivalent" claim is an intersection-union
test and needs no adjustment (Berger 1982). The overall verdict is never ``equivalent`` when a slice is worse, and
it names the slice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_serializer

ALPHA = 0.05
POWER = 0.80
N_MAX = 10_000_000  # beyond this, "n needed" is reported as None (not decidable in practice)

Code = Literal["equivalent", "non_inferior", "different", "inconclusive", "failed"]
Direction = Literal["worse", "better", "slower", "faster"]
Scale = Literal["difference", "ratio", "rate"]
CODES: tuple[str, ...] = ("equivalent", "non_inferior", "different", "inconclusive", "failed")
HARMFUL: frozenset[str] = frozenset({"worse", "slower"})


# the fields summary.json keeps for every verdict (``slices`` only where a combined verdict names its parts)
STORED = ("code", "direction", "estimate", "low", "high", "margin", "n", "n_needed", "reason")


class Verdict(BaseModel):
    """A decision against a margin: the one verdict model, computed here and stored as it is in summary.json.

    ``estimate``/``low``/``high``/``margin`` are in the comparison's units: an absolute difference
    (candidate - legacy), a ratio (candidate / legacy) or an error rate. ``low``/``high`` is the (1 - 2 alpha)
    interval. ``reason`` is a code; ``slices`` names the parts (metrics, slices, figures) that decided a combined
    verdict, the first the one shown. ``p_equivalence``, ``p_difference``, ``scale`` and ``params`` (the reason's
    figures) are the computation's working: kept on the object, never written (a stored verdict read back has
    them at their defaults)."""
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Code
    direction: Direction | None = None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    margin: float | None = None
    n: int | None = None
    n_needed: int | None = None
    reason: str = ""
    slices: list[str] = []
    p_equivalence: float | None = Field(None, exclude=True)  # TOST: the larger one-sided p
    p_difference: float | None = Field(None, exclude=True)  # two-sided p of "no change" (Holm-adjusted in slices)
    scale: Scale = Field("difference", exclude=True)
    params: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @model_serializer(mode="wrap")
    def _stored(self, handler: Any) -> dict[str, Any]:
        """Every stored field, set or not (summary.json's verdicts have always carried them all); ``slices`` only
        when it names some."""
        out = handler(self)
        for name in STORED:
            out.setdefault(name, getattr(self, name))
        if not self.slices:
            out.pop("slices", None)
        return out

    def but(self, **changes: Any) -> Verdict:
        """A copy with ``changes`` (the model is frozen)."""
        return self.model_copy(update=changes)

    @property
    def acceptable(self) -> bool:
        """Whether the migration may proceed on this comparison: equivalent or non-inferior only."""
        return self.code in ("equivalent", "non_inferior")

    @property
    def harmful(self) -> bool:
        return self.code == "failed" or (self.code == "different" and self.direction in HARMFUL)

    def as_dict(self) -> dict[str, Any]:
        """Every field, the working included."""
        return {**{name: getattr(self, name) for name in type(self).model_fields}, "params": dict(self.params)}


# --- sample sizes ---------------------------------------------------------------------------------------------

def _tost_power(n: int, sd: float, margin: float, delta: float, alpha: float, one_sided: bool) -> float:
    """Power of TOST (or of the lower one-sided test alone) for a one-sample/paired mean, noncentral t
    approximation (both tests share the sd estimate; the usual approximation, exact power needs Owen's Q)."""
    from scipy import stats

    df = n - 1
    se = sd / math.sqrt(n)
    tc = float(stats.t.ppf(1 - alpha, df))
    p_low = float(stats.nct.sf(tc, df, (delta + margin) / se))  # rejects mu <= -margin
    if one_sided:
        return p_low
    p_up = float(stats.nct.cdf(-tc, df, (delta - margin) / se))  # rejects mu >= +margin
    return max(0.0, p_low + p_up - 1.0)


def shown_direction(v: Verdict) -> str | None:
    """The direction a verdict's words carry: only a difference's and a non-inferior one's (better beyond the
    margin); an equivalent or inconclusive verdict has none to say."""
    return v.direction if v.code in ("different", "non_inferior") else None


def message_key(code: str, direction: str | None) -> str:
    """The one wording rule, for the report and the post: a verdict's message is keyed by its code and the
    direction it carries."""
    return f"{code}_{direction}" if direction else code


def _smallest_n(power_of: Any, target: float) -> int | None:
    lo, hi = 2, 2
    while power_of(hi) < target:
        lo, hi = hi, hi * 2
        if hi > N_MAX:
            return None
    if power_of(lo) >= target:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_of(mid) >= target else (mid, hi)
    return hi


def n_needed(sd: float, margin: float, delta_observed: float = 0.0, alpha: float = ALPHA, power: float = POWER,
             *, one_sided: bool = False) -> int | None:
    """The n (queries, or pairs) at which TOST shows equivalence within ``±margin`` with ``power`` when the true
    mean change is ``delta_observed`` and the per-unit sd is ``sd``. ``one_sided``: the non-inferiority test of the
    lower side only (``delta`` oriented so that harm is negative). None when no n can show it (the change is at or
    beyond the margin) or it exceeds :data:`N_MAX`."""
    if not margin > 0:
        raise ValueError("margin must be > 0")
    inside = delta_observed > -margin if one_sided else abs(delta_observed) < margin
    if not inside:
        return None
    if not sd > 0:
        return 2
    return _smallest_n(lambda n: _tost_power(n, sd, margin, delta_observed, alpha, one_sided), power)


def n_to_detect(sd: float, delta: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The n at which a one-sided t test at ``alpha`` detects a mean change ``delta`` with ``power`` (the verdicts
    pass alpha / 2: ``different`` is a two-sided test)."""
    from scipy import stats

    if delta == 0:
        return None
    if not sd > 0:
        return 2

    def power_of(n: int) -> float:
        return float(stats.nct.sf(stats.t.ppf(1 - alpha, n - 1), n - 1, abs(delta) * math.sqrt(n) / sd))

    return _smallest_n(power_of, power)


# --- the decision on an oriented difference scale -------------------------------------------------------------

def decide_interval(est: float, low: float, high: float, margin: float, *, n: int, sd_unit: float | None,
            p_low: float, p_up: float, p_diff: float, higher_is_better: bool, better_is_harmless: bool,
            names: tuple[Direction, Direction], alpha: float, power: float) -> dict[str, Any]:
    """Shared rule on a difference scale (a log ratio for ratios). ``names`` = (harmful, beneficial)."""
    harm_ok = low > -margin if higher_is_better else high < margin
    other_ok = high < margin if higher_is_better else low > -margin
    p_harm, p_other = (p_low, p_up) if higher_is_better else (p_up, p_low)
    out: dict[str, Any] = {"direction": None, "n_needed": None, "reason": "", "params": {}}
    if harm_ok and other_ok:
        out.update(code="equivalent", reason="interval_inside_margin", p_equivalence=max(p_harm, p_other))
        return out
    if abs(est) >= margin and p_diff < alpha:
        harmful = (est < 0) == higher_is_better
        if not harmful and better_is_harmless:  # better beyond the margin, where better is harmless
            out.update(code="non_inferior", direction=names[1], reason="better_beyond_margin", p_equivalence=p_harm)
            return out
        out.update(code="different", direction=names[0] if harmful else names[1],
                   reason="outside_margin_and_significant", p_equivalence=max(p_harm, p_other))
        return out
    if harm_ok and better_is_harmless:
        out.update(code="non_inferior", reason="harmful_side_inside_margin", p_equivalence=p_harm)
        return out
    oriented = est if higher_is_better else -est  # harm is negative
    if sd_unit is not None and n >= 2:
        if better_is_harmless:
            need = n_needed(sd_unit, margin, oriented, alpha, power, one_sided=True)
        else:
            need = n_needed(sd_unit, margin, est, alpha, power)
        if need is None:  # the observed change is at/beyond the margin: the n that would show it differs
            need = n_to_detect(sd_unit, est, alpha / 2, power)  # the two-sided test of ``different``
        out["n_needed"] = need
        out["params"] = {"n_if_identical": n_needed(sd_unit, margin, 0.0, alpha, power,
                                                    one_sided=better_is_harmless), "sd": sd_unit}
    out.update(code="inconclusive", reason="interval_crosses_margin",
               p_equivalence=p_harm if better_is_harmless else max(p_harm, p_other))
    return out


def paired_verdict(deltas: Sequence[float] | np.ndarray, margin: float, *, higher_is_better: bool = True,
                   better_is_harmless: bool = False, alpha: float = ALPHA, power: float = POWER) -> Verdict:
    """Verdict on per-query paired changes (candidate - legacy) of a quality metric, ``margin`` in its absolute
    units. ``better_is_harmless``: a change in the good direction beyond the margin is acceptable
    (``non_inferior``) rather than a ``different``/``better`` that asks to look."""
    from scipy import stats

    if not margin > 0:
        raise ValueError("margin must be > 0")
    d = np.asarray(deltas, dtype=np.float64).ravel()
    d = d[np.isfinite(d)]
    n = len(d)
    if n < 2:
        return Verdict(code="inconclusive", estimate=float(d.mean()) if n else None, margin=margin, n=n,
                       reason="too_few", params={"n_min": 2})
    est = float(d.mean())
    sd = float(d.std(ddof=1))
    if np.allclose(d, d[0], rtol=0, atol=1e-12):  # every query moved by the same amount: no sampling noise
        low = high = est
        p_low, p_up = float(est <= -margin), float(est >= margin)
        p_diff = 0.0 if est != 0 else 1.0
        sd_unit: float | None = 0.0
    else:
        se = sd / math.sqrt(n)
        tc = float(stats.t.ppf(1 - alpha, n - 1))
        low, high = est - tc * se, est + tc * se
        p_low = float(stats.t.sf((est + margin) / se, n - 1))
        p_up = float(stats.t.cdf((est - margin) / se, n - 1))
        p_diff = float(2 * stats.t.sf(abs(est) / se, n - 1))
        sd_unit = sd
    got = decide_interval(est, low, high, margin, n=n, sd_unit=sd_unit, p_low=p_low, p_up=p_up, p_diff=p_diff,
                  higher_is_better=higher_is_better, better_is_harmless=better_is_harmless,
                  names=("worse", "better"), alpha=alpha, power=power)
    return Verdict(code=got["code"], direction=got["direction"], estimate=est, low=low, high=high, margin=margin, n=n,
                   n_needed=got["n_needed"], p_equivalence=got.get("p_equivalence"), p_difference=p_diff,
                   scale="difference", reason=got["reason"], params=got["params"])


def overlap_verdict(overlaps: Sequence[float] | np.ndarray, margin: float, *, alpha: float = ALPHA,
                    power: float = POWER) -> Verdict:
    """Per-query top-k overlap (1 = the same top k as legacy) against ``1 - margin``: the change ``overlap - 1``
    can only be harmful, so the bounded lower side decides ``equivalent``."""
    v = paired_verdict(np.asarray(overlaps, dtype=np.float64) - 1.0, margin, alpha=alpha, power=power,
                       better_is_harmless=True)
    return v.but(code="equivalent", reason="interval_inside_margin") if v.code == "non_inferior" else v


# --- ratios ---------------------------------------------------------------------------------------------------

def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order: ``max_{j<=i} min(1, (m - j + 1) p_(j))``."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return [float(x) for x in out]


def combine(verdicts: Mapping[str, Verdict], *, better_is_harmless: bool = False) -> Verdict:
    """The overall verdict of several comparisons that must all pass: ``failed`` if any failed, else
    ``different`` in a harmful direction if any is, else ``inconclusive`` if any is, else ``different``/better
    (``non_inferior`` when better is harmless), ``non_inferior``, ``equivalent``. ``slices`` names the
    ones that decided it; estimate/interval are the first of them."""
    if not verdicts:
        return Verdict(code="inconclusive", reason="nothing_compared")

    def named(test: Any) -> list[str]:
        return [name for name, v in verdicts.items() if test(v)]

    for code, test, reason in (
            ("failed", lambda v: v.code == "failed", "slice_failed"),
            ("different", lambda v: v.harmful, "slice_worse"),
            ("inconclusive", lambda v: v.code == "inconclusive", "slice_inconclusive"),
            ("different", lambda v: v.code == "different", "slice_better"),
            ("non_inferior", lambda v: v.code == "non_inferior", "slice_non_inferior")):
        names = named(test)
        if names:
            first = verdicts[names[0]]
            needs = [verdicts[n].n_needed for n in names]
            n_needed = None if code != "inconclusive" or any(x is None for x in needs) else max(needs)  # type: ignore[type-var]
            if reason == "slice_better" and better_is_harmless:
                code = "non_inferior"
            return first.but(code=code, n_needed=n_needed, reason=reason, slices=[str(n) for n in names],
                             direction=first.direction if code == "different" else None,
                             params={"by_slice": {k: v.code for k, v in verdicts.items()}})
    first = next(iter(verdicts.values()))
    return first.but(code="equivalent", direction=None, n_needed=None, reason="all_equivalent",
                     slices=[str(n) for n in verdicts], params={"by_slice": {k: v.code for k, v in verdicts.items()}})


def sliced_verdict(slices: Mapping[str, Verdict | Sequence[float] | np.ndarray], margin: float | None = None, *,
                   higher_is_better: bool = True, better_is_harmless: bool = False, alpha: float = ALPHA,
                   power: float = POWER) -> tuple[Verdict, dict[str, Verdict]]:
    """(overall, by slice). A slice is a :class:`Verdict` or per-query deltas (decided by :func:`paired_verdict`
    with ``margin``). A slice's ``different`` stands only when its difference p-value survives Holm's correction
    across the slices (else it becomes ``inconclusive``, reason ``not_significant_after_holm``); equivalence needs
    every slice equivalent (intersection-union, no correction). The overall is never ``equivalent`` when a slice
    is worse: :func:`combine` names it."""
    decided: dict[str, Verdict] = {}
    for name, value in slices.items():
        if isinstance(value, Verdict):
            decided[name] = value
        else:
            if margin is None:
                raise ValueError("per-query deltas need a margin")
            decided[name] = paired_verdict(value, margin, higher_is_better=higher_is_better,
                                           better_is_harmless=better_is_harmless, alpha=alpha, power=power)
    tested = [k for k, v in decided.items() if v.p_difference is not None]
    adjusted = dict(zip(tested, holm([decided[k].p_difference for k in tested])))  # type: ignore[misc]
    for name, v in decided.items():
        p_adj = adjusted.get(name)
        params = {**v.params, "p_holm": p_adj}
        if v.code == "different" and p_adj is not None and p_adj >= alpha:
            decided[name] = v.but(code="inconclusive", direction=None, reason="not_significant_after_holm",
                                  params=params)
        else:
            decided[name] = v.but(params=params)
    return combine(decided, better_is_harmless=better_is_harmless), decided
