"""The capacity section in every report language, and its figure, from a summary with an open-loop sweep: a
server that sheds load, one whose fast answers carry truncated vectors, and a candidate with twice the capacity."""

from __future__ import annotations

import copy
import json

import pytest

from embedswap.report import figures
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.figure_words import figure_stem
from embedswap.report.markdown import render_markdown
from capacity_summary import FIXTURE, summary_with_capacity
from typed_summary import decisions_of
from typed_summary import as_typed


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_capacity_section_states_capacity_replicas_shedding_and_the_goodput_gap(lang: str) -> None:
    summary = summary_with_capacity()
    text = render_markdown(as_typed(copy.deepcopy(summary)), lang, figures={"capacity_curve": True})
    decided = summary["decisions"]["capacity"]
    assert decided["servers"]["vllm"]["sheds_from"] == 8.0
    assert decided["servers"]["dynamo"]["goodput_gap"] == "wrong_vectors"
    assert decided["servers"]["dynamo"]["invalid_rates"] == [16.0]
    assert decided["servers"]["legacy"]["replicas"] == 6
    link = f"figures/{figure_stem('capacity_curve', lang)}.png"  # the figure drawn in the report's language
    assert link in text
    assert "429" in text and "`dynamo`" in text
    capacity = f"{decided['servers']['vllm']['capacity']:,.1f}"
    assert capacity in text
    assert "{" not in text.split(link)[0][-4000:]  # every placeholder filled


def test_a_summary_without_the_sweep_has_no_capacity_section() -> None:
    summary = json.loads(FIXTURE.read_text(encoding="utf-8"))
    text = render_markdown(as_typed(summary), "en")
    assert "Capacity at a latency target" not in text


def test_the_figure_marks_the_target_and_each_capacity() -> None:
    summary = summary_with_capacity()
    fig = figures.capacity_curve(as_typed(summary))
    assert fig is not None
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any("p99 target 500 ms" in label for label in labels)
    assert any(label.startswith("legacy capacity") for label in labels)
    assert any("invalid" in label for label in labels)
    assert figures.capacity_curve(as_typed(json.loads(FIXTURE.read_text(encoding="utf-8")))) is None


def test_notebook_04_capacity_table_reads_the_decisions() -> None:
    from embedswap.steps.capacity_table import capacity_table

    table = capacity_table(as_typed(summary_with_capacity()))
    assert list(table.index) == ["legacy", "vllm", "dynamo"]
    assert table.loc["legacy", "replicas"] == 6 and table.loc["dynamo", "goodput_gap"] == "wrong_vectors"
    assert capacity_table(as_typed(json.loads(FIXTURE.read_text(encoding="utf-8")))).empty


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_invalid_split_run_names_its_worker_lost_or_behind(lang: str) -> None:
    summary = summary_with_capacity()
    runs = summary["capacity"]["by_target"]["dynamo"]["runs"]
    for run in runs:
        if run["rate"] == 16.0 and run["repeat"] == 0:
            run.update(invalid_worker=3, lost_workers={"3": "ActorDiedError: killed"},
                       worker_lag_p90_ms={"0": 1.0, "1": 2.0, "2": 1.5})
        elif run["rate"] == 16.0:
            run.update(invalid_worker=1, worker_lag_p90_ms={"0": 2.0, "1": 812.5})
    summary["decisions"] = decisions_of(summary)
    text = render_markdown(as_typed(copy.deepcopy(summary)), lang, figures={})
    lines = [line for line in text.splitlines() if "ActorDiedError: killed" in line]
    assert len(lines) == 1 and "3" in lines[0] and "`dynamo`" in lines[0]
    behind = [line for line in text.splitlines() if "812.5" in line]
    assert len(behind) == 1 and "`dynamo`" in behind[0]
    plain = render_markdown(as_typed(summary_with_capacity()), lang, figures={})
    assert "ActorDiedError" not in plain and "812.5" not in plain  # one sender: no worker is named
