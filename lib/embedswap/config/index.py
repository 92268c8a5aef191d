"""``index:`` in experiment.yaml: the user's vector index, which the kit rebuilds in a real vector store to decide
whether it can be kept through the swap or must be re-embedded.

Example::

    index:
      distance: inner_product        # what the production index uses: cosine | inner_product | l2
      shares: [0, 0.25, 0.5, 0.75, 1]
      hnsw_shares: auto              # auto | all | ends: the shares that get their own HNSW build and search
      dsn_env: MY_PG_DSN             # optional: your own PostgreSQL (the DSN is read from $MY_PG_DSN, never written)
      corpus_size: 2000000           # documents in production, for the re-embed cost
      window_hours: 24
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from embedswap.config.base import _Strict


class IndexOptionsConfig(_Strict):
    """The index options of a model change (embedswap.index.options), each default with its reason.

    - ``folds`` = 5: each map is fitted on four fifths of the document pairs and scored on the fifth it never saw;
      five folds is the usual bias/variance compromise of k-fold cross-validation (Kohavi 1995), and every document
      is held out once.
    - ``rescore_depth`` = 100: how deep the old index is read before the new model re-ranks (embedflow's K); ten
      times the top 10 scored.
    - ``dual_read_share`` = 0.5: dual-read is measured halfway through the re-embed, where both indexes hold as much.
    - ``mlp_hidden`` = 256: the residual MLP map's hidden units (Drift-Adapter's small MLP; ~200,000 weights for
      384 dimensions, fitted in seconds on a CPU).
    - ``mlp_min_pairs`` = 1000: the fewest training pairs per fold the MLP map is fitted on; below it the network
      has several weights per target value and early stopping's held-out tenth is a handful of pairs (the sample
      workload's 20 pairs per fold), so it is left out rather than scored on noise.
    """

    enabled: bool = True
    folds: int = Field(5, ge=2, le=20)
    rescore_depth: int = Field(100, ge=10, le=1000)
    dual_read_share: float = Field(0.5, gt=0, lt=1)
    mlp_hidden: int = Field(256, ge=8, le=4096)
    mlp_min_pairs: int = Field(1000, ge=20)


class IndexConfig(_Strict):
    """The index to rebuild and how; each default with its reason.

    - ``distance`` = cosine: the most common choice for normalised sentence embeddings (and pgvector's
      ``vector_cosine_ops``); set it to what your index uses, since a change of vector length moves inner-product
      and L2 rankings but not cosine ones.
    - ``shares``: the re-embedded shares of a rolling re-embed (0: the index kept, 1: fully re-embedded).
    - ``hnsw_shares`` = auto: which shares get their own HNSW build and HNSW search. ``all``: every share.
      ``ends``: only shares 0 and 1 (the index kept and the index fully re-embedded, where HNSW recall against
      exact search is still stated); the mixed shares in between are searched exactly, which is where a mixed
      index's ranking loss shows, and the report says so. ``auto``: ``all`` up to ``hnsw_auto_max_documents``
      documents, ``ends`` above. Why: an HNSW build costs more than linearly in the documents (measured 2.1-2.5 s
      a build at 10,000 and 43-52 s at 100,000 documents, docs/measurements.md), one build per share made the
      index part grow 14.5x for 10x documents (``auto``: 6-8x), and the mixed shares' ranking loss is a property
      of the vectors that exact search measures without the index's own approximation on top.
    - ``hnsw_auto_max_documents`` = 20,000: where ``auto`` stops building every share; at 20,000 documents the
      whole part took 33 s with five builds on two cores (24 s with two), at 100,000 252 s (125-135 s with two).
    - ``k`` = 10: the depth of each search (nDCG@10 needs 10; recall@5 and the top-5 overlap read the first 5).
    - ``ef_search`` = 40, ``hnsw_m`` = 16, ``ef_construction`` = 64: pgvector's own defaults, so HNSW recall is
      what an index built without tuning gives.
    - ``adapter_train_share`` = 0.5: half of the documents fit the Procrustes map, the other half test it.
    - ``window_hours`` = 24: a re-embed that must finish within a day.
    - ``max_queries`` = 500: a seeded sample of the queries when there are more; every exact search scans the whole
      index, so a corpus-scale query set (thousands) would make the grid's exact searches the run's longest part,
      while 500 paired queries already decide a 0.02 nDCG margin (docs/measurements.md).
    """

    enabled: bool = True
    distance: Literal["cosine", "inner_product", "l2"] = "cosine"
    shares: list[float] = Field(default_factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0], min_length=2)
    hnsw_shares: Literal["auto", "all", "ends"] = "auto"
    hnsw_auto_max_documents: int = Field(20_000, ge=1)
    seed: int = 0
    k: int = Field(10, ge=10, le=100)
    ef_search: int = Field(40, ge=1, le=1000)
    hnsw_m: int = Field(16, ge=2, le=100)
    ef_construction: int = Field(64, ge=4, le=1000)
    # the queries a candidate's client sends after the swap: with the prompt added by the client (the shim's fix,
    # "shim") or as the old client sent them ("naive")
    queries: Literal["shim", "naive"] = "shim"
    dsn_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    schema_name: str = Field("embedswap", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    adapter_train_share: float = Field(0.5, gt=0, lt=1)
    corpus_size: int | None = Field(None, ge=1)
    mean_tokens: float | None = Field(None, gt=0)
    window_hours: float = Field(24.0, gt=0)
    max_queries: int = Field(500, ge=10)
    # keep / orthogonal / affine / re-score / dual-read, measured against the re-embed (issue 57)
    options: IndexOptionsConfig = Field(default_factory=IndexOptionsConfig)

    @field_validator("shares")
    @classmethod
    def _shares(cls, value: list[float]) -> list[float]:
        if any(not 0 <= s <= 1 for s in value):
            raise ValueError("every share is between 0 and 1")
        out = sorted({float(s) for s in value})
        if out[0] != 0 or out[-1] != 1:
            raise ValueError("shares must include 0 (the index kept) and 1 (fully re-embedded)")
        return out

    def hnsw_mode(self, n_docs: int) -> Literal["all", "ends"]:
        """``all`` or ``ends`` for an index of ``n_docs`` documents (``auto`` resolved by the corpus size)."""
        if self.hnsw_shares == "auto":
            return "all" if n_docs <= self.hnsw_auto_max_documents else "ends"
        return self.hnsw_shares

    def hnsw_share_list(self, n_docs: int) -> list[float]:
        """The shares that get an HNSW build and HNSW search; the others are searched exactly only."""
        if self.hnsw_mode(n_docs) == "all":
            return list(self.shares)
        return [self.shares[0], self.shares[-1]]  # 0 and 1: the validator keeps both and sorts
