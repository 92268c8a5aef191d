"""The ``index`` section of summary.json (the compatibility grid searched on the real vector store, per query) and
``decisions.index`` (per candidate, the one index decision: keep, map, re-score, dual-read, re-embed or blocked)."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Section, Spread, Strict
from embedswap.summary.types_equivalence import Verdict
from embedswap.summary.types_index_options import IndexOptions, OptionCode
from embedswap.summary.types_post import Fact

Method = Literal["exact", "hnsw"]
QuerySource = Literal["legacy", "candidate"]


class CellValues(Strict):
    """One cell of the grid: one query source on the index at one re-embedded share, searched one way; per query
    (in the workload's order; None where a query has no judged relevant document)."""
    queries: QuerySource
    share: Number
    method: Method
    ndcg_at_10: list[Number | None] = []
    recall_at_5: list[Number | None] = []
    top5_overlap: list[Number | None] = []  # against the legacy-only search (share 0, legacy queries), same method
    hnsw_recall: list[Number] = []  # HNSW cells: the share of the exact top k the index returned


class DistanceValues(Strict):
    """Exact searches with one distance, top-5 overlap per query against legacy on legacy with that distance."""
    distance: Literal["cosine", "inner_product", "l2"]
    cross_overlap: list[Number | None] = []  # candidate queries on the legacy documents
    full_overlap: list[Number | None] = []  # candidate queries on the candidate documents


class AdapterValues(Strict):
    """The Procrustes map fitted on ``train_docs`` document pairs, searched on the ``test_docs`` held out."""
    identity: bool
    from_identity: Number
    train_docs: int
    test_docs: int
    residual_train: Number
    residual_test: Number
    residual_unmapped: Number  # the held-out documents without the map
    basis: Literal["ndcg_at_10", "top5_overlap"]
    # per query, the metric of each search on the held-out documents: legacy, cross, adapter, full
    per_query: dict[str, list[Number | None]] = {}


class StoreInfo(Strict):
    kind: Literal["embedded", "dsn"]
    server_version: str
    pgvector_version: str
    dsn_env: str | None = None  # the variable's name only: the DSN is never stored


class IndexCandidate(Section):
    dims: int | None = None
    cells: list[CellValues] = []
    distances: list[DistanceValues] = []
    adapter: AdapterValues | None = None
    norm_ratio: Spread | None = None  # candidate / legacy document vector length
    seconds: dict[str, Number] = {}

    def cell(self, queries: QuerySource, share: float, method: Method) -> CellValues | None:
        return next((c for c in self.cells if c.queries == queries and abs(c.share - share) < 1e-9
                     and c.method == method), None)

    def distance(self, name: str) -> DistanceValues | None:
        return next((d for d in self.distances if d.distance == name), None)


class HnswPlan(Strict):
    """Which shares were searched through HNSW (``index.hnsw_shares`` resolved for the corpus): ``all`` every
    share, ``ends`` only 0 and 1, the shares in between exactly only."""
    setting: Literal["auto", "all", "ends"]
    mode: Literal["all", "ends"]
    documents: int
    auto_max_documents: int
    shares: list[Number]  # searched through HNSW (and exactly)
    exact_only: list[Number] = []  # searched exactly only: no HNSW recall there


class Index(Section):
    distance: Literal["cosine", "inner_product", "l2"] | None = None
    k: int | None = None
    ef_search: int | None = None
    shares: list[Number] = []
    # None: the index capture recorded no plan, every share had its HNSW build and search
    hnsw_plan: HnswPlan | None = None
    seed: int | None = None
    judged: bool = False
    queries: int = 0
    store: StoreInfo | None = None
    by_candidate: dict[str, IndexCandidate] = {}
    # keep / orthogonal / affine / re-score / dual-read against the re-embed, per candidate (issue 57; absent before)
    options: dict[str, IndexOptions] = {}

    def of(self, name: str) -> IndexCandidate | None:
        return self.by_candidate.get(name)


class CellDecision(Strict):
    """One cell against the legacy-only search: means, paired verdicts (cell - legacy per query), HNSW recall."""
    queries: QuerySource
    share: Number
    method: Method
    ndcg_at_10: float | None = None
    recall_at_5: float | None = None
    top5_overlap: float | None = None
    ndcg: Verdict | None = None
    recall: Verdict | None = None
    overlap: Verdict | None = None
    hnsw_recall: float | None = None


class ReembedCost(Strict):
    """An estimate from measured parts: the corpus over the candidate's measured docs/s."""
    corpus_size: int
    point: str  # the operating point whose throughput it uses (concurrent, c<n>)
    docs_per_s: float
    docs_per_s_low: float | None = None
    docs_per_s_high: float | None = None
    token_scale: float = 1.0
    hours_per_replica: float
    hours_low: float | None = None
    hours_high: float | None = None
    window_hours: float
    replicas: int
    replicas_high: int | None = None


class AdapterDecision(Strict):
    identity: bool
    residual_test: float
    residual_unmapped: float
    retained: float | None = None  # adapter / full re-embed (held-out documents)
    cross_retained: float | None = None  # without the map
    verdict: Verdict | None = None  # adapter - full re-embed per query


# the one index decision's vocabulary (issue 62): keep the index, map the queries (with the map's kind), re-score
# the old top K, read both indexes during a re-embed, re-embed, or blocked (the dimensions differ)
IndexChoice = Literal["keep", "map", "rescore", "dual_read", "re_embed", "blocked", "not_measured"]
MapKind = Literal["orthogonal", "affine", "mlp"]
# the sample's cross search (this module's grid), the evidence where the index options did not decide
SampleCode = Literal["keep_index", "re_embed", "adapter", "blocked", "not_measured"]
_FROM_SAMPLE: dict[str, tuple[IndexChoice, MapKind | None]] = {
    "keep_index": ("keep", None), "adapter": ("map", "orthogonal"),  # the sample's adapter is the Procrustes map
    "re_embed": ("re_embed", None), "blocked": ("blocked", None), "not_measured": ("not_measured", None)}


def choice_of(code: str) -> tuple[IndexChoice, MapKind | None]:
    """A sample code or an index option's code in the one vocabulary: (choice, map kind)."""
    if code in _FROM_SAMPLE:
        return _FROM_SAMPLE[code]
    if code in ("orthogonal", "affine", "mlp"):
        return "map", code  # type: ignore[return-value]
    return code, None  # type: ignore[return-value]  # keep, rescore, dual_read, re_embed: the same word


class IndexDecision(Strict):
    """One candidate's index decision: ``choice`` (with ``map_kind``), decided on the index options where they were
    measured and decided (the corpus' held-out folds), else on the sample's cross search; ``sample`` and the figures
    below are that search's evidence."""
    choice: IndexChoice
    map_kind: MapKind | None = None
    decided_on: Literal["options", "sample"] = "sample"
    sample: SampleCode
    reason: str = ""
    distance: str | None = None
    basis: Literal["ndcg_at_10", "top5_overlap"] | None = None
    cross: Verdict | None = None  # new queries on the old index against old on old (the basis metric)
    backward_compatible: bool | None = None  # new/old at least old/old within the margin (Shen et al. 2020)
    retention: float | None = None  # cross / full re-embed (the basis metric, exact)
    hnsw_recall: float | None = None  # HNSW against exact, mean over the cells
    # length: 'same' vectors, 'length_only' (cosine unchanged, inner product or L2 changed), 'direction'
    length: Literal["same", "length_only", "direction"] | None = None
    advice: Literal["none", "keep_cosine", "use_cosine_or_renormalise"] = "none"
    cells: list[CellDecision] = []
    mixed_worse: list[Number] = []  # re-embedded shares whose mixed index ranks worse than legacy (exact)
    adapter: AdapterDecision | None = None
    cost: ReembedCost | None = None  # at the article's operating point (concurrent)
    cost_best: ReembedCost | None = None  # at the sweep's best concurrency
    # the queries the candidate's cells were searched with (experiment.config.index.queries): the decision holds
    # for those only ('shim': queries sent through the shim, not the address swap's); None: not measured, or a
    # summary decided before the condition was stored (the upgrade adds it)
    condition: Fact | None = None

    @property
    def option(self) -> OptionCode | None:
        """The choice in the index options' words (their names in the catalogue); None: blocked or not measured."""
        if self.choice == "map":
            return self.map_kind or "orthogonal"
        return None if self.choice in ("blocked", "not_measured") else self.choice  # type: ignore[return-value]

    @classmethod
    def sampled(cls, sample: SampleCode, **fields: object) -> "IndexDecision":
        """A decision made on the sample's cross search."""
        choice, kind = choice_of(sample)
        kind_field = {"map_kind": kind} if kind is not None else {}  # unset where there is no map: not stored
        return cls(choice=choice, decided_on="sample", sample=sample, **kind_field, **fields)  # type: ignore[arg-type]
