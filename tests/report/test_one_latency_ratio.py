"""One latency ratio per candidate and figure: the full report, the post, the front matter, the console lines of
``embedswap run`` and notebook 04's latency table print the one stored value (``Summary.latency_ratio``: the
pooled ratio with its 95 % bootstrap interval, ``decisions.latency.ratios.<c>.intervals``, the one the verdict
rests on) and no other statistic's ratio.

The fixture's medians of the repeats are moved far from the pooled percentiles, so a reader that took the median
ratio (the copy summaries once stored as ``seq_p50``/``conc_docs_per_s``) would print a number found nowhere else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from embedswap.report.catalogue import LANGUAGES, catalogue, fill
from embedswap.report.format import fmt
from embedswap.report.front_matter import description
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.report.publish import headline
from embedswap.runner import headline as console_lines
from embedswap.steps.tables import latency_table
from embedswap.summary.model import Summary
from embedswap.analysis.upgrade import read_summary, upgrade_summary
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
CANDIDATE = "vllm"
# the candidate's medians of the repeats, moved: sequential p50 and concurrent docs/s
MEDIANS = {"sequential": ("p50_ms", 50.0), "concurrent": ("docs_per_s", 270.0)}  # 0.92x, 1.91x


def _raw() -> dict[str, Any]:
    data = json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8"))
    for run, (field, value) in MEDIANS.items():
        data["latency"]["by_target"][CANDIDATE][run][field] = value
    return data


@pytest.fixture(scope="module")
def summary() -> Summary:
    return read_summary(_raw())


def _strings(summary: Summary) -> dict[str, tuple[str, str]]:
    """figure -> (the one ratio as printed, the median-of-repeats ratio as it would have been printed)."""
    legacy = summary.latency.of(summary.roles.legacy)
    mine = summary.latency.of(CANDIDATE)
    out = {}
    for (run, (field, _)), figure in zip(MEDIANS.items(), ("p50", "docs_per_s")):
        one = summary.latency_ratio(CANDIDATE, run, figure)
        median = getattr(getattr(mine, run), field) / getattr(getattr(legacy, run), field)
        out[figure] = (fmt(one.value, "ratio"), fmt(median, "ratio"))
    return out


def test_the_one_ratio_is_the_stored_pooled_one(summary: Summary) -> None:
    stored = summary.decisions.latency.ratio(CANDIDATE)
    assert summary.latency_ratio(CANDIDATE, "sequential", "p50") is stored.intervals["sequential"].p50
    entry = summary.latency_ratio(CANDIDATE, "concurrent", "docs_per_s")
    assert entry.statistic == "pooled" and entry.low < entry.value < entry.high and entry.n == [120, 120]
    assert "ratios" not in summary.decisions.shown.model_dump()


def test_report_post_front_matter_and_console_print_the_same_ratio(summary: Summary) -> None:
    strings = _strings(summary)
    for figure, (one, median) in strings.items():
        assert one != median, figure  # the fixture tells the two statistics apart
    outputs = {"console": "\n".join(console_lines(summary)),
               "notebook 04": latency_table(as_typed(summary)).to_string()}
    for lang in LANGUAGES:
        outputs[f"report.{lang}"] = render_markdown(as_typed(summary), lang)
        # the pair of candidates' line prints another ratio (one candidate over the other), not this one
        outputs[f"post.{lang}"] = "\n".join(line for line in render_post(as_typed(summary), lang).splitlines()
                                            if not all(f"`{n}`" in line for n in summary.roles.candidates))
        outputs[f"front matter.{lang}"] = description(headline(as_typed(summary)), lang)
    for where, text in outputs.items():
        for figure, (one, median) in strings.items():
            if where.startswith("front matter") and figure == "docs_per_s":
                continue  # the front matter states the sequential p50 alone
            lang = where.rsplit(".", 1)[-1]
            if where.startswith(("post.", "front matter.")) and lang != "en":  # a ratio written as 배 / 倍
                times = catalogue(lang).terms["post"]["times"]
                one, median = (fill(times, x=v.removesuffix("×")) for v in (one, median))
            assert one in text, (where, figure, one)
            assert median not in text, (where, figure, median)


def test_the_full_report_prints_the_ratio_with_its_interval(summary: Summary) -> None:
    entry = summary.latency_ratio(CANDIDATE, "sequential", "p50")
    text = render_markdown(as_typed(summary), "en")
    cell = f"{fmt(entry.value, 'ratio')} [{fmt(entry.low, 'ratio')}–{fmt(entry.high, 'ratio')}]"
    line = next(line for line in text.splitlines() if line.startswith(f"- `{CANDIDATE}`: sequential p50 went from"))
    assert cell in line


def test_a_summary_without_per_request_data_shows_the_ratio_of_its_medians() -> None:
    """No pooled ratio exists: the report's one statistic is the median of the repeats (decisions.shown), and the
    ratio is that of the two shown medians, value only, computed on reading and never stored."""
    data = json.loads((FIXTURES / "summary_v1_qwen3_tiny.json").read_text(encoding="utf-8"))
    summary = read_summary(data)
    assert summary.decisions.shown.statistic == "median_of_repeats"
    entry = summary.latency_ratio("vllm", "sequential", "p50")
    shown = summary.decisions.shown
    assert entry is not None and entry.statistic == "median_of_repeats" and entry.low is None
    assert entry.value == shown.at("vllm", "sequential").p50_ms / shown.at("legacy", "sequential").p50_ms
    assert summary.decisions.latency.ratio("vllm").intervals == {}  # nothing stored
    assert summary.latency_ratio("vllm", "sweep_c999", "p50") is None  # not measured there
    assert f"sequential p50 {fmt(entry.value, 'ratio')} " in render_post(as_typed(summary), "en")


def test_an_older_v2_summary_loses_the_copies_on_load() -> None:
    """A version-2 summary decided when the ratio was stored three ways and the interval's label was 'verdict'."""
    current = upgrade_summary(_raw())
    older = json.loads(json.dumps(current))
    ratio = older["decisions"]["latency"]["ratios"][CANDIDATE]
    ratio.update(seq_p50=0.9, conc_docs_per_s=1.4, conc_p50=0.5, complete=True)
    for point in ratio["intervals"].values():
        for entry in point.values():
            entry["verdict"] = entry.pop("direction")
    older["decisions"]["shown"]["ratios"] = {CANDIDATE: {"seq_p50": 0.9, "conc_docs_per_s": 1.4}}
    assert read_summary(older) == read_summary(current)


def test_notebook_04_tables_from_the_summary_dict_step_04_writes() -> None:
    """Notebook 04 hands ``ctx.summary()``'s dict to the latency table, then asks for the ablation: the ratio
    columns are the candidates' one ratio; the legacy server and the ablation's variants have none."""
    data = upgrade_summary(_raw())
    table = latency_table(as_typed(data))
    one = _strings(read_summary(data))
    assert table.loc[CANDIDATE, "seq p50 ratio"] == one["p50"][0]
    assert table.loc[CANDIDATE, "c4 docs/s ratio"] == one["docs_per_s"][0]
    assert table.loc["legacy"].isna()["seq p50 ratio"]
    ablation = latency_table(as_typed(data), "ablation")
    assert "seq p50 ratio" not in ablation.columns and len(ablation) >= 2
