"""Claims as data (issue 55): every figure the post prints with a verdict is the stored value of the metric its
sentence names, a comparison of two candidates rests on a stored pairwise verdict, and no two claims about one
thing disagree; on the fixtures, on property-generated summaries (every code, direction, reason, deciding metric,
fault state, one or two candidates) in four languages, and against renderers broken on purpose
(tests/support/claims_check.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embedswap.analysis.upgrade import read_summary
from embedswap.report import claim as claim_module
from embedswap.report import post as post_module
from embedswap.report import post_claims
from embedswap.report.catalogue import LANGUAGES
from embedswap.summary.model import Summary
from embedswap.summary.types_equivalence import Verdict
from embedswap.summary.types_faults import FaultDecisions, TargetFaultDecision
from claims_check import claim_problems
from typed_summary import as_typed, post_redrawn

FIXTURES = Path(__file__).parents[1] / "fixtures"
SUMMARIES = sorted(p.name for p in FIXTURES.glob("summary_*.json"))
_LOADED: dict[str, Summary] = {}


def _summary(name: str) -> Summary:
    """A fresh copy of a fixture (decided once: its decisions' bootstrap takes seconds)."""
    if name not in _LOADED:
        _LOADED[name] = read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))
    return _LOADED[name].model_copy(deep=True)


@pytest.mark.parametrize("name", SUMMARIES)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_claim_of_the_fixtures_is_its_stored_metric(name: str, lang: str) -> None:
    assert claim_problems(_summary(name), lang) == []


def test_the_demo_shape_names_the_deciding_metric_and_the_pooled_ndcg() -> None:
    """The issue's case: the top-5 overlap decides the address swap; its figure is printed under its own name and
    nDCG@10's pooled change (not one language's) beside it."""
    summary = _summary("summary_complete.json")
    naive = summary.decisions.ranking.of("vllm").naive
    assert naive.equivalence.slices[0] == "top5_overlap"
    pooled = naive.tests["ndcg_at_10"].delta
    assert naive.metrics["ndcg_at_10"].estimate == pytest.approx(pooled)
    post = post_module.render_post(as_typed(summary), "en", {})
    assert f"top-5 overlap − 1: {naive.equivalence.estimate:+.3f}" in post
    assert f"nDCG@10 change: {pooled:+.3f}" in post


def test_the_shim_count_is_decisions_shim() -> None:
    summary = _summary("summary_complete.json")
    shim = summary.decisions.shim["vllm"]
    post = post_module.render_post(as_typed(summary), "en", {})
    assert f"closes {len(shim.closed)} of {shim.differ_before} differences of `vllm`" in post


def test_two_candidates_are_compared_only_by_their_stored_pair_verdict() -> None:
    summary = _summary("summary_complete.json")
    pair = summary.decisions.latency.pair("vllm", "dynamo")
    assert pair is not None and pair.ratio.verdicts["concurrent"].docs_per_s.code == "equivalent"
    post = post_module.render_post(as_typed(summary), "en", {})
    assert "intervals do not overlap" not in post and "equivalent within margin 1.10×" in post


# --- renderers broken on purpose ----------------------------------------------------------------------------


def test_a_metric_printed_under_another_metrics_name_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's first error: every ranking figure labelled "nDCG@10 change", whatever metric it is."""
    real = claim_module.label
    monkeypatch.setattr(claim_module, "label", lambda ctx, metric: real(ctx, "ndcg_at_10"))
    problems = claim_problems(_summary("summary_complete.json"), "en")
    assert any("top5_overlap" in p and "printed under 'ndcg@10 change'" in p for p in problems), problems


def test_a_comparison_of_two_candidates_without_a_pair_verdict_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's third error: "vllm is faster than dynamo" from two ratios to the legacy server."""
    def from_ratios(ctx: Any) -> list[post_claims.LatencyClaims]:
        line = next(s for s in ctx.decisions.post.document.statements("post.latency_claim") if "dynamo" in s.subjects)
        rate = next(c for c in line.claims_of("dynamo") if c.metric == "conc_rate")  # dynamo over the legacy server
        worded = claim_module.stated(ctx, rate.model_copy(update={"subjects": ["dynamo", "vllm"]}))
        first = post_claims.latency_claims(ctx)[0]
        return [first.model_copy(update={"names": ["dynamo", "vllm"], "conc_rate": worded})]

    monkeypatch.setattr(post_module, "pair_claims", from_ratios)
    problems = claim_problems(_summary("summary_complete.json"), "en")
    assert any("['dynamo', 'vllm']" in p and "not a claim of the post document" in p for p in problems), problems


def test_two_sentences_that_contradict_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second ranking line reads the shim's verdict as the address swap's: two claims about vllm's address swap
    on one metric that disagree (each true of its own source)."""
    real = post_claims.ranking_claims

    def crossed(ctx: Any) -> list[post_claims.RankingClaims]:
        found = real(ctx)
        first = found[0]
        name = ctx.candidates[0]
        line = next(s for s in ctx.decisions.post.document.statements("post.ranking_line") if name in s.subjects)
        shim = next(c for c in line.claims_of(name) if c.variant == "shim")
        wrong = claim_module.stated(ctx, shim.model_copy(update={"metric": first.naive.metric,
                                                                 "variant": "address_swap"}), "delta")
        return [*found, first.model_copy(update={"naive": wrong})]

    monkeypatch.setattr(post_module, "ranking_claims", crossed)
    problems = claim_problems(_summary("summary_complete.json"), "en")
    assert any("not a claim of the post document" in p for p in problems), problems


def test_a_figure_or_interval_not_the_document_claims_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that prints a latency claim's lower bound from elsewhere (moved down by a tenth: another
    interval's bound, as the widened verdict's once stood beside the ratio's own): the claim is still the document's
    by its verdict, figure and label, but its printed interval is not the document claim's (what
    tests/support/post_numbers.py once looked up among every stored verdict's numbers)."""
    real = post_claims.stated

    def moved(ctx: Any, c: Any, kind: str = "ratio") -> claim_module.Claim:
        out = real(ctx, c, kind)
        if kind != "ratio" or c.estimate.low is None:
            return out
        out = out.model_copy(update={"low": claim_module.times(ctx, c.estimate.low - 0.1)})
        return out.model_copy(update={"text": claim_module.words(ctx, out),
                                      "short": claim_module.words(ctx, out, "claim_brief")})

    summary = _summary("summary_complete.json")
    assert claim_problems(summary, "en") == []
    monkeypatch.setattr(post_claims, "stated", moved)
    problems = claim_problems(summary, "en")
    assert any("prints [" in p and "its document claim" in p for p in problems), problems


# --- property-generated summaries ---------------------------------------------------------------------------

CODES = ("equivalent", "non_inferior", "different", "inconclusive", "failed")
REASONS = ("host_drift", "missing_interval", "interval_crosses_margin", "too_few", "not_significant_after_holm",
           "slice_worse", "interval_inside_margin")


@st.composite
def verdicts(draw: st.DrawFn, estimate: float | None, directions: tuple[str, str], slices: list[str] | None = None
             ) -> Verdict:
    code = draw(st.sampled_from(CODES))
    # non-inferior is said only of the harmless side (faster, better: the second of ``directions``)
    direction = (draw(st.sampled_from(directions)) if code == "different" else directions[1]
                 if code == "non_inferior" else None)
    est = estimate if estimate is not None else draw(st.floats(-1, 1, allow_nan=False))
    spread = draw(st.floats(0.001, 0.5))
    chosen = draw(st.permutations(slices))[:draw(st.integers(1, len(slices)))] if slices else []
    return Verdict(code=code, direction=direction, estimate=est, low=est - spread, high=est + spread,
                   margin=draw(st.sampled_from((0.02, 0.05, 1.1))), n=draw(st.integers(3, 200)),
                   n_needed=draw(st.one_of(st.none(), st.integers(2, 500))), reason=draw(st.sampled_from(REASONS)),
                   slices=chosen)


@st.composite
def summaries(draw: st.DrawFn) -> Summary:
    summary = _summary(draw(st.sampled_from(SUMMARIES)))
    d = summary.decisions
    for name, c in d.ranking.by_candidate.items():
        for variant in (c.naive, c.shim):
            metrics = list(variant.metrics) or ["ndcg_at_10"]
            combined = draw(verdicts(None, ("worse", "better"), metrics))
            if combined.slices and combined.slices[0] in variant.metrics:  # its figure is its first metric's
                combined = combined.but(estimate=variant.metrics[combined.slices[0]].estimate)
            variant.equivalence = combined
            for metric, v in list(variant.metrics.items()):
                variant.metrics[metric] = draw(verdicts(v.estimate, ("worse", "better")))
            if combined.slices and combined.slices[0] in variant.metrics:
                variant.equivalence = combined.but(estimate=variant.metrics[combined.slices[0]].estimate)
    ratios = [r for r in d.latency.ratios.values()] + [p.ratio for p in d.latency.pairs]
    for ratio in ratios:
        for run, point in ratio.verdicts.items():
            for figure in ("p50", "docs_per_s"):
                interval = ratio.figure(run, figure)
                value = interval.value if interval is not None else getattr(point, figure).estimate
                setattr(point, figure, draw(verdicts(value, ("slower", "faster"))))
    names = list(summary.roles.candidates or [summary.roles.candidate])
    codes = draw(st.lists(st.sampled_from(("none", "transport_within_margin", "transport_above_margin",
                                           "corrupting")), min_size=len(names), max_size=len(names)))
    d.faults = FaultDecisions(margin=0.05, by_target={n: TargetFaultDecision(
        code=c, corrupt={"nan": 1} if c == "corrupting" else {}) for n, c in zip(names, codes)})
    return post_redrawn(summary)  # the post's statements drawn from the verdicts set here


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summary=summaries(), lang=st.sampled_from(LANGUAGES))
def test_every_generated_summary_states_its_claims_as_stored(summary: Summary, lang: str) -> None:
    assert claim_problems(summary, lang) == []
