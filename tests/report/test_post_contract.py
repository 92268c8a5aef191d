"""The contract paragraphs as statements of the post document (issue 63; embedswap/analysis/post_contract.py): stored
for every summary fixture, groups with equal paragraphs in one statement, the separators with each server's own
error; the post printing them, and the conclusion's cosine, threshold and counts, from the statements' facts only;
documents stored without them drawn again at load; and each check shown failing on a document broken on purpose."""

from __future__ import annotations

import json

import pytest

from stored_summaries import FIXTURES, STORED, stored_summary

from embedswap.analysis.post_conclusion import CONTRACT, VECTORS, keyed_code
from embedswap.analysis.post_contract import ANSWERS, ERROR_CLASS, GROUP, KEYS
from embedswap.analysis.upgrade import read_summary
from embedswap.report.format import fmt
from embedswap.report.post import render_post
from embedswap.report.post_checks import contract_problems, document_problems, source_problems, twin_problems
from embedswap.summary.model import Summary
from embedswap.summary.types_post_document import PostDocument, Section, Statement

SENTINEL = 987654  # a count no fixture holds: printed only where the document says it


def _document(summary: Summary) -> PostDocument:
    assert summary.decisions.post.document is not None
    return summary.decisions.post.document


def _paragraphs(document: PostDocument, key: str = GROUP) -> list[Statement]:
    return list(document.statements(key))


def _contract_section(document: PostDocument) -> Section:
    found = document.section("contract")
    assert found is not None
    return found


@pytest.mark.parametrize("name", STORED)
def test_every_stored_summary_states_its_contract_paragraphs(name: str) -> None:
    """Every group that compared anything has its paragraph, each separator its statement, in the contract
    section; the document passes every check."""
    summary = stored_summary(name)
    document = _document(summary)
    post = summary.decisions.post
    spoken = [m for s in _paragraphs(document) for m in s.subjects]
    for g in post.groups:
        first = post.conclusion(g.members[0])
        assert (first is not None and first.compared > 0) == all(m in spoken for m in g.members), g.members
        for s in g.separators if first is not None and first.compared else []:
            key = {"error_class": ERROR_CLASS, "answers": ANSWERS}.get(s.kind)
            assert key is None or any(st.subjects == g.members for st in document.statements(key)), s.kind
    contract = document.section("contract")
    # the contract section holds its paragraphs and, before them, the contract table's figures only
    assert [s for s in document.statements() if s.key in KEYS] == \
        [s for s in (contract.statements if contract else []) if s.key != "post.contract_table"]
    assert contract_problems(summary) == [] and document_problems(summary) == []


def test_groups_with_equal_paragraphs_share_one() -> None:
    """The complete fixture's two candidates, each alone in its group, answered alike: one paragraph names both."""
    summary = stored_summary("summary_complete.json")
    assert [g.members for g in summary.decisions.post.groups] == [["vllm"], ["dynamo"]]
    assert [s.subjects for s in _paragraphs(_document(summary))] == [["vllm", "dynamo"]]


def test_the_4xx_5xx_paragraph_cites_each_server_s_own_error() -> None:
    summary = stored_summary("summary_v1_qwen3_tiny.json")
    (statement,) = _paragraphs(_document(summary), ERROR_CLASS)
    separator = summary.decisions.post.groups[0].separators[0]
    client, server = statement.fact("client"), statement.fact("server")
    assert client is not None and server is not None
    assert (client.value, server.value) == (separator.client_error, separator.server_error)
    rows = summary.contract if isinstance(summary.contract, list) else []
    r = next(i for i, row in enumerate(rows) if row.probe == separator.probes[0])
    says = statement.fact("client_says")
    assert says is not None and says.source == f"contract.{r}.by_target.{separator.client_error}.error"
    assert says.value == rows[r].by_target[str(separator.client_error)].error


# --- the post prints the document ------------------------------------------------------------------------------

def test_the_paragraph_s_counts_are_printed_from_its_statement() -> None:
    summary = stored_summary("summary_complete.json")
    printed = fmt(SENTINEL, "int")
    assert printed not in render_post(summary, "en")
    fact = _paragraphs(_document(summary))[0].fact("compared")
    assert fact is not None
    fact.value = SENTINEL
    assert render_post(summary, "en").count(printed) == 1


def test_a_probe_left_out_of_the_statement_is_not_printed() -> None:
    summary = stored_summary("summary_complete.json")
    statement = _paragraphs(_document(summary))[0]
    before = render_post(summary, "en")
    statement.facts = [f for f in statement.facts if f.key != "shape"]
    after = render_post(summary, "en")
    assert before != after and len(after.splitlines()) == len(before.splitlines())


def test_the_conclusion_s_figures_are_its_statements_facts() -> None:
    """The conclusion's counts and lowest cosine are those its statements cite, not the groups' own."""
    summary = stored_summary("summary_complete.json")
    document = _document(summary)
    contract = next(s for s in document.statements() if keyed_code(s, CONTRACT) is not None)
    vectors = next(s for s in document.statements() if keyed_code(s, VECTORS) == "same")
    for f in contract.facts:
        if f.key == "compared":
            f.value = SENTINEL
    cosine = 0.123456
    for f in vectors.facts:
        if f.key == "cosine_min":
            f.value = cosine
    text = render_post(summary, "en")
    conclusion = text.split("\n## ", 1)[0]
    assert fmt(SENTINEL, "int") in conclusion and fmt(cosine, "cos4") in conclusion


# --- stored before them ----------------------------------------------------------------------------------------

def _stored_v3() -> dict:
    return json.loads((FIXTURES / "versions" / "summary_v3.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("drop", ["section", "group_facts"])
def test_a_document_stored_without_them_gets_them_at_load(drop: str) -> None:
    stored = _stored_v3()
    document = stored["decisions"]["post"]["document"]
    if drop == "section":
        document["sections"] = [s for s in document["sections"] if s["key"] != "contract"]
    else:
        for s in document["sections"]:
            for st in s["statements"]:
                st["facts"] = [f for f in st.get("facts", []) if f["key"] != "group"]
    loaded = _document(read_summary(stored))
    assert _paragraphs(loaded)
    contract = next(s for s in loaded.statements() if keyed_code(s, CONTRACT) is not None)
    assert contract.fact("group") is not None


# --- broken on purpose -----------------------------------------------------------------------------------------

def _broken(name: str = "summary_complete.json") -> tuple[Summary, PostDocument, Statement]:
    summary = stored_summary(name)
    document = _document(summary).model_copy(deep=True)
    return summary, document, _paragraphs(document)[0]


def test_a_paragraph_count_its_source_does_not_hold_fails() -> None:
    summary, document, statement = _broken()
    fact = statement.fact("differ")
    assert fact is not None and isinstance(fact.value, int)
    fact.value += 1
    assert any(fact.source in p for p in source_problems(summary, document))
    assert any(p.startswith(GROUP) and "differ" in p for p in contract_problems(summary, document))


def test_a_probe_cited_under_another_list_fails() -> None:
    """A quiet difference said as a refusal: the value still resolves, the key does not name what its source
    holds."""
    summary, document, statement = _broken()
    fact = next(f for f in statement.facts if f.key == "silent")
    fact.key = "refused"
    assert source_problems(summary, document) == []
    found = contract_problems(summary, document)
    assert any(fact.source in p and "which holds silent, not refused" in p for p in found), found
    assert set(found) <= set(document_problems(summary, document))


def test_a_probe_left_out_fails() -> None:
    summary, document, statement = _broken()
    left = next(f for f in statement.facts if f.key == "refused")
    statement.facts = [f for f in statement.facts if f is not left]
    assert source_problems(summary, document) == []
    assert any(str(left.value) in p for p in contract_problems(summary, document))


def test_a_paragraph_shared_with_a_group_that_answered_otherwise_fails() -> None:
    """The merged paragraph's second group counts otherwise: the paragraph does not hold for it."""
    summary, document, _ = _broken()
    other = summary.decisions.post.conclusions[1]
    other.differ += 1
    found = contract_problems(summary, document)
    assert any(other.name in p and "differ" in p for p in found), found


def test_a_paragraph_naming_part_of_a_group_fails() -> None:
    summary, document, statement = _broken("summary_v1_qwen3_tiny.json")
    statement.subjects = statement.subjects[:1]
    assert any("not whole groups" in p for p in contract_problems(summary, document))


def test_equal_paragraphs_said_apart_fail() -> None:
    summary, document, statement = _broken()
    section = _contract_section(document)
    section.statements = [statement.model_copy(update={"subjects": [m]}) for m in statement.subjects]
    assert any(p.startswith(GROUP) and "say the same in two statements" in p
               for p in twin_problems(summary, document))


def test_a_server_s_error_cited_from_another_server_fails() -> None:
    summary = stored_summary("summary_v1_qwen3_tiny.json")
    document = _document(summary).model_copy(deep=True)
    statement = _paragraphs(document, ERROR_CLASS)[0]
    says, server = statement.fact("client_says"), statement.fact("server_says")
    assert says is not None and server is not None
    says.value = server.value
    assert any(says.source in p for p in source_problems(summary, document))


def test_the_conclusion_s_group_its_source_does_not_hold_fails() -> None:
    summary = stored_summary("summary_complete.json")
    document = _document(summary).model_copy(deep=True)
    contract = next(s for s in document.statements() if keyed_code(s, CONTRACT) is not None)
    groups = [f for f in contract.facts if f.key == "group"]
    groups[0].value, groups[1].value = groups[1].value, groups[0].value
    assert any(groups[0].source in p for p in source_problems(summary, document))
