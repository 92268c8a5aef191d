"""The ranking decision by equivalence verdicts (analysis/ranking_verdict over analysis/equivalence), on hand-built
summaries. Expected values are worked out in the comments."""
from __future__ import annotations

import pytest
from pydantic import ValidationError
from typed_summary import summary_body

from embedswap.analysis import ranking_verdict as rv
from embedswap.summary.types_decisions import RankingDecision
from embedswap.analysis import decisions_config

N = 24


def _rows(ndcg: list[float], recall: list[float], overlap: list[float]) -> dict:
    return {f"q{i}": {"ndcg_at_10": n, "recall_at_5": r, "top5_overlap": o}
            for i, (n, r, o) in enumerate(zip(ndcg, recall, overlap))}


def _variant(d_ndcg: list[float], d_recall: list[float], overlap: list[float]) -> dict:
    return {"measured": True, "top5_overlap": sum(overlap) / len(overlap),
            "per_query": _rows([0.5 + d for d in d_ndcg], [0.5 + d for d in d_recall], overlap)}


SAME = ([0.0] * N, [0.0] * N, [1.0] * N)
# the issue's case: nDCG@10 -0.06 on average (12 queries -0.30, 12 +0.18: sd 0.245, se 0.050, paired p ~ 0.24),
# recall@5 -0.05 (12 x -0.2, 12 x +0.1: p ~ 0.12), top-5 overlap 0.958 (19 queries keep it, 5 lose one document)
ISSUE = ([-0.30] * 12 + [0.18] * 12, [-0.2] * 12 + [0.1] * 12, [1.0] * 19 + [0.8] * 5)
# clearly worse: every query loses 0.25-0.35 nDCG@10 and 0.2 recall@5, two documents of the top 5
WORSE = ([-0.25, -0.35] * 12, [-0.2] * N, [0.6] * N)


def _summary(naive: tuple, shim: tuple, config: dict | None = None) -> dict:
    legacy = {"measured": True, "per_query": _rows([0.5] * N, [0.5] * N, [1.0] * N)}
    return {"model": {"spec": "package:x"}, "roles": {"legacy": "legacy", "candidates": ["vllm"]},
            "experiment": {"config": config or {}},
            "ranking": {"measured": True, "legacy": legacy,
                        "by_candidate": {"vllm": {"measured": True, "naive": _variant(*naive),
                                                  "shim": _variant(*shim), "deltas": {}}}}}


def _decide(naive: tuple, shim: tuple, config: dict | None = None) -> RankingDecision:
    body = summary_body(_summary(naive, shim, config))
    out = rv.ranking_verdicts(body, decisions_config(body))
    RankingDecision.model_validate(out.model_dump(exclude_unset=True))  # what summary.json stores reads back
    return out


def test_the_issue_case_is_undecided_not_unchanged() -> None:
    out = _decide(ISSUE, ISSUE)
    entry = out.by_candidate["vllm"]
    shim = entry.shim
    # the paired randomization tests see no difference: the old rule called this "unchanged", decision "none"
    assert shim.tests["ndcg_at_10"].verdict == "no_difference"
    assert shim.tests["recall_at_5"].verdict == "no_difference"
    assert shim.equivalence.code == "inconclusive" and shim.unchanged is None
    assert shim.metrics["ndcg_at_10"].estimate == pytest.approx(-0.06)
    assert shim.metrics["ndcg_at_10"].code == "inconclusive"
    assert shim.metrics["recall_at_5"].estimate == pytest.approx(-0.05)
    assert entry.decision == "undecided"
    # -0.06 lies beyond the 0.02 margin: the n that would show it (two-sided t at 0.05, 80 % power, sd 0.245) is
    # about ((1.96 + 0.84) * 0.245 / 0.06)^2 ~ 131; recall: ((2.8 * 0.153) / 0.05)^2 ~ 74; the overlap change
    # -0.042 (sd 0.083) lies inside its 0.05 margin, so non-inferiority needs ((1.645 + 0.84) * 0.083 / 0.0083)^2
    # ~ 618 queries: the slowest comparison decides how many queries the decision needs
    metrics = shim.metrics
    assert 125 <= metrics["ndcg_at_10"].n_needed <= 140
    assert 70 <= metrics["recall_at_5"].n_needed <= 82
    assert metrics["top5_overlap"].code == "inconclusive"
    assert 590 <= metrics["top5_overlap"].n_needed <= 640
    assert entry.n_needed == shim.equivalence.n_needed == metrics["top5_overlap"].n_needed > N
    assert out.margins["ndcg_at_10"] == 0.02 and out.margins["recall_at_k"] == 0.02


def test_identical_rankings_are_equivalent_and_unchanged() -> None:
    # every per-query delta is exactly 0 (no variance): the interval is the value itself, inside every margin
    entry = _decide(SAME, SAME).by_candidate["vllm"]
    for kind in ("naive", "shim"):
        assert getattr(entry, kind).equivalence.code == "equivalent"
        assert getattr(entry, kind).unchanged is True
        assert set(getattr(entry, kind).metrics) == {"ndcg_at_10", "recall_at_5", "top5_overlap"}
    assert entry.decision == "none" and entry.n_needed is None


def test_clearly_worse_is_different_and_decides_as_before() -> None:
    entry = _decide(WORSE, SAME).by_candidate["vllm"]
    assert entry.naive.equivalence.code == "different"
    assert entry.naive.equivalence.direction == "worse"
    assert entry.naive.unchanged is False
    assert entry.decision == "client"  # address swap alone changes it, the shim brings it back
    entry = _decide(SAME, WORSE).by_candidate["vllm"]
    assert entry.shim.unchanged is False and entry.decision == "reindex"


def test_an_inconclusive_naive_variant_leaves_the_client_question_undecided() -> None:
    entry = _decide(ISSUE, SAME).by_candidate["vllm"]
    assert entry.shim.unchanged is True and entry.naive.unchanged is None
    assert entry.decision == "undecided" and entry.n_needed == entry.naive.equivalence.n_needed


def test_margins_come_from_the_experiment() -> None:
    # wider margins: nDCG@10 90 % interval -0.06 +- 1.714 * 0.050 = [-0.146, 0.026] inside +-0.2; recall
    # [-0.103, 0.003] inside +-0.2; overlap - 1: mean -0.042, low ~ -0.071 > -0.1 -> all equivalent
    config = {"decisions": {"margins": {"ndcg_at_10": 0.2, "recall_at_k": 0.2, "top_k_overlap": 0.1}}}
    out = _decide(ISSUE, ISSUE, config)
    assert out.margins["ndcg_at_10"] == 0.2 and out.margins["top_k_overlap"] == 0.1
    assert out.tolerance.top5_overlap_min == pytest.approx(0.9)
    entry = out.by_candidate["vllm"]
    assert entry.shim.equivalence.code == "equivalent" and entry.decision == "none"
    with pytest.raises(ValidationError):  # a margin the user wrote wrong is not silently replaced by the default
        _decide(SAME, SAME, {"decisions": {"margins": {"ndcg_at_10": -1}}})


# --- MRR@10 (issue 57, point 2) ------------------------------------------------------------------------------------
def _mrr_summary(legacy_mrr: list[float], variant_mrr: list[float], langs: list[str] | None = None) -> dict:
    """nDCG, recall and the overlap unchanged on every query; MRR@10 per query as given (one relevant document each:
    1.0 = at rank 1, 1/3 = at rank 3)."""
    def rows(mrr: list[float]) -> dict:
        return {f"q{i}": {"ndcg_at_10": 0.5, "recall_at_5": 0.5, "mrr_at_10": m, "top5_overlap": 1.0,
                          **({"lang": langs[i]} if langs else {})} for i, m in enumerate(mrr)}
    variant = {"measured": True, "per_query": rows(variant_mrr)}
    return {"model": {"spec": "package:x"}, "roles": {"legacy": "legacy", "candidates": ["vllm"]},
            "ranking": {"measured": True, "legacy": {"measured": True, "per_query": rows(legacy_mrr)},
                        "by_candidate": {"vllm": {"measured": True, "naive": variant, "shim": variant,
                                                  "deltas": {}}}}}


def test_an_aa_pair_is_equivalent_on_mrr_and_combined() -> None:
    # the same per-query values on both sides (legacy against itself): every delta 0, inside every margin
    values = [1.0, 0.5, 1 / 3, 1.0, 0.0, 0.25] * 4
    body = summary_body(_mrr_summary(values, values))
    out = rv.ranking_verdicts(body, decisions_config(body))
    RankingDecision.model_validate(out.model_dump(exclude_unset=True))
    for kind in ("naive", "shim"):
        variant = getattr(out.by_candidate["vllm"], kind)
        assert set(variant.metrics) == {"ndcg_at_10", "recall_at_5", "mrr_at_10", "top5_overlap"}
        assert variant.metrics["mrr_at_10"].code == "equivalent"
        assert variant.metrics["mrr_at_10"].estimate == 0.0
        assert variant.tests["mrr_at_10"].verdict == "no_difference"
        assert variant.equivalence.code == "equivalent" and variant.unchanged is True
    assert out.by_candidate["vllm"].decision == "none"
    assert out.margins["mrr_at_10"] == 0.02 and out.tolerance.mrr_margin == 0.02


def test_the_first_hit_dropping_from_rank_1_to_3_is_different_on_mrr() -> None:
    # every query's relevant document moves from rank 1 to rank 3: MRR 1 -> 1/3, delta -2/3 on every query (far
    # outside 0.02, no spread: significant); nDCG/recall/overlap are held fixed, so MRR alone decides
    body = summary_body(_mrr_summary([1.0] * N, [1 / 3] * N))
    out = rv.ranking_verdicts(body, decisions_config(body))
    shim = out.by_candidate["vllm"].shim
    assert shim.metrics["mrr_at_10"].code == "different" and shim.metrics["mrr_at_10"].direction == "worse"
    assert shim.metrics["mrr_at_10"].estimate == pytest.approx(-2 / 3)
    assert shim.metrics["ndcg_at_10"].code == "equivalent"
    assert shim.tests["mrr_at_10"].verdict == "differs" and shim.tests["mrr_at_10"].delta == pytest.approx(-2 / 3)
    assert shim.equivalence.code == "different" and shim.unchanged is False
    assert out.by_candidate["vllm"].decision == "reindex"


def test_mrr_has_its_own_margin() -> None:
    # MRR -0.05 on every query: different at the default 0.02, equivalent at a margin of 0.1 set in experiment.yaml
    summary = _mrr_summary([1.0] * N, [0.95] * N)
    body = summary_body(summary)
    assert rv.ranking_verdicts(body, decisions_config(body)).by_candidate["vllm"].shim.equivalence.code == "different"
    body = summary_body({**summary, "experiment": {"config": {"decisions": {"margins": {"mrr_at_10": 0.1}}}}})
    out = rv.ranking_verdicts(body, decisions_config(body))
    assert out.margins["mrr_at_10"] == 0.1
    assert out.by_candidate["vllm"].shim.metrics["mrr_at_10"].code == "equivalent"


def test_mrr_is_decided_per_language() -> None:
    # ko keeps its first hits; en's drop from rank 1 to rank 2 on every query: the en slice is named
    langs = ["ko"] * N + ["en"] * N
    body = summary_body(_mrr_summary([1.0] * 2 * N, [1.0] * N + [0.5] * N, langs))
    shim = rv.ranking_verdicts(body, decisions_config(body)).by_candidate["vllm"].shim
    sliced = shim.slices["mrr_at_10"]
    assert sliced.by_slice["ko"].code == "equivalent" and sliced.by_slice["en"].code == "different"
    assert sliced.overall.slices == ["en"] and shim.metrics["mrr_at_10"].slices == ["en"]
    assert shim.metrics["mrr_at_10"].estimate == pytest.approx(-0.25)  # the pooled figure, not en's -0.5
    assert shim.equivalence.code == "different"


# --- a candidate serving another model (issue 57): superiority or non-inferiority, not sameness -------------------
BETTER = ([0.25, 0.35] * 12, [0.2] * N, [0.2] * N)  # every query gains 0.25-0.35 nDCG@10; another top 5
CLOSE = ([-0.05, 0.06] * 12, [0.0] * N, [0.2] * N)  # nDCG@10 +0.005 (sd 0.056): inside the margin below, not above


# the plan step 03 stores for a candidate serving another model
ANOTHER_PLAN = {"measured": True, "by_candidate": {"vllm": {
    "comparison": "another_model", "probes_against": "own", "ranking_question": "non_inferiority",
    "model": {"measured": True, "code": "another_model"}}}}


def _another(naive: tuple, shim: tuple) -> RankingDecision:
    raw = _summary(naive, shim)
    raw["plan"] = ANOTHER_PLAN
    body = summary_body(raw)
    assert body.plan.another_model("vllm")
    out = rv.ranking_verdicts(body, decisions_config(body))
    RankingDecision.model_validate(out.model_dump(exclude_unset=True))
    return out


def test_another_model_better_on_the_judgements_is_superior_not_different() -> None:
    entry = _another(BETTER, BETTER).by_candidate["vllm"]
    assert entry.decision == "another_model"
    # the same figures for the same model are a change to look at (different, better; the top 5 moved)
    same_model = _decide(BETTER, BETTER).by_candidate["vllm"]
    assert same_model.shim.equivalence.code == "different" and same_model.decision == "reindex"
    # for another model: non-inferior with the direction better (superiority), and the top-5 overlap, which
    # another model changes by nature, takes no part
    shim = entry.shim
    assert shim.equivalence.code == "non_inferior"
    assert all(v.code == "non_inferior" and v.direction == "better" for v in shim.metrics.values())
    assert shim.unchanged is True and "top5_overlap" not in shim.metrics
    assert shim.metrics["ndcg_at_10"].reason == "better_beyond_margin"


def test_another_model_close_to_legacy_is_non_inferior_and_worse_is_different() -> None:
    close = _another(CLOSE, CLOSE).by_candidate["vllm"].shim
    # the interval's low end is above -0.02 while its high end passes +0.02: inconclusive as sameness,
    # non-inferior as a model change
    assert _decide(CLOSE, CLOSE).by_candidate["vllm"].shim.metrics["ndcg_at_10"].code == "inconclusive"
    assert close.metrics["ndcg_at_10"].code == "non_inferior" and close.metrics["ndcg_at_10"].direction is None
    worse = _another(WORSE, WORSE).by_candidate["vllm"].shim
    assert worse.equivalence.code == "different" and worse.equivalence.direction == "worse"
    assert worse.unchanged is False


def test_another_model_better_in_every_language_stays_superior_after_holm() -> None:
    raw = _summary(BETTER, BETTER)
    langs = ["en", "ko"] * (N // 2)
    for side in (raw["ranking"]["legacy"], raw["ranking"]["by_candidate"]["vllm"]["shim"]):
        for i, row in enumerate(side["per_query"].values()):
            row["lang"] = langs[i]
    raw["plan"] = ANOTHER_PLAN
    body = summary_body(raw)
    shim = rv.ranking_verdicts(body, decisions_config(body)).by_candidate["vllm"].shim
    assert set(shim.slices["ndcg_at_10"].by_slice) == {"en", "ko"}
    assert (shim.metrics["ndcg_at_10"].code, shim.metrics["ndcg_at_10"].direction) == ("non_inferior", "better")
