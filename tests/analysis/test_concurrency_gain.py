"""What concurrency gained each server (``decisions.latency.concurrency``, embedswap/analysis/concurrency_gain.py):
its concurrent throughput over its own sequential throughput with the bootstrap interval of the stored requests,
read against the throughput margin; computed by the pipeline, upgraded at load for a summary decided before it,
and said by the post (one note for every server where they say the same, one per code otherwise) in ko/en/ja/zh
beside the article's own figure. On the demo's 2-core host every server's concurrent p50 was about four times its
sequential p50: concurrency gained none of them anything (issue 63), which only this field says."""

from __future__ import annotations

import json

import pytest
from embedswap.analysis import decide
from embedswap.analysis.concurrency_gain import concurrency_gains
from embedswap.analysis.post_document import post_document
from embedswap.analysis.upgrade import read_summary, upgrade_summary
from embedswap.config.decisions import DecisionsConfig
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.post import render_post
from embedswap.report.post_checks import code_problems, document_problems, source_problems
from embedswap.summary.model import Summary
from post_numbers import post_problems
from stored_summaries import FIXTURES, stored_summary

COMPLETE = "summary_complete.json"
TIMES = {"ko": "배", "en": "×", "ja": "倍", "zh": "倍"}


def _paced(summary: Summary, factor: float) -> Summary:
    """Every server's concurrent point made ``factor`` times its sequential throughput (each repeat's wall time
    stretched to it; the requests' latencies as measured), decided again and the post document drawn again:
    ``factor`` 1 is the 2-core host, where concurrency only queues the requests."""
    for info in summary.latency.by_target.values():
        seq, conc = info.sequential, info.concurrent
        assert seq is not None and conc is not None and seq.requests is not None and conc.requests is not None
        rate = sum(sum(r) for r in seq.requests.docs) / sum(seq.requests.wall_s)
        docs = [sum(r) for r in conc.requests.docs]
        conc.requests.wall_s = [d / (factor * rate) for d in docs]
        conc.docs_per_s = factor * rate
    summary.decisions.latency.concurrency = concurrency_gains(summary, DecisionsConfig())
    summary.decisions.post.document = post_document(summary, summary.decisions)
    return summary


def test_the_complete_fixture_gains_for_the_candidates_and_not_for_the_locked_legacy_server() -> None:
    """The pooled ratio of the two stored points' throughputs, its interval around it, read against 1.10."""
    summary = stored_summary(COMPLETE)
    gains = summary.decisions.latency.concurrency
    assert {n: g.code for n, g in gains.items()} == {"legacy": "no_gain", "vllm": "gained", "dynamo": "gained"}
    for name, g in gains.items():
        points = summary.decisions.latency.points[name]
        assert g.gain is not None and g.gain.low is not None and g.gain.high is not None
        assert g.gain.value == pytest.approx(points["concurrent"].docs_per_s.value / points["sequential"].docs_per_s.value)
        assert g.gain.low < g.gain.value < g.gain.high and g.margin == 1.10 and g.concurrency == 4
    assert gains["legacy"].gain.high < 1.10 < gains["vllm"].gain.low  # type: ignore[union-attr]


def test_the_pipeline_computes_it_before_rendering() -> None:
    """decide() stores it in the latency decisions, as the load-time migration computes it."""
    summary = stored_summary(COMPLETE)
    assert decide(summary).latency.concurrency == summary.decisions.latency.concurrency


def test_a_host_where_concurrency_only_queues_gains_no_server_anything() -> None:
    summary = _paced(stored_summary(COMPLETE), 1.0)
    gains = summary.decisions.latency.concurrency
    assert {g.code for g in gains.values()} == {"no_gain"}
    assert all(g.gain is not None and g.gain.value == pytest.approx(1.0) for g in gains.values())
    document = summary.decisions.post.document
    assert document is not None
    said = [s for s in document.statements() if s.key.startswith("post.concurrency_gains.")]
    assert [(s.key, s.subjects) for s in said] == [("post.concurrency_gains.no_gain", ["legacy", "vllm", "dynamo"])]
    assert document_problems(summary) == []


def test_a_summary_without_latency_says_not_measured_and_the_post_says_nothing_of_it() -> None:
    summary = stored_summary("summary_smoke.json")
    assert {g.code for g in summary.decisions.latency.concurrency.values()} == {"not_measured"}
    assert all(g.reason == "no_points" and g.gain is None for g in summary.decisions.latency.concurrency.values())
    document = summary.decisions.post.document
    assert document is not None
    assert not [s for s in document.statements() if s.key.startswith("post.concurrency_gains.")]


def test_points_stored_without_their_requests_give_the_value_and_no_verdict() -> None:
    summary = stored_summary("summary_v1_qwen3_tiny.json")
    gains = summary.decisions.latency.concurrency
    assert {(g.code, g.reason) for g in gains.values()} == {("inconclusive", "no_interval")}
    vllm = summary.latency.by_target["vllm"]
    assert vllm.concurrent is not None and vllm.sequential is not None
    assert gains["vllm"].gain is not None and gains["vllm"].gain.low is None
    assert gains["vllm"].gain.value == pytest.approx(vllm.concurrent.docs_per_s / vllm.sequential.docs_per_s)


def test_latency_decisions_stored_before_it_get_it_at_load() -> None:
    """A summary decided before ``concurrency`` was stored: computed at load from its latency section, exactly as
    the pipeline would have (the same bootstrap, the same seeds), and its post document drawn again to say it."""
    data = upgrade_summary(json.loads((FIXTURES / COMPLETE).read_text(encoding="utf-8")))
    del data["decisions"]["latency"]["concurrency"]
    for section in data["decisions"]["post"]["document"]["sections"]:
        section["statements"] = [s for s in section["statements"]
                                 if not s["key"].startswith("post.concurrency_gains.")]
    again = read_summary(data)
    stored = stored_summary(COMPLETE)
    assert again.decisions.latency.concurrency == stored.decisions.latency.concurrency
    assert again.decisions.post.document == stored.decisions.post.document


def test_a_statement_off_its_source_or_its_code_is_caught() -> None:
    """Broken on purpose: a gain printed off its stored value is caught at its source; a statement keyed
    ``gained`` for a server whose stored code is ``no_gain`` is caught by the code check."""
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None and document_problems(summary) == []
    broken = document.model_copy(deep=True)
    statement = next(s for s in broken.statements() if s.key == "post.concurrency_gains.no_gain")
    gain = statement.fact("legacy.gain")
    assert gain is not None and isinstance(gain.value, float)
    gain.value = 2.5
    assert any("legacy.gain is stated as 2.5" in p for p in source_problems(summary, broken))
    wrong = document.model_copy(deep=True)
    statement = next(s for s in wrong.statements() if s.key == "post.concurrency_gains.no_gain")
    statement.key = "post.concurrency_gains.gained"
    assert any("give 'no_gain'" in p for p in code_problems(summary, wrong)), code_problems(summary, wrong)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_post_says_it_in_every_language(lang: str) -> None:
    """Per code one sentence with each server's measured gain and interval; on the paced host one sentence for
    every server. The article's figures are the conclusion's, not said again here. Its figures are the document's
    (post_numbers)."""
    summary = stored_summary(COMPLETE)
    x = TIMES[lang]
    post = render_post(summary, lang)
    legacy = next(line for line in post.splitlines() if f"`legacy` 0.96{x} [0.93{x}, 0.99{x}]" in line)
    candidates = next(line for line in post.splitlines() if f"`vllm` 1.83{x} [1.79{x}, 1.88{x}]" in line)
    assert "`dynamo` 1.85" in candidates and "`vllm`" not in legacy and "2.8" not in candidates + legacy
    assert post_problems(summary, post, lang) == []
    paced = _paced(stored_summary(COMPLETE), 1.0)
    text = render_post(paced, lang)
    lines = [line for line in text.splitlines() if "`legacy` 1.00" in line]
    assert len(lines) == 1 and "`vllm` 1.00" in lines[0] and "`dynamo` 1.00" in lines[0] and "2.8" not in lines[0]
    assert post_problems(paced, text, lang) == []
