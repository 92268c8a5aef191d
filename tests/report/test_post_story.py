"""Issue 63's statements, checked on the stored model and on the rendered post, each check shown failing on a
renderer (or a decision) broken on purpose:

(a) the index decision carries the queries it holds for (``decisions.index.<c>.condition``, from
    ``experiment.config.index.queries``) and its sentence says it;
(b) where the address swap ranks otherwise and the shim restores the legacy ranking, one sentence says the trade
    (``decisions.post.shim_trades``), its figures those of summary.ranking;
(c) this run's latency verdicts against the article's own published ratios (``decisions.post.article``): same
    direction, reversed, no difference, inconclusive; and why it may differ (the host's facts);
(d) candidates with equal statements share one sentence: no two bullet lines of a post read alike once the
    candidates' names are masked."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest

import embedswap.report.post as post_module
import embedswap.report.post_story as story_module
from claims_check import claim_problems
from embedswap.report.post_checks import direction_problems, document_problems
from embedswap.analysis.post import post_decision
from embedswap.analysis.upgrade import read_summary
from embedswap.report.catalogue import LANGUAGES, catalogue, fill
from embedswap.report.format import fmt
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from post_numbers import post_problems
from story_summary import story, with_verdicts
from typed_summary import as_typed

ARTICLE = json.loads(resources.files("embedswap").joinpath("data/article_000.json").read_text(encoding="utf-8"))
# the article's direction per figure, read from its published ratios here (not from the code under test)
ARTICLE_FASTER = {"seq_p50": ARTICLE["latency"]["published_ratios"]["seq_p50"] < 1,
                  "conc_docs_per_s": ARTICLE["latency"]["published_ratios"]["conc_docs_per_s"] > 1}


def _resolve(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _source(summary: Summary, source: str) -> Any:
    if source.startswith("article:"):
        return _resolve(ARTICLE, source.removeprefix("article:"))
    if source.startswith("default:"):
        return "shim"  # IndexConfig.queries' default, where experiment.yaml does not set it
    return _resolve(summary.model_dump(mode="json", by_alias=True), source)


# ---------------------------------------------------------------------------------------------- model checks


def story_problems(summary: Summary) -> list[str]:
    """Every fact of the stored statements equals what its source holds; every relation and trade is what the
    verdicts it cites say."""
    problems = []
    d = summary.decisions
    for name, decided in d.index.items():
        c = decided.condition
        if c is not None and _source(summary, c.source) != c.value:
            problems.append(f"index {name}: condition {c.value!r}, {c.source} holds {_source(summary, c.source)!r}")
    for comparison in d.post.article or []:
        facts = [f.article for f in comparison.figures] + comparison.facts
        problems += [f"article {f.key}: {f.value!r} is not {f.source}" for f in facts if _source(summary, f.source) != f.value]
        for f in comparison.figures:
            for path in f.verdicts:
                v = _source(summary, path) or {}
                direction = v.get("direction") if v.get("code") in ("different", "non_inferior") else None
                want = ("not_measured" if v.get("code") in (None, "failed") else
                        ("same_direction" if (direction == "faster") == ARTICLE_FASTER[f.figure] else "reversed")
                        if direction else "inconclusive" if v.get("code") == "inconclusive" else "no_difference")
                if (f.relation, f.direction) != (want, direction):
                    problems.append(f"article {f.figure}: stored {f.relation}/{f.direction}, {path} says {want}/{direction}")
    for t in d.post.shim_trades or []:
        problems += [f"trade {f.source}: {f.value!r}" for f in (t.legacy, t.candidate, t.shim)
                     if _source(summary, f.source) != f.value]
        naive, shim = (_source(summary, p) or {} for p in t.verdicts)
        if shim.get("code") != "equivalent" or naive.get("direction") != t.direction or \
                t.code != {"better": "gives_up_better", "worse": "fixes_worse"}.get(str(naive.get("direction"))):
            problems.append(f"trade {t.subjects}: {t.code}/{t.direction} against {naive} and {shim}")
    return problems


# ---------------------------------------------------------------------------------------------- text checks


def _fixed(message: str) -> str:
    """The longest literal run of a catalogue message (what any filling of it prints)."""
    return max(re.split(r"\{\{.*?\}\}|\{%.*?%\}", message), key=len).strip()


def index_problems(summary: Summary, post: str, lang: str) -> list[str]:
    """A line stating an index decision made on searched cells says the queries they were searched with."""
    words = catalogue(lang)
    conditions = {d.condition.value for d in summary.decisions.index.values() if d.condition is not None}
    decided = {_fixed(words.message(f"post.index_decisions.{code}")) for code in ("keep", "re_embed", "map")}
    problems = []
    for line in post.splitlines():
        if any(text in line for text in decided):
            said = [c for c in conditions if words.message(f"post.index_conditions.{c}") in line]
            if not said:
                problems.append(f"{lang}: an index decision without its condition: {line[:120]}")
    return problems


def trade_problems(summary: Summary, post: str, lang: str) -> list[str]:
    """Each stored trade is said, with the figures its sources hold, in its code's words."""
    sep = catalogue(lang).terms["post"]["list_sep"]
    problems = []
    for t in summary.decisions.post.shim_trades or []:
        figures = {k: fmt(_source(summary, getattr(t, k).source), "score") for k in ("legacy", "candidate", "shim")}
        names = sep.join(f"`{s}`" for s in t.subjects)
        expected = fill(catalogue(lang).message(f"post.shim_trades.{t.code}"), t={"names": names, **figures})
        if expected not in post:
            problems.append(f"{lang}: the trade of {t.subjects} is not said as stored: {expected[:100]}")
    return problems


def article_problems(summary: Summary, post: str, lang: str) -> list[str]:
    """Each stored comparison prints the article's published ratios and the words of its stored relations, and no
    relation it does not have."""
    relations = catalogue(lang).terms["post"]["article_relation"]
    problems = []
    stored = summary.decisions.post.article or []
    keys = {f"{f.relation}_{f.direction}" if f.direction else f.relation for c in stored for f in c.figures}
    for key, message in relations.items():
        said = _fixed(message) in post
        if said != (key in keys):
            problems.append(f"{lang}: relation {key} {'said' if said else 'not said'}, stored: {sorted(keys)}")
    for c in stored:
        for f in c.figures:
            if fill(catalogue(lang).terms["post"]["times"], x=fmt(f.article.value, "raw")) not in post:
                problems.append(f"{lang}: the article's {f.figure} {f.article.value} is not printed")
    return problems


def twins(summary: Summary, post: str) -> list[str]:
    """Bullet lines that read alike once the candidates' names are masked."""
    names = re.compile("|".join(re.escape(f"`{n}`") for n in summary.roles.candidates))
    masked: dict[str, int] = {}
    for line in post.splitlines():
        if line.startswith("- "):
            key = names.sub("X", line)
            masked[key] = masked.get(key, 0) + 1
    return [line for line, n in masked.items() if n > 1]


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def shim_story(complete_upgraded: dict[str, Any]) -> dict[str, Any]:
    return story(complete_upgraded, queries="shim", per_fold=8, same_ranking=True)


def _reversed(data: dict[str, Any]) -> Summary:
    """The issue's run: both candidates slower on both figures, the address swap ranking better, the shim back."""
    return with_verdicts(data, latency=("different", "slower"), ranking=(("different", "better"), "equivalent"))


# ---------------------------------------------------------------------------------------------- (a) the index


def test_the_index_decision_stores_the_queries_it_holds_for(complete_upgraded: dict[str, Any]) -> None:
    for queries in ("shim", "naive"):
        summary = read_summary(story(complete_upgraded, queries=queries))
        conditions = {n: d.condition for n, d in summary.decisions.index.items()}
        assert {c.value for c in conditions.values() if c} == {queries}
        assert {c.source for c in conditions.values() if c} == {"experiment.config.index.queries"}
        assert story_problems(summary) == []
    default = read_summary(story(complete_upgraded, queries=None))  # not configured: the kit's default, so named
    assert {d.condition.source for d in default.decisions.index.values() if d.condition} == {"default:IndexConfig.queries"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_index_sentence_says_its_condition(shim_story: dict[str, Any], lang: str) -> None:
    summary = read_summary(shim_story)
    post = render_post(as_typed(summary), lang)
    assert index_problems(summary, post, lang) == []
    assert catalogue(lang).message("post.index_conditions.shim") in post


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_index_options_say_the_queries_they_were_searched_with(complete_upgraded: dict[str, Any],
                                                                   lang: str) -> None:
    summary = read_summary(story(complete_upgraded, queries="naive", per_fold=40))
    assert {o.code for o in summary.decisions.index_options.values()} == {"keep"}
    post = render_post(as_typed(summary), lang)
    assert post.count(catalogue(lang).message("post.index_measured_with.naive")) == 1  # one sentence for both


def test_a_renderer_that_drops_the_condition_fails(shim_story: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    summary = read_summary(shim_story)
    real = post_module.index_claims
    monkeypatch.setattr(post_module, "index_claims",
                        lambda ctx: [c.model_copy(update={"condition": None}) for c in real(ctx)])
    assert index_problems(summary, render_post(as_typed(summary), "en"), "en")


def test_a_condition_that_is_not_the_stored_fact_fails(shim_story: dict[str, Any]) -> None:
    summary = read_summary(shim_story)
    for d in summary.decisions.index.values():
        if d.condition is not None:
            d.condition = d.condition.model_copy(update={"value": "naive"})
    assert story_problems(summary)


# ---------------------------------------------------------------------------------------------- (b) the trade


def test_the_shim_trade_is_decided_from_the_stored_verdicts(shim_story: dict[str, Any]) -> None:
    better = _reversed(shim_story)
    (trade,) = better.decisions.post.shim_trades or []
    assert trade.code == "gives_up_better" and trade.subjects == ["vllm", "dynamo"]  # equal figures: one statement
    assert trade.legacy.value == better.ranking.legacy.ndcg_at_10  # type: ignore[union-attr]
    assert story_problems(better) == []
    worse = with_verdicts(shim_story, ranking=(("different", "worse"), "equivalent"))
    assert [t.code for t in worse.decisions.post.shim_trades or []] == ["fixes_worse"]
    # the shim does not restore the legacy ranking (not equivalent), or the swap did not move it: no trade
    assert with_verdicts(shim_story, ranking=(("different", "better"), "inconclusive")).decisions.post.shim_trades == []
    assert with_verdicts(shim_story, ranking=(("equivalent", None), "equivalent")).decisions.post.shim_trades == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_shim_trade_is_said_with_its_figures(shim_story: dict[str, Any], lang: str) -> None:
    for summary in (_reversed(shim_story), with_verdicts(shim_story, ranking=(("different", "worse"), "equivalent"))):
        post = render_post(as_typed(summary), lang)
        assert trade_problems(summary, post, lang) == []
        assert document_problems(summary) == []  # the trade's claims and facts resolve to stored ones
        assert post_problems(summary, post, lang) == []  # and the numbers it prints beside them


def test_a_renderer_that_swaps_the_trades_figures_fails(shim_story: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _reversed(shim_story)
    real = story_module.shim_trades
    monkeypatch.setattr(post_module, "shim_trades", lambda ctx: [
        {**t, "legacy": t["candidate"], "candidate": t["legacy"]} for t in real(ctx)])
    assert trade_problems(summary, render_post(as_typed(summary), "ko"), "ko")


def test_a_trade_against_its_verdicts_fails(shim_story: dict[str, Any]) -> None:
    summary = _reversed(shim_story)
    trades = summary.decisions.post.shim_trades or []
    trades[0] = trades[0].model_copy(update={"code": "fixes_worse"})
    summary.decisions.post.shim_trades = trades
    assert story_problems(summary)


# ---------------------------------------------------------------------------------------------- (c) the article


@pytest.mark.parametrize(("latency", "relation"), [
    (("different", "slower"), "reversed"), (("different", "faster"), "same_direction"),
    (("equivalent", None), "no_difference"), (("inconclusive", None), "inconclusive")])
def test_the_article_comparison_follows_the_stored_verdicts(shim_story: dict[str, Any], latency: tuple[str, str | None],
                                                            relation: str) -> None:
    summary = with_verdicts(shim_story, latency=latency)
    (comparison,) = summary.decisions.post.article or []
    assert comparison.subjects == ["vllm", "dynamo"]
    assert {f.relation for f in comparison.figures} == {relation}
    assert {f.article.value for f in comparison.figures} == set(ARTICLE["latency"]["published_ratios"].values())
    # why it may differ: the host's facts, only where a figure does not go the article's way
    assert comparison.why == (None if relation == "same_direction" else "cpu_only")
    assert story_problems(summary) == []


def test_a_gpu_host_names_its_gpu_and_an_aa_run_is_not_compared(complete_upgraded: dict[str, Any]) -> None:
    summary = with_verdicts(story(complete_upgraded, gpu="NVIDIA L4"), latency=("different", "slower"))
    (comparison,) = summary.decisions.post.article or []
    assert comparison.why == "other_gpu" and any(f.value == "NVIDIA L4" for f in comparison.facts)
    legacy = summary.model_copy(deep=True)  # the legacy server runs vLLM itself: not the article's swap
    legacy.targets["legacy"].config.kind = "vllm"
    assert post_decision(legacy, legacy.decisions.latency, legacy.decisions.ranking,
                         legacy.decisions.faults).article == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_post_says_whether_it_goes_the_articles_way(shim_story: dict[str, Any], lang: str) -> None:
    for latency in (("different", "slower"), ("different", "faster"), ("inconclusive", None)):
        summary = with_verdicts(shim_story, latency=latency)
        post = render_post(as_typed(summary), lang)
        assert article_problems(summary, post, lang) == []
        assert direction_problems(summary) == []  # the verdicts' directions only (on the post document)
        assert document_problems(summary) == []  # every figure and fact of the document its stored one
        assert post_problems(summary, post, lang) == []
    why = catalogue(lang).message("post.article_why.cpu_only")
    assert _fixed(why) in render_post(as_typed(with_verdicts(shim_story, latency=("different", "slower"))), lang)


def test_a_renderer_that_ignores_the_stored_relation_fails(shim_story: dict[str, Any],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    summary = with_verdicts(shim_story, latency=("different", "slower"))
    monkeypatch.setattr(story_module, "_key", lambda f: "same_direction_faster")
    assert article_problems(summary, render_post(as_typed(summary), "en"), "en")


def test_a_relation_against_its_verdict_fails(shim_story: dict[str, Any]) -> None:
    summary = with_verdicts(shim_story, latency=("different", "slower"))
    comparison = (summary.decisions.post.article or [])[0]
    comparison.figures[0].relation = "same_direction"
    assert story_problems(summary)


def test_the_stored_story_survives_an_older_summary(shim_story: dict[str, Any]) -> None:
    """A summary decided before issue 63 (no condition, no article comparison, no trades) gets them on reading."""
    older = {**json.loads(json.dumps(shim_story, default=str)), "schema_version": 2}  # migrated at load
    for d in older["decisions"]["index"].values():
        d.pop("condition", None)
    for key in ("article", "shim_trades"):
        older["decisions"]["post"].pop(key, None)
    summary = read_summary(older)
    assert all(d.condition is not None for d in summary.decisions.index.values() if d.choice != "not_measured")
    assert summary.decisions.post.article is not None and summary.decisions.post.shim_trades is not None


# ---------------------------------------------------------------------------------------------- (d) twins


@pytest.mark.parametrize("lang", LANGUAGES)
def test_candidates_with_equal_statements_share_one_sentence(shim_story: dict[str, Any], lang: str) -> None:
    summary = _reversed(shim_story)
    for ratio in summary.decisions.latency.ratios.values():  # equal latency findings, as in the run
        ratio.intervals = summary.decisions.latency.ratios["vllm"].intervals
    post = render_post(as_typed(summary), lang)
    assert twins(summary, post) == []
    assert claim_problems(summary, lang) == []


def test_a_renderer_that_repeats_candidates_fails(shim_story: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _reversed(shim_story)
    monkeypatch.setattr(post_module, "_merged", lambda ctx, items, key, name="label": list(items))
    assert twins(summary, render_post(as_typed(summary), "en"))
