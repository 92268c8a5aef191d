"""The index options of a model change (issue 57): ``index.options`` (each option's recall@10 and nDCG@10 against
the re-embedded index, with 95 % intervals, and its cost) and ``decisions.index_options`` (the cheapest option within
the ranking margins, and why each other one lost)."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Reason, Section, Strict

OptionCode = Literal["re_embed", "keep", "orthogonal", "affine", "mlp", "rescore", "dual_read"]
# the decision's order of cost, cheapest first: nothing, a stored map (rotation, affine, then the affine map with a
# network on top, which costs more to fit, store and apply), the candidate's
# vectors of the re-ranked documents read per query, and the whole corpus re-embedded; dual-read is how a re-embed
# serves while it runs, not an alternative to it
COST_ORDER: tuple[OptionCode, ...] = ("keep", "orthogonal", "affine", "mlp", "rescore", "re_embed")


class OptionFigure(Strict):
    """A per-query mean with its 95 % bootstrap interval (scipy.stats.bootstrap, BCa) and the queries it is over."""
    value: Number | None = None
    low: Number | None = None
    high: Number | None = None
    n: int = 0


class IndexOption(Strict):
    """One option scored against the re-embedded index on held-out documents (k-fold), and what it costs."""
    option: OptionCode
    recall_at_10: OptionFigure  # the share of the re-embedded index's top 10 the option returns
    ndcg_at_10: OptionFigure | None = None  # on the workload's judgements (held-out documents), where there are any
    ndcg_delta: OptionFigure | None = None  # option - re-embed, per query (paired)
    fit_s: Number | None = None  # the map's fit, mean over the folds
    query_ms: Number  # its search path per query, on the store (map or re-rank included)
    overhead_ms: Number  # query_ms - the re-embedded index's own search, same folds
    storage_bytes: int  # float32 bytes it adds to the deployment


class IndexOptions(Section):
    """Per candidate: the options searched on the store, k-fold over the documents."""
    folds: int = 0
    k: int = 10
    rescore_depth: int | None = None
    dual_read_share: Number | None = None
    documents: int = 0
    documents_per_fold: int = 0
    queries: int = 0
    ridge_alphas: list[Number] = []  # the affine map's penalty per fold (RidgeCV)
    training_pairs: int | None = None  # the fewest document pairs a fold's maps were fitted on (None: older capture)
    mlp_min_pairs: int | None = None  # the mlp map is fitted where training_pairs reaches this
    options: list[IndexOption] = []

    def of(self, option: str) -> IndexOption | None:
        return next((o for o in self.options if o.option == option), None)


class OptionStanding(Strict):
    """One option's standing in the decision (not a verdict: the one verdict model is stats.equivalence's): within
    the margins or not, and why it was not chosen."""
    option: OptionCode
    within: bool | None = None  # None: not measured
    lost: Literal["below_margin", "costlier", "not_measured"] | None = None  # None: chosen (or dual-read)


class IndexOptionsDecision(Strict):
    """The cheapest option within the ranking margin (analysis.index_options: nDCG@10 non-inferior to the re-embed's
    where judged, else recall@10 against it at least 1 - the top-k overlap margin at its interval's low end)."""
    code: OptionCode | Literal["not_decided"]
    reason: Reason | None = None  # not_decided: why
    # what decided: nDCG@10 non-inferior to the re-embed's (judged), or recall@10 against it (no judgements)
    basis: Literal["ndcg_at_10", "recall_at_10"] | None = None
    recall_floor: Number | None = None
    ndcg_margin: Number | None = None
    verdicts: list[OptionStanding] = []
    dual_read_within: bool | None = None  # whether serving by dual-read during the re-embed keeps the ranking

    def verdict(self, option: str) -> OptionStanding | None:
        return next((v for v in self.verdicts if v.option == option), None)
