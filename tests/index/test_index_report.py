"""The report's "What happens to your index" in every language, from a summary carrying an index section (the
decisions computed as a run computes them), and the figure."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from embedswap.analysis import decide, decisions_json
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.figures_index import index_shares
from embedswap.report.markdown import render_markdown
from index_summary import summary_with_index
from embedswap.summary.model import validate_body
from typed_summary import as_typed

HEADINGS = {"en": "### What happens to your index", "ko": "### 인덱스는 어떻게 되는가",
            "ja": "### インデックスはどうなるか", "zh": "### 你的索引会怎样"}


@pytest.fixture
def with_index(complete_upgraded: dict[str, Any]) -> dict[str, Any]:
    return summary_with_index(complete_upgraded)


def test_decisions_of_the_section(with_index: dict[str, Any]) -> None:
    decided = with_index["decisions"]["index"]
    assert decided["vllm"]["choice"] == "keep" and decided["vllm"]["length"] == "length_only"
    assert decided["vllm"]["advice"] == "use_cosine_or_renormalise"
    assert decided["dynamo"]["choice"] == "re_embed"
    # the complete fixture's measured throughput gives the cost, at the article's point
    cost = decided["dynamo"]["cost"]
    assert cost is not None and cost["point"] == "concurrent" and cost["replicas"] >= 1


@pytest.mark.parametrize("lang", LANGUAGES)
def test_section_in_every_language(with_index: dict[str, Any], lang: str) -> None:
    text = render_markdown(as_typed(with_index), lang)
    part = text[text.index(HEADINGS[lang]):]
    part = part[: part.index("\n## ")]
    assert "`vllm`" in part and "`dynamo`" in part and "18.4" in part and "0.8.5" in part
    assert "{{" not in part and "{%" not in part
    assert part.count("| ---: |") >= 2  # one table per measured candidate
    if lang == "en":
        assert "**`vllm`: keep the index.**" in part and "**`dynamo`: re-embed the index.**" in part
        assert "rebuild it with cosine distance, or have the client re-normalise" in part
        assert "This is an estimate from measured parts" in part and "2,000,000 documents" in part


def test_old_summary_says_the_section_is_absent(complete: dict[str, Any]) -> None:
    text = render_markdown(as_typed(complete), "en")
    part = text[text.index(HEADINGS["en"]):]
    assert "summary.json has no such section" in part[: part.index("\n## ")]


def test_figure(with_index: dict[str, Any]) -> None:
    assert index_shares(as_typed(with_index)) is not None


def test_mixed_index_worse_is_said(with_index: dict[str, Any]) -> None:
    summary = copy.deepcopy(with_index)
    summary["decisions"]["index"]["dynamo"]["mixed_worse"] = [0.5]
    for lang in LANGUAGES:
        part = render_markdown(as_typed(summary), lang)
        part = part[part.index(HEADINGS[lang]):]
        assert "50%" in part[: part.index("\n## ")] and "{{" not in part
    assert "an index holding vectors of both servers ranks worse" in render_markdown(as_typed(summary), "en")


def _partial(with_index: dict[str, Any], setting: str) -> dict[str, Any]:
    """The section as a large corpus leaves it: HNSW at shares 0 and 1 only (the mixed share's HNSW cells gone)."""
    summary = copy.deepcopy(with_index)
    summary["index"]["hnsw_plan"] = {"setting": setting, "mode": "ends", "documents": 100_000,
                                     "auto_max_documents": 20_000, "shares": [0, 1], "exact_only": [0.5]}
    for entry in summary["index"]["by_candidate"].values():
        entry["cells"] = [c for c in entry["cells"] if c["method"] == "exact" or c["share"] != 0.5]
    summary["decisions"] = decisions_json(decide(validate_body(summary)))
    return summary


HNSW_PARTIAL = {"en": "HNSW was built and searched only at the shares", "ko": "HNSW 인덱스는 비율",
                "ja": "HNSW インデックスは割合", "zh": "HNSW 索引只在比例"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_shares_without_hnsw_are_said_in_every_language(with_index: dict[str, Any], lang: str) -> None:
    for setting in ("auto", "ends"):
        text = render_markdown(as_typed(_partial(with_index, setting)), lang)
        part = text[text.index(HEADINGS[lang]):]
        part = part[: part.index("\n## ")]
        assert part.count(HNSW_PARTIAL[lang]) == 1 and "{{" not in part and "{%" not in part
        assert f"`index.hnsw_shares: {setting}`" in part
        assert ("100,000" in part) == (setting == "auto")  # auto says the corpus size that chose it
    # every share with HNSW (all, or an older summary without the plan): nothing to say
    text = render_markdown(as_typed(with_index), lang)
    assert HNSW_PARTIAL[lang] not in text
    complete = copy.deepcopy(with_index)
    complete["index"]["hnsw_plan"] = {"setting": "all", "mode": "all", "documents": 30, "auto_max_documents": 20_000,
                                      "shares": [0, 0.5, 1], "exact_only": []}
    assert HNSW_PARTIAL[lang] not in render_markdown(as_typed(complete), lang)


def test_partial_hnsw_sentence_and_figure(with_index: dict[str, Any]) -> None:
    summary = _partial(with_index, "auto")
    text = render_markdown(as_typed(summary), "en")
    assert ("HNSW was built and searched only at the shares 0% · 100% (`index.hnsw_shares: auto`, chosen for "
            "100,000 documents, more than 20,000); the shares 50% were searched exactly only") in text
    decided = summary["decisions"]["index"]["dynamo"]
    assert {c["share"] for c in decided["cells"] if c["method"] == "hnsw"} == {0, 1}
    figure = index_shares(as_typed(summary))
    assert figure is not None
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    hnsw = lines["dynamo hnsw (measured shares)"]
    assert list(hnsw.get_xdata()) == [0, 1] and hnsw.get_linestyle() == "None"
