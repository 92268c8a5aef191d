"""No claim beyond its verdict: variants of the complete summary whose stored latency and ranking verdicts are set
to each code; their post documents state no direction their verdicts lack (checked on the model, issue 63: the
markdown direction-word oracle this file once held is gone), and their posts, rendered in every language, say an
inconclusive latency verdict as such with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from embedswap.report.catalogue import LANGUAGES, catalogue
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from embedswap.summary.types_decisions import Verdict, HostDrift
from embedswap.analysis.upgrade import read_summary
from embedswap.report.post_checks import direction_problems, disagreement_problems
from typed_summary import as_typed, post_redrawn

FIXTURES = Path(__file__).parents[1] / "fixtures"
INCONCLUSIVE = {"en": "inconclusive", "ko": "판정할 수 없", "ja": "判定不能", "zh": "无法判定"}


def _load(name: str) -> Summary:
    return read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def _latency(summary: Summary, code: str, direction: str | None, reason: str = "") -> Summary:
    out = summary.model_copy(deep=True)
    latency = out.decisions.latency
    for ratio in [*latency.ratios.values(), *(p.ratio for p in latency.pairs)]:
        def verdict(old: Verdict | None) -> Verdict:
            base = old or Verdict(code="inconclusive")
            return base.model_copy(update={"code": code, "direction": direction, "reason": reason, "margin": 1.1,
                                           "n_needed": 900 if code == "inconclusive" else None})
        ratio.verdict = verdict(ratio.verdict)
        for point in ratio.verdicts.values():
            point.p50, point.docs_per_s = verdict(point.p50), verdict(point.docs_per_s)
        if reason == "host_drift":
            ratio.drift = HostDrift(factor=1.31)
    return _decided(out)


def _decided(out: Summary) -> Summary:
    """The post's decisions drawn again from the verdicts set here, as decide() draws them from its own: a
    statement that reads them (the article comparison, the shim's trade) says what they now say."""
    return post_redrawn(out)


def _ranking(summary: Summary, code: str, direction: str | None) -> Summary:
    out = summary.model_copy(deep=True)
    for c in out.decisions.ranking.by_candidate.values():
        c.naive.equivalence = Verdict(code=code, direction=direction, estimate=0.194, low=0.112,
                                                 high=0.288, margin=0.05)
        # the metrics the post prints beside the combined verdict say the same
        c.naive.metrics = {k: v.but(code=code, direction=direction) for k, v in c.naive.metrics.items()}
    return _decided(out)


VARIANTS = {
    "latency_inconclusive": lambda s: _latency(s, "inconclusive", None, "host_drift"),
    "latency_slower": lambda s: _latency(s, "different", "slower"),
    "latency_faster": lambda s: _latency(s, "different", "faster"),
    "latency_equivalent": lambda s: _latency(s, "equivalent", None),
    "ranking_better": lambda s: _ranking(s, "different", "better"),
    "ranking_worse": lambda s: _ranking(s, "different", "worse"),
    "ranking_equivalent": lambda s: _ranking(s, "equivalent", None),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_variant_states_a_direction_its_verdicts_lack(variant: str) -> None:
    """On the post document (embedswap/report/post_checks.py): every direction a statement says is its verdict's;
    the stored fixtures are checked in tests/report/test_post_checks.py, a direction beyond its verdict shown
    failing there (test_a_direction_its_verdict_lacks_fails)."""
    summary = VARIANTS[variant](_load("summary_complete.json"))
    assert direction_problems(summary) == [] and disagreement_problems(summary) == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_inconclusive_latency_verdict_is_said_with_its_reason(lang: str) -> None:
    summary = VARIANTS["latency_inconclusive"](_load("summary_complete.json"))
    post = render_post(as_typed(summary), lang)
    reason = catalogue(lang).terms["post"]["reasons"]["host_drift"].split("{{")[0].strip()
    latency = [line for line in post.splitlines() if "p50" in line and not line.startswith("|")]
    assert latency and all(INCONCLUSIVE[lang] in line for line in latency), latency
    assert reason in post and "1.31" in post and "900" in post
    # the section's title says inconclusive, never a direction
    assert any(line.startswith("## ") and INCONCLUSIVE[lang] in line for line in post.splitlines())


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_p99_without_interval_says_why(lang: str) -> None:
    summary = _load("summary_complete.json")
    assert any(p.p99.direction == "too_few" for r in summary.decisions.latency.ratios.values()
               for p in r.intervals.values())
    post = render_post(as_typed(summary), lang)
    # the reason in the language's words (issue 63: no code such as too_few in running prose)
    assert catalogue(lang).terms["post"]["p99_too_few"].split("{{")[0].strip() in post
    point = next(iter(summary.decisions.latency.points["vllm"].values()))
    assert f"{point.p99.n_min:,}" in post


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_silent_difference_is_worded_from_the_ranking_verdict(lang: str) -> None:
    """The address swap raised nDCG: the post says better, with the top-5 changes, and never that quality drops."""
    summary = VARIANTS["ranking_better"](_load("summary_complete.json"))
    post = render_post(as_typed(summary), lang)
    better = catalogue(lang).terms["post"]["claim"]["different_better"].split("{{ interval }}")[1].split("{{")[0]
    assert better.strip(", ，、") in post
    ranking = [c for s in summary.decisions.post.document.statements("post.ranking_line") for c in s.claims]
    assert {c.direction for c in ranking if c.variant == "address_swap"} == {"better"}  # never "worse"
    assert direction_problems(summary) == []


THROUGHPUT = {"en": "hroughput", "ko": "처리량", "ja": "スループット", "zh": "吞吐量"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_latency_heading_names_no_figure_its_verdict_did_not_decide(lang: str) -> None:
    """Sequential p50 slower, throughput inconclusive (the demo's case on a drifting host): the section heading says
    the candidates were slower, and not that throughput went down."""
    summary = _latency(_load("summary_complete.json"), "different", "slower")
    for ratio in summary.decisions.latency.ratios.values():
        for point in ratio.verdicts.values():
            point.docs_per_s = point.docs_per_s.model_copy(update={"code": "inconclusive", "direction": None,
                                                                   "reason": "host_drift"})
    headings = [line for line in render_post(as_typed(summary), lang).splitlines() if line.startswith("## ")]
    slower = catalogue(lang).message("post.latency_headings.slower").split(". ", 1)[1]
    assert any(line.endswith(slower) for line in headings), headings
    assert not [line for line in headings if THROUGHPUT[lang] in line], headings
