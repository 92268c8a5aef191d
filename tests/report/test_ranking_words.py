"""One rule words a ranking verdict (issue 62, point 3): the report's ranking line and the post's claim follow the
same verdict (``RankingVariant.speaking``, the plan's question) keyed the same way (``stats.equivalence.message_key``). Before,
for a candidate serving another model, the report said "superior" only when every metric was better while the post
said nDCG@10's verdict: nDCG@10 better and recall merely not worse read "not worse" in one and "better" in the
other."""

from __future__ import annotations

import pytest

from embedswap.report.catalogue import catalogue
from embedswap.report.sections.ranking import _state
from embedswap.stats.equivalence import Verdict, message_key, shown_direction
from embedswap.summary.types_decisions import RankingVariant

BETTER = Verdict(code="non_inferior", direction="better", estimate=0.2, low=0.1, high=0.3, margin=0.05, n=24)
NOT_WORSE = Verdict(code="non_inferior", estimate=0.01, low=-0.02, high=0.04, margin=0.05, n=24)
WORSE = Verdict(code="different", direction="worse", estimate=-0.2, low=-0.3, high=-0.1, margin=0.05, n=24)
SAME = Verdict(code="equivalent", estimate=0.0, low=-0.01, high=0.01, margin=0.05, n=24)


def _variant(ndcg: Verdict, recall: Verdict, combined: Verdict) -> RankingVariant:
    return RankingVariant(unchanged=combined.acceptable, queries=24, equivalence=combined,
                          metrics={"ndcg_at_10": ndcg, "recall_at_5": recall})


@pytest.mark.parametrize("ndcg, recall, combined, state", [
    (BETTER, NOT_WORSE, NOT_WORSE, "rank_better"),  # the case the two rules worded apart
    (BETTER, BETTER, NOT_WORSE, "rank_better"),
    (NOT_WORSE, BETTER, NOT_WORSE, "rank_not_worse"),
    (WORSE, NOT_WORSE, WORSE, "rank_worse"),
])
def test_another_model_s_ranking_is_worded_from_the_verdict_the_post_claims(ndcg: Verdict, recall: Verdict,
                                                                            combined: Verdict, state: str) -> None:
    t = catalogue("en").terms
    variant = _variant(ndcg, recall, combined)
    spoken = variant.speaking("non_inferiority")
    assert spoken is ndcg  # the post's claim for another model is nDCG@10's (post_claims._variant_claims)
    assert _state(t, variant, False, "non_inferiority") == t[state]
    # the same key the post's words use: a better verdict says better in both
    assert ("better" in message_key(spoken.code, shown_direction(spoken))) == (state == "rank_better")


def test_the_same_model_is_worded_from_the_combined_verdict() -> None:
    t = catalogue("en").terms
    variant = _variant(BETTER, SAME, WORSE)
    assert variant.speaking("equivalence") is WORSE
    assert _state(t, variant, False, "equivalence") == t["rank_differs"]
    assert _state(t, _variant(SAME, SAME, SAME), False, "equivalence") == t["rank_same"]
