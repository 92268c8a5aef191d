"""``decisions.index``: per candidate, what happens to the user's index — keep it, re-embed it (with the cost),
map the candidate's queries into it (the Procrustes adapter), or blocked (the dimensions differ).

Every cell of the grid is compared with the legacy-only search (legacy queries on the legacy index, the same
search method) per query, with the verdicts of :mod:`embedswap.stats.equivalence` against ``decisions.margins``:

- ``keep_index``: the cross search (candidate queries on the legacy index, exact) is equivalent to the legacy one
  on nDCG@10 (top-5 overlap without judgements) — the backward-compatibility criterion of Shen et al. (CVPR 2020)
  with a two-sided margin, since a ranking that moves either way is not the index the user has;
- ``adapter``: not equivalent, but the map (not the identity) keeps the full re-embed's ranking within the margin
  on held-out documents (non-inferior to it);
- ``re_embed``: neither; with the cost of re-embedding the corpus when ``index.corpus_size`` is set;
- ``blocked``: the dimensions differ, no cross search is possible.

Independently, ``length`` says whether the vectors differ in length only (exact cosine search unchanged with the
full re-embed, inner product or L2 changed), and ``advice`` what the index must do about it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from embedswap.stats import equivalence as eq
from embedswap.analysis.stored_verdicts import stored
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.index import IndexConfig
from embedswap.index.cost import reembed_cost
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_common import Number
from embedswap.summary.types_decisions import Interval, PointIntervals
from embedswap.summary.types_post import Fact
from embedswap.summary.types_index import (AdapterDecision, CellDecision, CellValues, IndexCandidate, IndexDecision,
                                           ReembedCost, choice_of)
from embedswap.summary.types_index_options import IndexOptionsDecision

MARGIN_OF = {"ndcg_at_10": "ndcg_at_10", "recall_at_5": "recall_at_k"}
COST_POINT = "concurrent"  # the article's operating point


def index_config(summary: SummaryBody) -> IndexConfig:
    configured = summary.experiment.config.get("index")  # open: experiment.yaml as the user wrote it
    return IndexConfig.model_validate(configured) if isinstance(configured, dict) else IndexConfig()


def index_condition(summary: SummaryBody) -> Fact:
    """The queries every candidate cell was searched with: a decision on them holds for those queries only (the
    shim's prompt-prefixed ones by default, not the address swap's)."""
    configured = summary.experiment.config.get("index")
    stored = isinstance(configured, dict) and "queries" in configured
    return Fact(key="index_queries", value=index_config(summary).queries,
                source="experiment.config.index.queries" if stored else "default:IndexConfig.queries")


def _typed(v: eq.Verdict | None) -> eq.Verdict | None:
    return None if v is None else stored(v)


def _paired(cell: Sequence[Number | None], reference: Sequence[Number | None]) -> np.ndarray:
    return np.asarray([c - r for c, r in zip(cell, reference, strict=True) if c is not None and r is not None],
                      dtype=np.float64)


def _mean(values: Sequence[Number | None]) -> float | None:
    finite = [v for v in values if v is not None]
    return float(np.mean(finite)) if finite else None


def _cell_decision(cell: CellValues, reference: CellValues, config: DecisionsConfig) -> CellDecision:
    margins, alpha, power = config.margins, config.alpha, config.power
    paired: dict[str, eq.Verdict | None] = {}
    for metric in ("ndcg_at_10", "recall_at_5"):
        deltas = _paired(getattr(cell, metric), getattr(reference, metric))
        paired[metric] = _typed(eq.paired_verdict(deltas, getattr(margins, MARGIN_OF[metric]), alpha=alpha,
                                                  power=power) if len(deltas) else None)
    overlaps = [v for v in cell.top5_overlap if v is not None]
    return CellDecision(queries=cell.queries, share=cell.share, method=cell.method,
                        ndcg_at_10=_mean(cell.ndcg_at_10), recall_at_5=_mean(cell.recall_at_5),
                        top5_overlap=_mean(cell.top5_overlap),
                        hnsw_recall=_mean(cell.hnsw_recall) if cell.hnsw_recall else None,
                        ndcg=paired["ndcg_at_10"], recall=paired["recall_at_5"],
                        overlap=_typed(eq.overlap_verdict(overlaps, margins.top_k_overlap, alpha=alpha, power=power)
                                       if overlaps else None))


def _harmful(verdict: eq.Verdict | None) -> bool:
    return verdict is not None and verdict.code == "different" and verdict.direction == "worse"


def _length(entry: IndexCandidate, config: DecisionsConfig) -> str | None:
    """'same', 'length_only' (cosine equivalent, inner product or L2 not) or 'direction', from the exact full
    re-embed's top-5 overlap with the legacy search, per distance."""
    def equivalent(name: str) -> bool | None:
        check = entry.distance(name)
        values = [v for v in (check.full_overlap if check else []) if v is not None]
        if not values:
            return None
        return eq.overlap_verdict(values, config.margins.top_k_overlap, alpha=config.alpha,
                                  power=config.power).acceptable

    cosine, others = equivalent("cosine"), [equivalent("inner_product"), equivalent("l2")]
    if cosine is None:
        return None
    if not cosine:
        return "direction"
    return "length_only" if any(o is False for o in others) else "same"


def _adapter(entry: IndexCandidate, config: DecisionsConfig) -> AdapterDecision | None:
    adapter = entry.adapter
    if adapter is None:
        return None
    full, mapped, cross = (adapter.per_query.get(k, []) for k in ("full", "adapter", "cross"))
    margin = config.margins.ndcg_at_10 if adapter.basis == "ndcg_at_10" else config.margins.top_k_overlap
    deltas = _paired(mapped, full)
    verdict = (eq.paired_verdict(deltas, margin, better_is_harmless=True, alpha=config.alpha, power=config.power)
               if len(deltas) else None)
    full_mean = _mean(full)

    def retained(values: Sequence[Number | None]) -> float | None:
        mean = _mean(values)
        return None if mean is None or not full_mean else mean / full_mean

    return AdapterDecision(identity=adapter.identity, residual_test=adapter.residual_test,
                           residual_unmapped=adapter.residual_unmapped, retained=retained(mapped),
                           cross_retained=retained(cross), verdict=_typed(verdict))


def _throughput(summary: SummaryBody, points: dict[str, dict[str, PointIntervals]], name: str
                ) -> list[tuple[str, Interval, float | None]]:
    """(label, docs/s interval, tokens per document) at the article's point and at the sweep's best."""
    by_label = points.get(name) or {}
    latency = summary.latency.of(name)

    def tokens_per_doc(label: str) -> float | None:
        if latency is None:
            return None
        point = latency.concurrent if label == COST_POINT else next(
            (p for p in latency.sweep if p.run == label), None)
        if point is None or not point.docs_per_s or not point.tokens_per_s:
            return None
        return float(point.tokens_per_s) / float(point.docs_per_s)

    out = []
    if COST_POINT in by_label:
        out.append((COST_POINT, by_label[COST_POINT].docs_per_s, tokens_per_doc(COST_POINT)))
    sweep = [(label, est.docs_per_s.value) for label, est in by_label.items()
             if re.fullmatch(r"sweep_c\d+", label) and est.docs_per_s.value]
    if sweep:
        label, _ = max(sweep, key=lambda item: item[1] or 0.0)
        out.append((label, by_label[label].docs_per_s, tokens_per_doc(label)))
    return out


def _costs(summary: SummaryBody, points: dict[str, dict[str, PointIntervals]], name: str, config: IndexConfig
           ) -> list[ReembedCost]:
    if config.corpus_size is None:
        return []
    out = []
    for label, interval, tokens in _throughput(summary, points, name):
        cost = reembed_cost(config.corpus_size, interval.value, interval.low, interval.high,
                            config.window_hours, workload_mean_tokens=tokens, corpus_mean_tokens=config.mean_tokens)
        if cost is not None:
            out.append(ReembedCost(point=label, **cost))
    return out


def candidate_decision(entry: IndexCandidate, config: DecisionsConfig, index: IndexConfig, distance: str | None,
                       costs: list[ReembedCost]) -> IndexDecision:
    """The decision and its figures for one candidate's measured grid."""
    reference = {m: entry.cell("legacy", 0.0, m) for m in ("exact", "hnsw")}
    cells = [_cell_decision(c, reference[c.method], config) for c in entry.cells if reference.get(c.method)]
    cross = next((c for c in cells if c.queries == "candidate" and c.share == 0 and c.method == "exact"), None)
    full = next((c for c in cells if c.queries == "candidate" and c.share == 1 and c.method == "exact"), None)
    judged = cross is not None and cross.ndcg is not None
    basis = "ndcg_at_10" if judged else "top5_overlap"
    cross_verdict = (cross.ndcg if judged else cross.overlap) if cross else None
    backward = None
    if cross is not None and judged:
        x, ref = entry.cell("candidate", 0.0, "exact"), reference["exact"]
        deltas = _paired(x.ndcg_at_10, ref.ndcg_at_10) if x and ref else np.array([])
        if len(deltas):
            backward = eq.paired_verdict(deltas, config.margins.ndcg_at_10, better_is_harmless=True,
                                         alpha=config.alpha, power=config.power).acceptable
    retention = None
    if cross and full:
        key = "ndcg_at_10" if judged else "top5_overlap"
        cross_mean, full_mean = getattr(cross, key), getattr(full, key)
        if cross_mean is not None and full_mean:
            retention = cross_mean / full_mean
    recalls = [c.hnsw_recall for c in cells if c.hnsw_recall is not None]
    adapter = _adapter(entry, config)
    length = _length(entry, config)
    advice = "none"
    if length == "length_only":
        advice = "keep_cosine" if distance == "cosine" else "use_cosine_or_renormalise"
    # vectors of both origins in one index (new documents written after the swap) must not rank worse either
    mixed_worse = [c.share for c in cells if c.queries == "candidate" and c.method == "exact"
                   and 0 < c.share < 1 and _harmful(c.ndcg if judged else c.overlap)]
    # new queries on the old index at least as good as old on old (judged), or the same top 5 (no judgements)
    compatible = backward is True or (not judged and cross_verdict is not None and cross_verdict.code == "equivalent")
    if compatible and not mixed_worse:
        # the index holds, but vectors the candidate writes from now on differ in length: the advice says what to do
        code = "keep_index"
        reason = "cross_equivalent_renormalise_new" if advice == "use_cosine_or_renormalise" else "cross_equivalent"
    elif adapter and not adapter.identity and adapter.verdict \
            and adapter.verdict.code in ("equivalent", "non_inferior"):
        code, reason = "adapter", "adapter_recovers"
    else:
        code = "re_embed"
        reason = ("mixed_index_worse" if compatible else "cross_not_equivalent") if cross_verdict \
            else "cross_not_measured"
    return IndexDecision.sampled(code, reason=reason, distance=distance, basis=basis, cross=cross_verdict,
                         backward_compatible=backward, retention=retention,
                         hnsw_recall=float(np.mean(recalls)) if recalls else None, length=length, advice=advice,
                         cells=cells, adapter=adapter, cost=costs[0] if costs else None,
                         cost_best=costs[1] if len(costs) > 1 else None, mixed_worse=mixed_worse)


def index_decisions(summary: SummaryBody, config: DecisionsConfig,
                    latency_points: dict[str, dict[str, PointIntervals]] | None = None,
                    options: dict[str, IndexOptionsDecision] | None = None) -> dict[str, IndexDecision]:
    """``decisions.index``: candidate -> the one index decision against the experiment's typed ``decisions`` (empty
    when the index part was not measured at all). Where the index options decided (``options``: measured on the
    corpus' held-out folds, the larger and the judged measurement), their choice is the decision; the sample's
    cross search stays its evidence (``sample``)."""
    section = summary.index
    if not section.measured:
        return {}
    index = index_config(summary)
    out: dict[str, IndexDecision] = {}
    for name, entry in section.by_candidate.items():
        if not entry.measured:
            code = entry.reason.code if entry.reason else ""
            out[name] = IndexDecision.sampled("blocked" if code == "dimensions_differ" else "not_measured", reason=code)
            continue
        decided = candidate_decision(entry, config, index, section.distance,
                                     _costs(summary, latency_points or {}, name, index))
        decided.condition = index_condition(summary)
        out[name] = decided
    for name, chosen in (options or {}).items():
        if chosen.code != "not_decided" and name in out:
            choice, kind = choice_of(chosen.code)
            out[name] = out[name].model_copy(update={"choice": choice, "map_kind": kind, "decided_on": "options"})
    return out
