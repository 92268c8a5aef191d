"""One figure per quantity: the post's prose and tables and its front matter print only figures of the post document
(tests/support/post_numbers.py), the latency figure's data only ``decisions.shown``'s, for every fixture and
language; and the check catches a figure switched to another statistic (the deliberate breakage below). A claim's
figure and interval are the post document's claim's (checked there: claims_check.py against the document, post_checks.py the
document against the stored verdicts); a number changed in the text is caught either way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from embedswap.report import figures
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.post import render_post
from embedswap.summary.types_post import ShownPoint
from embedswap.analysis.upgrade import read_summary
from post_numbers import allowed, claim_figures, decimals, figure_problems, front_matter_problems, post_problems
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
SUMMARIES = sorted(p.name for p in FIXTURES.glob("summary_*.json"))
ALL_FIGURES = {name: True for name in figures.FIGURES}


def _summary(name: str):
    return read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", SUMMARIES)
def test_every_number_of_the_post_is_in_its_decision(name: str) -> None:
    summary = _summary(name)
    problems = figure_problems(summary)
    for lang in LANGUAGES:
        post = render_post(as_typed(summary), lang, ALL_FIGURES)
        problems += post_problems(summary, post, lang) + front_matter_problems(summary, lang)
    assert problems == []


def test_the_check_reads_numbers_and_leaves_versions_alone() -> None:
    assert decimals("p50 1,565.7 ms, 0.68×, Dynamo 1.6.2, vLLM 0.31.0, 2.8배") == ["1,565.7", "0.68", "2.8"]


def test_a_figure_switched_to_another_statistic_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliberate breakage: the latency figure draws the median of the repeats while the table, the front matter and
    the prose show the pooled percentiles (the report's 1,565.1 vs 1,565.7 ms)."""
    summary = _summary("summary_complete.json")
    assert summary.decisions.shown.statistic == "pooled"
    assert figure_problems(summary) == []

    def median_of_repeats(summary, name, run):  # the other statistic, as the figure once read it
        info = summary.latency.of(name) or summary.ablation.of(name)
        point = figures._fixed_point(info, run) if run in ("sequential", "concurrent") else next(
            (p for p in info.sweep if p.run == run), None)
        return ShownPoint(p50_ms=point.p50_ms, p99_ms=point.p99_ms, docs_per_s=point.docs_per_s)

    monkeypatch.setattr(figures, "shown_point", median_of_repeats)
    problems = figure_problems(summary)
    assert any("figure legacy sequential p50_ms" in p for p in problems), problems


def test_a_post_number_from_another_statistic_is_caught() -> None:
    summary = _summary("summary_complete.json")
    post = render_post(as_typed(summary), "en", ALL_FIGURES)
    median = summary.latency.of("dynamo").concurrent.docs_per_s  # the median of the repeats, 380.2 docs/s
    pooled = summary.decisions.shown.at("dynamo", "concurrent").docs_per_s  # what the post shows, 379.5
    broken = post.replace(f" {pooled:,.1f} against", f" {median:,.1f} against")
    assert broken != post
    assert any("380.2 is no figure of the post document" in p for p in post_problems(summary, broken, "en"))


def test_a_summary_decided_before_the_post_gets_its_decisions() -> None:
    """A current-schema summary.json written before decisions.shown and decisions.post existed: they are computed
    at load from the decisions it stores, the others left as stored."""
    from embedswap.analysis.upgrade import upgrade_summary

    current = upgrade_summary(json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8")))
    older = {**current, "decisions": {k: v for k, v in current["decisions"].items() if k not in ("shown", "post")}}
    again = read_summary(older)
    expected = read_summary(current)
    assert again.decisions.shown == expected.decisions.shown and again.decisions.shown.by_target
    assert again.decisions.post == expected.decisions.post


def test_a_claim_figure_changed_in_the_text_is_caught() -> None:
    """A figure only a claim prints (its interval's bound) changed in the text is no figure of the document."""
    summary = _summary("summary_complete.json")
    post = render_post(as_typed(summary), "en", ALL_FIGURES)
    bounds = [n for n in decimals(post) if n in claim_figures(summary, "en")]
    assert bounds, "the post prints no claim's figure"
    changed = "9.87"
    assert changed not in decimals(post) and changed not in allowed(summary)
    broken = re.sub(rf"(?<![\d.]){re.escape(bounds[0])}(?![\d])", changed, post, count=1)
    assert any(f"{changed} is no figure of the post document" in p for p in post_problems(summary, broken, "en"))
