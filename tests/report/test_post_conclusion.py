"""The conclusion's vectors and contract sentences and the closings as statements of the post document (issue 63;
embedswap/analysis/post_conclusion.py): stored for every summary fixture, each code the one its facts give, the
facts their stored values, candidates closed alike in one statement, the post worded from them; and a document
broken on purpose caught by ``document_problems``."""

from __future__ import annotations

import json

import pytest

from stored_summaries import FIXTURES, STORED, stored_summary

from embedswap.analysis.post_conclusion import CLOSINGS, CODES, CONTRACT, VECTORS, keyed_code
from embedswap.analysis.upgrade import read_summary
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.post import render_post
from embedswap.report.post_checks import code_problems, document_problems, source_problems, twin_problems
from embedswap.summary.model import Summary
from embedswap.summary.types_post_document import PostDocument, Section, Statement


def _document(summary: Summary) -> PostDocument:
    assert summary.decisions.post.document is not None
    return summary.decisions.post.document


def _keyed(document: PostDocument, table: str) -> list[Statement]:
    return [s for s in document.statements() if keyed_code(s, table) is not None]


def _closing_section(document: PostDocument) -> Section:
    found = document.section("closing")
    assert found is not None
    return found


@pytest.mark.parametrize("name", STORED)
def test_every_stored_summary_states_its_conclusion_and_closings(name: str) -> None:
    summary = stored_summary(name)
    document = _document(summary)
    conclusion = document.section("conclusion")
    assert conclusion is not None
    for table in (VECTORS, CONTRACT):  # said once, in the conclusion, with the code its facts give
        said = [s for s in conclusion.statements if keyed_code(s, table) is not None]
        assert len(said) == 1, (table, said)
        assert keyed_code(said[0], table) == CODES[table](said[0].facts)
    closings = _keyed(document, CLOSINGS)
    members = [m for g in summary.decisions.post.groups for m in g.members]
    # every grouped candidate closed exactly once
    assert sorted(m for s in closings for m in s.subjects) == sorted(members)
    # the closing section holds its closings and, beside them, the to-do list's figures (post.todo) only
    assert closings == [s for s in _closing_section(document).statements if s.key != "post.todo"]
    # every closing cites each of its candidates' conclusion codes
    codes = {f.source for s in closings for f in s.facts if f.key == "code"}
    assert codes == {f"decisions.post.conclusions.{i}.code" for i, c in enumerate(summary.decisions.post.conclusions)
                     if c.name in members}
    assert document_problems(summary) == []


def test_a_stored_document_drawn_before_these_statements_gets_them_at_load() -> None:
    """A schema-3 summary stored while the document held no conclusion statements is drawn again at load."""
    stored = json.loads((FIXTURES / "versions" / "summary_v3.json").read_text(encoding="utf-8"))
    sections = stored["decisions"]["post"]["document"]["sections"]
    stored["decisions"]["post"]["document"]["sections"] = [
        {**s, "statements": [st for st in s["statements"]
                             if not st["key"].startswith((f"{VECTORS}.", f"{CONTRACT}.", f"{CLOSINGS}."))]}
        for s in sections if s["key"] != "closing"]
    document = _document(read_summary(stored))
    assert len(_keyed(document, VECTORS)) == 1 and len(_keyed(document, CONTRACT)) == 1
    assert _keyed(document, CLOSINGS)


def test_candidates_closed_alike_share_one_closing() -> None:
    """The complete fixture's two candidates, each alone in its group, close alike (their stored conclusion codes
    and the probes the shim leaves are equal): one statement names both."""
    summary = stored_summary("summary_complete.json")
    conclusions = summary.decisions.post.conclusions
    assert len({c.code for c in conclusions}) == 1 and len({tuple(sorted(c.shim_left)) for c in conclusions}) == 1
    closings = _keyed(_document(summary), CLOSINGS)
    assert [s.subjects for s in closings] == [[c.name for c in conclusions]]


def test_the_post_is_worded_from_the_document() -> None:
    """A closing's code changed in the document is the sentence the post prints: the renderer decides nothing."""
    summary = stored_summary("summary_complete.json")
    closing = _keyed(_document(summary), CLOSINGS)[0]
    other = next(c for c in ("not_swappable", "drop_in") if c != keyed_code(closing, CLOSINGS))
    closing.key = f"{CLOSINGS}.{other}"
    # the sentence after the candidates' names (the names are the post's words, not the document's)
    sentence = fill(catalogue("en").message(f"{CLOSINGS}.{other}"), g={"label": "LABEL"}).split("LABEL", 1)[1]
    assert sentence.strip() and sentence not in render_post(stored_summary("summary_complete.json"), "en")
    assert sentence in render_post(summary, "en")


# --- broken on purpose ---------------------------------------------------------------------------------------------

# codes of each table's messages, two of which differ from any one code
SOME_CODES = {VECTORS: ("same", "differ", "none"), CONTRACT: ("same", "differs", "none"),
              CLOSINGS: ("drop_in", "not_swappable", "client_changes")}


@pytest.mark.parametrize("name", ["summary_complete.json", "summary_smoke.json", "summary_v1_qwen3_tiny.json"])
@pytest.mark.parametrize("table", [VECTORS, CONTRACT, CLOSINGS])
def test_a_code_its_sources_do_not_hold_fails(name: str, table: str) -> None:
    """The issue's "a closing's code changed to one its source does not hold", for each keyed sentence."""
    summary = stored_summary(name)
    document = _document(summary).model_copy(deep=True)
    statement = _keyed(document, table)[0]
    said = keyed_code(statement, table)
    wrong = next(c for c in SOME_CODES[table] if c != said)
    statement.key = f"{table}.{wrong}"
    found = code_problems(summary, document)
    assert any(p.startswith(f"{table}.{wrong}:") and repr(said) in p for p in found), found
    assert set(found) <= set(document_problems(summary, document))


def test_a_closing_fact_its_source_does_not_hold_fails() -> None:
    """The closing's code and the conclusion code it cites both changed: the fact no longer resolves to its
    stored value."""
    summary = stored_summary("summary_complete.json")
    document = _document(summary).model_copy(deep=True)
    closing = _keyed(document, CLOSINGS)[0]
    fact = next(f for f in closing.facts if f.key == "code")
    fact.value = next(c for c in ("drop_in", "not_swappable") if c != fact.value)
    for f in closing.facts:
        if f.key == "code":
            f.value = fact.value
    closing.key = f"{CLOSINGS}.{fact.value}"
    assert code_problems(summary, document) == []  # consistent with its facts...
    assert any(p.startswith(closing.key) and fact.source in p for p in source_problems(summary, document))


def test_a_contract_count_its_source_does_not_hold_fails() -> None:
    summary = stored_summary("summary_complete.json")
    document = _document(summary).model_copy(deep=True)
    fact = next(f for f in _keyed(document, CONTRACT)[0].facts if f.key == "differ")
    assert isinstance(fact.value, int)
    fact.value += 1
    assert any(fact.source in p for p in document_problems(summary, document))


def test_candidates_closed_alike_said_apart_fail() -> None:
    summary = stored_summary("summary_complete.json")
    document = _document(summary).model_copy(deep=True)
    section = _closing_section(document)
    merged = section.statements[0]
    assert len(merged.subjects) > 1
    codes = [f for f in merged.facts if f.key == "code"]
    rest = [f for f in merged.facts if f.key != "code"]
    section.statements = [Statement(key=merged.key, subjects=[m], facts=[c, *rest])
                          for m, c in zip(merged.subjects, codes)]
    assert any(p.startswith(merged.key) and "say the same in two statements" in p
               for p in twin_problems(summary, document))
