"""The unit pass computes each distinct figure set, each distinct summary upgrade and each distinct summary's
decisions (typed_summary.decisions_of; decide() of each distinct typed summary) and each distinct latency point's
bootstrap once (tests/conftest.py, tests/support/memo.py): sound only because all are deterministic, which this
checks with the real functions, twice, on the complete summary."""

from __future__ import annotations

from typing import Any

import memo
from embedswap.analysis.upgrade import read_summary
from typed_summary import decisions_of


def test_the_same_summary_draws_the_same_bytes(figures_drawn_once: Any, complete: dict[str, Any]) -> None:
    summary = read_summary(complete)
    first, second = figures_drawn_once(summary, "ko"), figures_drawn_once(summary, "ko")
    assert first and first == second  # every figure, byte for byte
    assert figures_drawn_once(summary, "en").keys() != first.keys()  # the language is part of what is drawn


def test_the_same_summary_upgrades_to_the_same_decisions(summaries_upgraded_once: Any,
                                                          complete: dict[str, Any]) -> None:
    first, second = summaries_upgraded_once(complete), summaries_upgraded_once(complete)
    assert first["decisions"] and first == second
    assert first is not second and "decisions" not in complete  # a copy each time; the input is left as it was


def test_the_same_summary_decides_the_same_decisions(complete: dict[str, Any]) -> None:
    remembered = decisions_of(complete)
    assert remembered and decisions_of(complete) == remembered and decisions_of(complete) is not remembered
    memo.FRESH["now"] = True  # as under monkeypatch: computed again, not read from the memo
    try:
        assert decisions_of(complete) == remembered
    finally:
        memo.FRESH["now"] = False


def test_the_same_typed_summary_decides_as_the_real_decide(decided_once: Any, complete: dict[str, Any]) -> None:
    import embedswap.analysis as analysis
    from embedswap.analysis import upgrade

    summary = read_summary(complete)
    remembered = analysis.decide(summary)
    assert analysis.decide is not decided_once and upgrade.decide is analysis.decide  # the names bound are the memo's
    again = analysis.decide(summary)
    assert again is not remembered and again.model_dump_json() == remembered.model_dump_json()
    assert decided_once(summary).model_dump_json() == remembered.model_dump_json()  # the real function, afresh
    summary.experiment.config["decisions"] = {"margins": {"ndcg_at_10": 0.5}}  # another input: decided again
    assert analysis.decide(summary).ranking.tolerance.ndcg_margin == 0.5 != remembered.ranking.tolerance.ndcg_margin


def test_the_same_latency_point_estimates_as_the_real_bootstrap(latency_estimated_once: Any,
                                                                 complete: dict[str, Any]) -> None:
    import numpy as np

    from embedswap.analysis import latency_intervals
    from embedswap.analysis.intervals import Requests
    from embedswap.analysis.latency_points import latency_points_of

    summary = read_summary(complete)
    name, target = next((n, t) for n, t in summary.latency.by_target.items() if latency_points_of(t))
    requests = next(r for _, _, p in latency_points_of(target) if (r := Requests.of(p.requests)) is not None)
    remembered, replicates = latency_intervals.estimate(requests, 7)
    fresh, fresh_replicates = latency_estimated_once(requests, 7)
    assert remembered.model_dump_json() == fresh.model_dump_json() and remembered.p50.low is not None
    assert replicates.keys() == fresh_replicates.keys()
    assert all(np.array_equal(replicates[k], fresh_replicates[k], equal_nan=True) for k in replicates)
    assert latency_intervals.estimate(requests, 8)[1]["p50"].tolist() != replicates["p50"].tolist()  # the seed counts


def test_the_same_ranking_variant_decides_as_the_real_one(ranking_variant_decided_once: Any,
                                                          complete: dict[str, Any]) -> None:
    from embedswap.analysis import decisions_config, ranking_verdict

    summary = read_summary(complete)
    name, entry = next(iter(summary.ranking.by_candidate.items()))
    args = (entry, "shim", summary.ranking.legacy, decisions_config(summary), summary.plan.ranking_question(name))
    remembered = ranking_verdict._variant_verdict(*args)
    assert remembered.tests and ranking_verdict._variant_verdict is not ranking_variant_decided_once
    again = ranking_verdict._variant_verdict(*args)
    assert again is not remembered and again.model_dump_json() == remembered.model_dump_json()
    assert ranking_variant_decided_once(*args).model_dump_json() == remembered.model_dump_json()
    assert ranking_verdict._variant_verdict(entry, "naive", *args[2:]).model_dump_json() != remembered.model_dump_json()
