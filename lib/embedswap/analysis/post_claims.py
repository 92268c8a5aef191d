"""The post's claims as data (issue 63): each stored verdict a post statement states, with the figure it prints as an
:class:`~embedswap.summary.estimate.Estimate` whose interval is the one its label names.

A latency verdict decided (not inconclusive, failed or unmeasured) on an interval widened by the host drift
(a bound that prints above 1.00x) prints that widened interval at the ratio's 95 %
(``decisions.latency.ratios.<c>.widened``), labelled ``widened_by_drift``, not the verdict's own low/high: those are
at its (1 - 2 alpha) confidence and at a small n narrower than the unwidened 95 % interval the report prints;
otherwise the ratio's own within-run interval (``decisions.latency.ratios.<c>.intervals``), labelled
``within_run``. A ranking verdict prints its (1 - 2 alpha) interval of the per-query deltas (``paired_t``)."""

from __future__ import annotations

from embedswap.stats.equivalence import shown_direction
from embedswap.summary.estimate import Estimate, Unit
from embedswap.summary.types_decisions import LatencyRatio, RankingVariant, RatioInterval
from embedswap.summary.types_equivalence import Verdict
from embedswap.summary.types_plan import RankingQuestion
from embedswap.summary.types_post import LatencyShown
from embedswap.summary.types_post_document import PostClaim

SHOWN_FIELD = {"p50": "p50_ms", "p99": "p99_ms", "docs_per_s": "docs_per_s"}
UNDECIDED = ("inconclusive", "failed", "not_measured")


def widening(ratio: LatencyRatio | None) -> float | None:
    """The host drift bound a ratio's verdicts were widened by (None: not widened)."""
    bound = ratio.drift.bound if ratio is not None and ratio.drift is not None else None
    return bound if bound is not None and bound > 1 else None


def _claim(v: Verdict | None, estimate: Estimate, *, subjects: list[str], metric: str, variant: str = "",
           source: str, figure_source: str) -> PostClaim:
    if v is None:
        return PostClaim(subjects=subjects, metric=metric, variant=variant, code="not_measured",
                         estimate=Estimate.point(estimate.value, estimate.unit), figure_source=figure_source)
    return PostClaim(subjects=subjects, metric=metric, variant=variant, code=v.code,
                     direction=shown_direction(v),  # type: ignore[arg-type]
                     estimate=estimate, reason=v.reason if v.code == "inconclusive" else "", n_needed=v.n_needed,
                     margin=v.margin, statuses=dict(getattr(v, "statuses", {}) or {}), source=source,
                     figure_source=figure_source)


def _median_ratio(shown: LatencyShown, legacy: str, name: str, run: str, figure: str) -> tuple[float | None, str]:
    """A summary without per-request data: the ratio of the two shown medians (value only), and its source."""
    field = SHOWN_FIELD[figure]
    own, base = shown.at(name, run), shown.at(legacy, run)
    top = getattr(own, field) if own is not None else None
    bottom = getattr(base, field) if base is not None else None
    source = f"ratio:decisions.shown.by_target.{name}.{run}.{field}/decisions.shown.by_target.{legacy}.{run}.{field}"
    return (top / bottom if top is not None and bottom else None), source


def latency_claim(ratio: LatencyRatio, subjects: list[str], base: str, run: str, figure: str, metric: str,
                  shown: LatencyShown | None = None, legacy: str = "") -> PostClaim:
    """One figure's verdict of a stored ratio (``base``: its path) at one operating point."""
    verdicts = ratio.verdicts_at(run)
    v: Verdict | None = getattr(verdicts, figure) if verdicts is not None else None
    interval: RatioInterval | None = ratio.figure(run, figure)  # type: ignore[arg-type]
    source = f"{base}.verdicts.{run}.{figure}"
    figure_source = f"{base}.intervals.{run}.{figure}"
    value = interval.value if interval is not None else None
    if interval is None and shown is not None and len(subjects) == 1 and shown.statistic != "pooled":
        value, figure_source = _median_ratio(shown, legacy, subjects[0], run, figure)
    if v is None:
        return _claim(None, Estimate.point(value), subjects=subjects, metric=metric, source="",
                      figure_source=figure_source if value is not None else "")
    bound = widening(ratio)
    shows_widened = bound is not None and round(bound, 2) > 1 and v.code not in UNDECIDED
    point = ratio.widened.get(run)
    wide = getattr(point, figure) if point is not None else None
    if shows_widened and interval is not None and wide is not None:  # the ratio's interval, widened as decided
        low, high = wide.low, wide.high
        kind = "none" if low is None or high is None else "widened_by_drift"
        interval_source = f"{base}.widened.{run}.{figure}"
    elif interval is None:  # no ratio interval: the verdict's own (missing_interval: none)
        low, high = v.low, v.high
        kind = "none" if low is None or high is None else "widened_by_drift" if bound is not None else "within_run"
        if value is None:
            value, figure_source = v.estimate, source
        interval_source = source
    else:
        low, high = interval.low, interval.high
        kind = "none" if low is None or high is None else "within_run"
        interval_source = figure_source
    estimate = Estimate(value=value, low=low if kind != "none" else None, high=high if kind != "none" else None,
                        n=v.n, interval=kind,  # type: ignore[arg-type]
                        widened_by=bound if kind == "widened_by_drift" else None)
    claim = _claim(v, estimate, subjects=subjects, metric=metric, source=source, figure_source=figure_source)
    if ratio.drift is not None and ratio.drift.factor is not None:
        claim = claim.model_copy(update={"drift_factor": ratio.drift.factor})
    return claim if kind == "none" or interval_source == figure_source else \
        claim.model_copy(update={"figure_source": f"{figure_source}|{interval_source}"})


def headline_claim(ratio: LatencyRatio, subjects: list[str], base: str) -> PostClaim:
    """The latency headline (the article's two points combined): its code and direction, no figure printed."""
    v = ratio.verdict
    claim = _claim(v, Estimate.point(None), subjects=subjects, metric="latency", source=f"{base}.verdict",
                   figure_source="")
    factor = ratio.drift.factor if ratio.drift is not None else None
    return claim.model_copy(update={"drift_factor": factor}) if factor is not None and v is not None else claim


def delta_claim(v: Verdict | None, *, subjects: list[str], metric: str, variant: str, source: str) -> PostClaim:
    """A ranking verdict: the mean per-query delta with its (1 - 2 alpha) interval."""
    unit: Unit = "delta"
    if v is None:
        return _claim(None, Estimate.point(None, unit), subjects=subjects, metric=metric, variant=variant,
                      source="", figure_source="")
    bounded = v.low is not None and v.high is not None
    estimate = Estimate(value=v.estimate, low=v.low if bounded else None, high=v.high if bounded else None, n=v.n,
                        interval="paired_t" if bounded else "none", unit=unit)
    return _claim(v, estimate, subjects=subjects, metric=metric, variant=variant, source=source,
                  figure_source=source)


def variant_claims(name: str, kind: str, v: RankingVariant, question: RankingQuestion
                   ) -> tuple[PostClaim, PostClaim | None]:
    """(the variant's combined verdict, nDCG@10's own where another metric decided the combined one); for a
    candidate serving another model, its nDCG@10 verdict alone (the plan's non-inferiority question)."""
    source = f"decisions.ranking.by_candidate.{name}.{kind}"
    variant = "address_swap" if kind == "naive" else "shim"
    ndcg = v.metrics.get("ndcg_at_10")
    if question == "non_inferiority" and ndcg is not None:
        return delta_claim(v.speaking(question), subjects=[name], metric="ndcg_at_10", variant=variant,
                           source=f"{source}.metrics.ndcg_at_10"), None
    combined = v.equivalence
    metric = combined.slices[0] if combined is not None and combined.slices else "ndcg_at_10"
    first = delta_claim(combined, subjects=[name], metric=metric, variant=variant, source=f"{source}.equivalence")
    if metric == "ndcg_at_10" or ndcg is None:
        return first, None
    return first, delta_claim(ndcg, subjects=[name], metric="ndcg_at_10", variant=variant,
                              source=f"{source}.metrics.ndcg_at_10")
