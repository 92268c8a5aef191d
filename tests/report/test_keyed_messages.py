"""A stored code picks its message by key: every code a summary can hold has one in every language, a code without
one is an error naming the key, and no skeleton maps a code to words through an if-chain."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any, get_args, get_type_hints

import pytest

from embedswap.report.catalogue import LANGUAGES, CatalogueError, catalogue, environment
from embedswap.summary.model import Target
from embedswap.summary.types_decisions import ConcurrencyGain, LockShare, RankingCandidate, RatioDirection
from embedswap.summary.types_faults import TargetFaultDecision
from embedswap.summary.types_index import IndexDecision, StoreInfo
from embedswap.summary.types_index_options import IndexOptionsDecision
from embedswap.summary.types_long_input import LongInputCode
from embedswap.summary.types_parity import MatrixRow
from embedswap.config.index import IndexConfig
from embedswap.summary.types_post import (ArticleComparison, ArticleFigure, ArticleRelation, CandidateCode,
                                          CandidateGroup, LatencyShown, ShimTrade)
from embedswap.summary.types_vectors import ProbeVerdict


def _codes(model: Any, field: str) -> set[str]:
    hint = get_type_hints(model)[field]
    return {a for a in get_args(hint) if isinstance(a, str)} | {
        b for a in get_args(hint) for b in get_args(a) if isinstance(b, str)}


# table -> the codes it must word; codes never worded there are left out with the reason beside them
KEYED: dict[str, set[str]] = {
    # sections/index.py's variants: a re-embed of a mixed index, and a decision the index options made
    # rescore and dual-read are chosen by the index options only, which by_options words
    "index.decisions": (_codes(IndexDecision, "choice") - {"rescore", "dual_read"}) | {"re_embed_mixed", "by_options"},
    "index.length_advice": _codes(IndexDecision, "advice") - {"none"},  # asked only for length_only, never "none"
    "index.stores": _codes(StoreInfo, "kind"),
    "index.option_choices": _codes(IndexOptionsDecision, "code"),
    "index.basis_metrics": _codes(IndexDecision, "basis"),
    "latency.shares": _codes(LockShare, "case"),
    "parity_matrix.points": _codes(MatrixRow, "check"),
    "parity_matrix.findings": _codes(MatrixRow, "check"),
    "post.closings": set(get_args(CandidateCode)),
    "post.fault_codes": _codes(TargetFaultDecision, "code"),
    "post.index_decisions": _codes(IndexDecision, "choice") - {"rescore", "dual_read"},  # the options line says them
    "post.identical_vectors": _codes(CandidateGroup, "basis") - {"alone"},  # said only of a group of two or more
    "post.statistics": _codes(LatencyShown, "statistic"),
    # where a server's version came from, and report/sections/status.py's states where it has none
    "common.versions": _codes(Target, "version_source") | {"said", "silent", "unconfirmed", "not_measured"},
    # the states report/post.py derives for the post's sections
    "post.vectors_conclusions": {"same", "differ", "unreliable", "none", "another_model"},
    "post.vectors_headings": {"same", "differ", "unreliable", "none", "another_model"},
    "post.contract_conclusions": {"differs", "same", "none", "api_shape"},  # api_shape: issue 64
    "post.contract_headings": {"differs", "same", "none", "api_shape"},
    "post.latency_headings": {"faster", "slower", "inconclusive", "plain"},
    # issue 63: the queries an index decision holds for (decisions.index.<c>.condition, index.queries' values)
    "post.index_conditions": _codes(IndexConfig, "queries"),
    "post.index_measured_with": _codes(IndexConfig, "queries"),
    "post.shim_trades": _codes(ShimTrade, "code"),
    "post.article_why": _codes(ArticleComparison, "why"),
    # what concurrency gained each server (decisions.latency.concurrency): not_measured is never said
    "post.concurrency_gains": _codes(ConcurrencyGain, "code") - {"not_measured"},
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_article_relation_has_its_words(lang: str) -> None:
    """decisions.post.article's relations: a relation with a direction is worded per direction (the only
    direction word the sentence says is the verdict's), the others once."""
    directed = {"same_direction", "reversed"}
    want = {f"{r}_{d}" for r in directed for d in _codes(ArticleFigure, "direction")} | (
        set(get_args(ArticleRelation)) - directed)
    assert set(catalogue(lang).terms["post"]["article_relation"]) == want


def test_the_codes_come_from_the_summary_types() -> None:
    assert KEYED["index.decisions"] >= {"keep", "re_embed", "map", "blocked", "not_measured"}
    assert KEYED["latency.shares"] == {"missing", "no_advantage", "all", "part", "none"}
    assert KEYED["post.closings"] == {"drop_in", "client_changes", "not_swappable", "another_model", "not_measured"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_stored_code_has_its_message(lang: str) -> None:
    words = catalogue(lang)
    for table, codes in KEYED.items():
        assert set(words.keyed(table)) == codes, (lang, table)
        for code in codes:
            assert words.message(f"{table}.{code}").strip(), (lang, table, code)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_stored_code_has_its_table_word(lang: str) -> None:
    # words the section modules look up by code ([terms] tables keyed the same way)
    terms = catalogue(lang).terms
    assert set(terms["rank_decision"]) >= _codes(RankingCandidate, "decision")
    assert set(terms["stats"]["verdicts"]) >= set(get_args(RatioDirection))
    assert set(terms["verdicts"]) >= set(get_args(ProbeVerdict))
    assert set(terms["long_input"]["handling"]) >= set(get_args(LongInputCode))


def test_every_keyed_table_is_named_by_a_skeleton_or_a_message() -> None:
    tables = {f"{s}.{k}" for s, messages in catalogue("en").prose.items() for k, v in messages.items()
              if isinstance(v, dict)}
    assert tables == set(KEYED)


def test_a_code_without_a_message_is_an_error_naming_the_key() -> None:
    template = environment("ko", {}).from_string('{% for c in codes %}{% say_by "index.decisions" c %}{% endfor %}')
    missing = r"'ko' has no message 'index\.decisions\.keep_it'.*prose\.index\.decisions"
    with pytest.raises(CatalogueError, match=missing):
        template.render(codes=["keep_it"])
    with pytest.raises(CatalogueError, match="no keyed messages 'index.nothing'"):
        environment("en", {}).from_string('{% say_by "index.nothing" x %}')


def test_a_keyed_message_sees_the_variables_of_its_place() -> None:
    env = environment("en", {})
    text = env.from_string('{% for sh in shares %}{% say_by "post.statistics" sh +%}\n{% endfor %}').render(
        shares=["pooled", "median_of_repeats"])
    assert text.splitlines() == [catalogue("en").message("post.statistics.pooled"),
                                 catalogue("en").message("post.statistics.median_of_repeats")]


@pytest.mark.parametrize("name", ["report.md.j2", "post.md.j2"])
def test_no_skeleton_picks_words_by_comparing_a_code(name: str) -> None:
    # a comparison with a string literal whose branch opens with a message on the same line is a code choosing
    # words: that map belongs to a keyed table; a comparison whose branch is a block of lines decides layout
    skeleton = resources.files("embedswap").joinpath(f"templates/{name}").read_text(encoding="utf-8")
    chains = re.findall(r'\{%-?\s*(?:el)?if\s+[^%]*?==\s*"[^"]*"\s*-?%\}[ \t]*\{%-?\s*say\s', skeleton)
    assert chains == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_message_picks_words_by_comparing_a_code(lang: str) -> None:
    # the remaining comparisons are not codes picking a sentence: a name (the legacy server's row), a setting that
    # adds a clause
    allowed = {"post.setup_server", "index.hnsw_partial"}
    found = {key for key, text in catalogue(lang).all_messages().items()
             if re.search(r'\{%-?\s*(?:el)?if\s+[^%]*?==\s*"', text)}
    assert found <= allowed
