"""The post's figures outside its claims are facts of its document (issue 63, embedswap/analysis/post_figures.py):
each resolves to its path in summary.json and equals it (``source_problems``), the renderer prints it from the
document (embedswap/report/post_figures.py), and the text check (tests/support/post_numbers.py) accepts no decimal
that is not one of the document's. Each check is shown failing on a document or a renderer broken on purpose;
a stored document drawn before these statements is drawn again at load."""

from __future__ import annotations

import json
from typing import Any

import pytest
from embedswap.analysis.post_figures import FIGURE_KEYS
from embedswap.analysis.upgrade import read_summary, upgrade_summary
from embedswap.report import post_figures
from embedswap.report.post import render_post
from embedswap.report.post_checks import document_problems, source_problems
from embedswap.summary.model import Summary
from embedswap.summary.types_post_document import PostDocument
from post_numbers import allowed, post_problems
from stored_summaries import FIXTURES, STORED, stored_summary
from story_summary import story, with_verdicts

COMPLETE = "summary_complete.json"


def _broken(summary: Summary, key: str) -> tuple[PostDocument, str]:
    """The document with the first numeric fact of statement ``key`` moved off its stored value."""
    document = summary.decisions.post.document
    assert document is not None
    document = document.model_copy(deep=True)
    for s in document.statements(key):
        for f in s.facts:
            if isinstance(f.value, float):
                f.value = f.value + 0.1
                return document, f.key
    raise AssertionError(f"no numeric fact in {key}")


@pytest.mark.parametrize("key", ["post.latency_table", "post.vectors_table", "post.vectors_group", "post.host"])
def test_a_figure_fact_off_its_source_is_caught(key: str) -> None:
    summary = stored_summary(COMPLETE)
    assert source_problems(summary) == []
    document, fact = _broken(summary, key)
    assert any(p.startswith(f"{key}: {fact} is stated as") for p in source_problems(summary, document))


def test_the_index_figures_and_options_are_facts_held_to_their_sources(complete_upgraded: dict[str, Any]) -> None:
    summary = read_summary(story(complete_upgraded, per_fold=20))
    document = summary.decisions.post.document
    assert document is not None and document_problems(summary) == []
    options = list(document.statements("post.index_options_line"))
    assert options and all(s.fact("recall_floor") is not None for s in options)
    broken = document.model_copy(deep=True)
    next(broken.statements("post.index_options_line")).facts[0].value = 0.5  # the recall floor, not the stored
    assert any("recall_floor is stated as 0.5" in p for p in source_problems(summary, broken))


def test_a_claim_margin_or_drift_off_its_verdict_is_caught() -> None:
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None
    broken = document.model_copy(deep=True)
    _, claim = next((s, c) for s, c in broken.claims() if c.margin is not None and ".latency." in c.source)
    claim.margin = claim.margin + 0.05  # type: ignore[operator]
    claim.drift_factor = 3.21
    problems = source_problems(summary, broken)
    assert any("prints the margin" in p for p in problems), problems
    assert any("prints the drift factor 3.21" in p for p in problems), problems


def test_the_renderer_prints_the_document_not_the_summary() -> None:
    """A summary changed after its document was drawn: the post still prints the document's figure (the
    renderer reads no other), and the source check finds the document no longer says what is stored."""
    summary = stored_summary(COMPLETE)
    shown = summary.decisions.shown.at("dynamo", "concurrent")
    assert shown is not None and shown.docs_per_s is not None
    before = render_post(summary, "en")
    shown.docs_per_s = 123.4
    assert render_post(summary, "en") == before
    assert any("post.latency_table: dynamo.concurrent.docs_per_s is stated as" in p for p in source_problems(summary))


def test_a_renderer_printing_another_figure_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliberate breakage of the renderer: the host's memory one tenth off, two servers' latency rows swapped."""
    summary = stored_summary(COMPLETE)
    assert post_problems(summary, render_post(summary, "en"), "en") == []
    host = post_figures.host
    monkeypatch.setattr(post_figures, "host", lambda ctx, env: {**host(ctx, env), "memory_gib": "125.6"})
    assert "125.6" not in allowed(summary)
    assert any("125.6 is no figure" in p for p in post_problems(summary, render_post(summary, "en"), "en"))
    monkeypatch.undo()
    rows = post_figures.latency_rows

    def swapped(ctx: Any, article: Any) -> list[list[str]]:
        out = rows(ctx, article)
        out[-1][1:], out[-2][1:] = out[-2][1:], out[-1][1:]
        return out

    monkeypatch.setattr(post_figures, "latency_rows", swapped)
    problems = post_problems(summary, render_post(summary, "en"), "en")
    assert any("latency row of dynamo" in p for p in problems), problems


@pytest.mark.parametrize("name", STORED)
def test_a_stored_document_without_the_figures_is_drawn_again(name: str) -> None:
    """A document stored before the figures were its statements (the host, the tables, ...) is drawn again at
    load, as one without its conclusion's statements is."""
    data = upgrade_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))
    document = data["decisions"]["post"]["document"]
    for section in document["sections"]:
        section["statements"] = [s for s in section["statements"] if s["key"] not in FIGURE_KEYS]
    again = read_summary(data)
    assert again.decisions.post.document == stored_summary(name).decisions.post.document
    assert next(again.decisions.post.document.statements("post.host"), None) is not None


def test_the_versions_line_is_the_document_s() -> None:
    """The versions line prints the run's and the article's versions from the document's ``post.versions``; one
    stated off its stored value is printed as stated and caught at its source."""
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None
    statement = next(document.statements("post.versions"))
    fact = next(f for f in statement.facts if f.key.endswith("_run") and f.value)
    fact.value = "9.9.9"
    assert "9.9.9" in render_post(summary, "en")
    assert any(f"post.versions: {fact.key} is stated as '9.9.9'" in p for p in source_problems(summary))


def test_a_server_s_version_is_quoted_from_the_document() -> None:
    """The setup's server line quotes the version the document's ``post.setup_server`` states; one stated off
    its stored value is printed as stated and caught at its source."""
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None
    fact = next(f for s in document.statements("post.setup_server") for f in s.facts if f.key == "version" and f.value)
    fact.value = "BaseHTTP/0.7"
    assert "BaseHTTP/0.7" in render_post(summary, "en")
    assert any("post.setup_server: version is stated as 'BaseHTTP/0.7'" in p for p in source_problems(summary))


def test_the_shim_trade_and_article_figures_are_the_document_s(complete_upgraded: dict[str, Any]) -> None:
    """The shim's trade prints nDCG@10 and the article comparison the article's ratios from their document
    statements: each changed there is printed as changed and caught at its source."""
    summary = with_verdicts(story(complete_upgraded, queries="shim", per_fold=8, same_ranking=True),
                            latency=("different", "slower"), ranking=(("different", "better"), "equivalent"))
    document = summary.decisions.post.document
    assert document is not None
    trade = next(s for s in document.statements() if s.key.startswith("post.shim_trades."))
    ndcg = next(f for f in trade.facts if f.key == "ndcg_legacy")
    ndcg.value = 0.123
    article = next(document.statements("post.article_comparison"))
    ratio = next(f for f in article.facts if f.key == "conc_docs_per_s")
    ratio.value = 7.7
    post = render_post(summary, "en")
    assert "0.123" in post and "7.7" in post
    problems = source_problems(summary)
    assert any(f"{trade.key}: ndcg_legacy is stated as 0.123" in p for p in problems), problems
    assert any("post.article_comparison: conc_docs_per_s is stated as 7.7" in p for p in problems), problems


@pytest.mark.parametrize(("lang", "label"), [("ko", "5회 반복의 중앙값"), ("en", "5-repeat median"),
                                            ("ja", "5回の繰り返しの中央値"), ("zh", "5 次重复的中位数")])
def test_the_article_rows_name_the_articles_own_repeats(lang: str, label: str) -> None:
    """The latency table's article rows say how many repeats the article's median is of as the document's
    ``article.repeats`` states it (article_000.json `workload.repeats`), not a 3 typed into the catalogue; one
    stated off the article's data is printed as stated and caught at its source."""
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None
    fact = next(document.statements("post.latency_table")).fact("article.repeats")
    assert fact is not None and fact.source == "article:workload.repeats" and fact.value == 3
    fact.value = 5
    assert label in render_post(summary, lang)
    assert any("post.latency_table: article.repeats is stated as 5" in p for p in source_problems(summary))
