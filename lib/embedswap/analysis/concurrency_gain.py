"""What concurrency gained each server: its throughput at the concurrent point (the article's concurrency 4) over
its own sequential throughput, ``decisions.latency.concurrency.<server>``.

Why it is stored: the article's case for the candidate is a concurrency gain (Dynamo 2.8x the legacy server's
throughput at concurrency 4), and on a host with fewer cores than the concurrency a run can gain nothing: on the
2-core demo host every server's concurrent p50 was about four times its sequential p50, so concurrency bought no
throughput at all, the reverse of the article. No other stored field says it, and the post must (issue 63).

The ratio and its 95 % interval are :func:`embedswap.analysis.intervals.ratio` of the server's own two points (the
same stratified block bootstrap and the same seeds as every latency interval of the summary); it is read against
the throughput margin (``decisions.margins.throughput_ratio``, 1.10 by default): a gain whose interval lies above
it is ``gained``, below it ``no_gain``, across it ``inconclusive``. A point stored without per-request data gives
the value without an interval (``inconclusive``, ``no_interval``)."""

from __future__ import annotations

from embedswap.analysis.common import is_measured
from embedswap.analysis.intervals import ratio
from embedswap.analysis.latency_intervals import Estimate, target_estimates
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import ConcurrencyCode, ConcurrencyGain, RatioInterval
from embedswap.summary.types_latency import LatencyTarget

RUNS = ("sequential", "concurrent")


def verdict(gain: RatioInterval, margin: float) -> tuple[ConcurrencyCode, str]:
    """(code, reason) of one gain against the margin."""
    if gain.low is None or gain.high is None:
        return "inconclusive", "no_interval"
    if gain.low > margin:
        return "gained", ""
    if gain.high < margin:
        return "no_gain", ""
    return "inconclusive", "spans_margin"


def concurrency_gain(name: str, info: LatencyTarget | None, margin: float,
                     estimates: dict[str, Estimate] | None = None) -> ConcurrencyGain:
    """One server's gain (``estimates``: its points' intervals where the pipeline has them already)."""
    seq = info.sequential if info is not None and is_measured(info) else None
    conc = info.concurrent if info is not None and is_measured(info) else None
    if seq is None or conc is None or not seq.docs_per_s or conc.docs_per_s is None:
        return ConcurrencyGain(code="not_measured", margin=margin, reason="no_points")
    own = estimates if estimates is not None and all(r in estimates for r in RUNS) else target_estimates(name, info)
    if all(r in own for r in RUNS):
        gain = ratio(own["concurrent"], own["sequential"]).docs_per_s
    else:  # the stored medians only: the value, no interval to read against the margin
        gain = RatioInterval(value=conc.docs_per_s / seq.docs_per_s, low=None, high=None, n=[None, None],
                             direction="missing")
    code, reason = verdict(gain, margin)
    return ConcurrencyGain(code=code, margin=margin, concurrency=conc.concurrency, gain=gain, reason=reason)


def concurrency_gains(summary: SummaryBody, config: DecisionsConfig,
                      estimates: dict[str, dict[str, Estimate]] | None = None) -> dict[str, ConcurrencyGain]:
    """Every server of the latency section, in its order."""
    margin = config.margins.throughput_ratio
    return {name: concurrency_gain(name, info, margin, (estimates or {}).get(name))
            for name, info in summary.latency.by_target.items()}
