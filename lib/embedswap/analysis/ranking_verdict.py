"""Whether search ranking stays the legacy one, per candidate, and what that asks of the migration.

"No difference detected" is not "unchanged": at 24 queries a candidate 0.06 nDCG@10 worse passes a paired test. A
ranking variant is decided against the margins of ``decisions.margins`` (experiment.yaml, else the defaults of
:class:`embedswap.config.decisions.Margins`) with the kit's one verdict vocabulary
(:mod:`embedswap.stats.equivalence`): the per-query changes of nDCG@10, recall@5 and MRR@10 (variant - legacy) and the
per-query top-5 overlap with legacy each get a verdict, and :func:`~embedswap.stats.equivalence.combine` joins
them. The variant is unchanged when the combined verdict is ``equivalent`` (or ``non_inferior``), changed when it is
``different`` (in either direction: what the migration keeps is the ranking users had, not a higher metric), and
neither when it is ``inconclusive``: then the decision is ``undecided`` with the number of queries that would decide
it. Where the queries span two languages or more, each metric is decided per language with Holm's correction
across the languages (:mod:`embedswap.analysis.slices`): equivalent only when every language is, and a worse
language is named. The paired randomization tests (:mod:`embedswap.analysis.ranking_tests`) are still stated beside it. On a
random-weight model (:data:`RANDOM_WEIGHT_SPECS`) the ranking is noise and no decision is drawn. A candidate serving
another model (its plan's ``ranking_question``) is judged for superiority or non-inferiority instead, without the top-5 overlap,
and its decision is ``another_model`` (:func:`variant_verdicts`).
"""

from __future__ import annotations

from embedswap.stats import equivalence as eq
from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.ranking_tests import paired_values, variant_tests
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody
from embedswap.analysis.slices import ranking_slices, stored_slices
from embedswap.analysis.stored_verdicts import stored
from embedswap.summary.types_decisions import RankingCandidate, RankingDecision, RankingTolerance, RankingVariant
from embedswap.summary.types_plan import RankingQuestion
from embedswap.summary.types_sections import CandidateRanking, RankingRun

# Model specs whose weights are random (embedswap.zoo.qwen3): their vectors carry no meaning, so ranking is noise.
RANDOM_WEIGHT_SPECS = ("build:tiny-qwen3",)
METRICS = ("ndcg_at_10", "recall_at_5", "mrr_at_10")
# metric -> its margin in decisions.margins (recall is decided at k = 5)
MARGIN_OF = {"ndcg_at_10": "ndcg_at_10", "recall_at_5": "recall_at_k", "mrr_at_10": "mrr_at_10",
             "top5_overlap": "top_k_overlap"}


def random_weights(summary: SummaryBody) -> bool:
    """True when the experiment's model has random weights (model.spec, or the experiment config's model.path)."""
    configured = summary.experiment.config.get("model")  # open: experiment.yaml as the user wrote it
    specs = [summary.model.spec, configured.get("path") if isinstance(configured, dict) else None]
    return any(isinstance(spec, str) and spec.strip().startswith(RANDOM_WEIGHT_SPECS) for spec in specs)


def variant_verdicts(legacy: RankingRun | None, variant: RankingRun | None, config: DecisionsConfig, *,
                     question: RankingQuestion = "equivalence") -> tuple[eq.Verdict | None, dict[str, eq.Verdict]]:
    """(combined, by metric) for one variant against legacy; (None, {}) when there is no per-query number.

    Higher nDCG/recall/MRR is not harmless here (``better_is_harmless=False``): a ranking that moved either way is not
    the legacy one. The top-5 overlap is per query (``top5_overlap`` of each per-query row, against legacy), so it
    gets its own verdict against ``1 - top_k_overlap``.

    ``question`` ``non_inferiority`` (the plan of a candidate serving another model, issue 57): a model change is
    meant to move the ranking, so the question is superiority or non-inferiority on the judgements: a better ranking is acceptable
    (``better_is_harmless``: ``non_inferior``, with the direction ``better`` where it is better beyond the margin),
    and the top-5 overlap, which another model's ranking changes by nature, does not take part.
    """
    margins, alpha, power = config.margins, config.alpha, config.power
    better_is_harmless = question == "non_inferiority"
    verdicts: dict[str, eq.Verdict] = {}
    for metric in METRICS:
        reference, other = paired_values(legacy, variant, metric)
        if len(reference):
            verdicts[metric] = eq.paired_verdict(other - reference, getattr(margins, MARGIN_OF[metric]),
                                                 better_is_harmless=better_is_harmless, alpha=alpha, power=power)
    overlaps = [row.top5_overlap for row in (variant.per_query if variant is not None else {}).values()
                if row.top5_overlap is not None and not better_is_harmless]
    if overlaps:  # a summary without per-query overlaps is decided on the metrics alone
        verdicts["top5_overlap"] = eq.overlap_verdict(overlaps, margins.top_k_overlap, alpha=alpha, power=power)
    # per language (analysis.slices): with two languages or more, a metric's verdict is the Holm-corrected
    # one across its languages, which is never equivalent when one language is worse. Its figure stays the
    # pooled one (one stored value per metric): the sliced overall's estimate is its first deciding language's,
    # which a reader would print under the metric's name (the English slice's +0.108 as "nDCG@10 change" where
    # the pooled change is +0.194); the languages that decided it stay named in ``slices``.
    for metric, (overall, _) in ranking_slices(legacy, variant, config, question=question).items():
        if metric in verdicts:
            pooled = verdicts[metric]
            verdicts[metric] = overall.but(estimate=pooled.estimate, low=pooled.low, high=pooled.high, n=pooled.n)
            if overall.code == pooled.code == "non_inferior" and pooled.direction == "better":
                # every language acceptable and the pooled figure better beyond the margin: superior (combine()
                # keeps no direction for non-inferior slices)
                verdicts[metric] = verdicts[metric].but(direction="better", reason=pooled.reason)
    if not verdicts:
        return None, {}
    return eq.combine(verdicts, better_is_harmless=better_is_harmless), verdicts


def unchanged_from(verdict: eq.Verdict | None) -> bool | None:
    """True when acceptable (equivalent / non-inferior), False when different, None when inconclusive or absent."""
    if verdict is None or verdict.code == "inconclusive":
        return None
    return verdict.acceptable


def by_candidate(summary: SummaryBody) -> dict[str, CandidateRanking]:
    """The ranking section's per-candidate entries."""
    return summary.ranking.by_candidate


def _variant_verdict(entry: CandidateRanking | None, kind: str, legacy: RankingRun | None,
                     config: DecisionsConfig, question: RankingQuestion = "equivalence") -> RankingVariant:
    variant = getattr(entry, kind) if entry is not None else RankingRun(measured=False)
    measured = is_measured(variant) and is_measured(legacy)
    tests = variant_tests(legacy, variant) if measured else {}
    combined, metrics = variant_verdicts(legacy, variant, config, question=question) if measured else (None, {})
    slices = ranking_slices(legacy, variant, config, question=question) if measured else {}
    per_query = variant.per_query
    changed = sum(1 for q in per_query.values() if q.top5_overlap is not None and q.top5_overlap < 1)
    found = RankingVariant(unchanged=unchanged_from(combined), changed_queries=changed if per_query else None,
                           queries=len(per_query) or variant.queries, tests=tests,
                           equivalence=stored(combined) if combined is not None else None,
                           metrics={k: stored(v) for k, v in metrics.items()})
    if slices:  # left unset without two languages: summary.json has no ``slices`` key then
        found.slices = {k: stored_slices(v) for k, v in slices.items()}
    return found


def decision(naive: str | None, shim: str | None) -> str:
    """reindex / client / shim_only / none / shim_missing / undecided, from the two variants' verdict codes
    (None: not measured). An inconclusive variant that could change the answer leaves it ``undecided``."""
    if shim is None:
        return "shim_missing"
    if shim == "inconclusive":
        return "undecided"
    if shim not in ("equivalent", "non_inferior"):
        return "reindex"
    if naive is None:
        return "shim_only"
    if naive == "inconclusive":
        return "undecided"
    return "none" if naive in ("equivalent", "non_inferior") else "client"


def _needed(naive: RankingVariant, shim: RankingVariant) -> int | None:
    """The queries that would decide the inconclusive variants (the larger; None when one has no practical n)."""
    found = [v.equivalence.n_needed for v in (naive, shim)
             if v.equivalence is not None and v.equivalence.code == "inconclusive"]
    return None if not found or any(n is None for n in found) else max(found)


def ranking_verdicts(summary: SummaryBody, config: DecisionsConfig) -> RankingDecision:
    """``{meaningful, tolerance, margins, by_candidate: {name: {naive, shim, decision, n_needed}}}`` against the
    experiment's typed ``decisions``; no verdict on random weights."""
    meaningful = not random_weights(summary)
    margins = config.margins
    candidates: dict[str, RankingCandidate] = {}
    out = RankingDecision(meaningful=meaningful,
                          tolerance=RankingTolerance(top5_overlap_min=1 - margins.top_k_overlap,
                                                     ndcg_margin=margins.ndcg_at_10,
                                                     recall_margin=margins.recall_at_k,
                                                     mrr_margin=margins.mrr_at_10, alpha=config.alpha,
                                                     power=config.power),
                          margins=margins.model_dump(), by_candidate=candidates)
    if not meaningful or not is_measured(summary.ranking):
        return out
    entries = by_candidate(summary)
    legacy = summary.ranking.legacy
    for name in roles(summary)[1]:
        entry = entries.get(name)
        question = summary.plan.ranking_question(name)
        naive = _variant_verdict(entry, "naive", legacy, config, question)
        shim = _variant_verdict(entry, "shim", legacy, config, question)
        code = decision(*(v.equivalence.code if v.equivalence is not None else None for v in (naive, shim)))
        if summary.plan.another_model(name):  # its vectors never share the legacy index: the verdicts say whether the move keeps search good
            code = "another_model"
        candidates[name] = RankingCandidate(naive=naive, shim=shim, decision=code,
                                            n_needed=_needed(naive, shim) if code == "undecided" else None)
    out.by_candidate = candidates
    return out
