"""The whole numbers the post prints are facts of its document too (issue 63, embedswap/analysis/post_counts.py):
the workload's counts, the contract table's statuses, dimensions and tokens, the shim's and the parity gate's counts,
the p99 note's requests, the engines' memory, the host's CPU count and the to-do's truncation limit. Each resolves
to its source (``source_problems``), the renderer prints it from the document, and the text check
(tests/support/post_numbers.py) accepts no whole number that is not one of the document's figures, headings' and
lists' numbering, dates, code and the catalogue's own phrases ("top 5", "nDCG@10") apart. Each check is shown
failing on a document or a renderer broken on purpose."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from embedswap.analysis.upgrade import read_summary, upgrade_summary
from embedswap.report import post, post_claims, post_figures
from embedswap.report.post import render_post
from embedswap.report.post_checks import source_problems
from embedswap.summary.model import Summary
from post_numbers import allowed, claim_figures, integers, post_problems
from stored_summaries import FIXTURES, stored_summary

COMPLETE = "summary_complete.json"
QWEN3 = "summary_v1_qwen3_tiny.json"  # the one fixture that started Dynamo and vLLM alone: the engines' memory


def test_numbering_dates_code_and_the_catalogue_s_own_numbers_are_no_figures() -> None:
    text = ("## 3. Search\n\n1. Send 24 of 24 queries (top 5 changed, nDCG@10, fp32, 5xx, Dynamo 1.6.2).\n"
            "Run `embedswap run --port 18082` on 2026-11-30; ![Figure 2. Latency](figures/x.png) 36.8 ms, 3,375")
    assert integers(text, "en") == ["24", "24", "3,375"]


@pytest.mark.parametrize(("name", "key", "fact"), [
    (COMPLETE, "post.host", "cpu_count"), (COMPLETE, "post.setup_workload", "languages.en"),
    (COMPLETE, "post.setup_workload", "latency_concurrent_requests"), (COMPLETE, "post.setup_workload", "repeats"),
    (COMPLETE, "post.contract_table", "dimensions_reduced.vllm.status"),
    (COMPLETE, "post.contract_table", "input_type_query.vllm.prompt_tokens"),
    (COMPLETE, "post.shim_line", "closed"), (COMPLETE, "post.shim_line", "differ"),
    (COMPLETE, "post.parity_line", "rows"), (COMPLETE, "post.parity_line", "failed"),
    (COMPLETE, "post.p99_note", "n"), (COMPLETE, "post.todo", "limit_tokens"),
    (COMPLETE, "post.latency_table", "concurrency"), (COMPLETE, "post.vectors_table", "documents"),
    (QWEN3, "post.start_times", "dynamo.rss_bytes"), (QWEN3, "post.start_times", "vllm.rss_bytes")])
def test_a_whole_number_off_its_source_is_caught(name: str, key: str, fact: str) -> None:
    summary = stored_summary(name)
    assert source_problems(summary) == []
    document = summary.decisions.post.document
    assert document is not None
    found = next(f for s in document.statements(key) for f in s.facts if f.key == fact)
    assert isinstance(found.value, int)
    found.value += 2**20 if found.value > 2**20 else 1  # bytes: off by a MiB, as printed
    assert any(p.startswith(f"{key}: {fact} is stated as {found.value}") for p in source_problems(summary))


def test_the_shim_counts_are_printed_from_the_document() -> None:
    """A count changed in the document is printed as changed (the renderer reads no other) and caught at its
    source."""
    summary = stored_summary(COMPLETE)
    document = summary.decisions.post.document
    assert document is not None
    closed = next(document.statements("post.shim_line")).facts[0]
    closed.value = 5
    assert "closes 5 of 9 differences" in render_post(summary, "en")
    assert any("post.shim_line: closed is stated as 5" in p for p in source_problems(summary))


def _caught(summary: Summary, number: str, lang: str = "en") -> None:
    """The post rendered (by a renderer broken on purpose) prints ``number``, which no document figure is: the text
    check says so."""
    text = render_post(summary, lang)
    assert number not in allowed(summary) | claim_figures(summary, lang)
    assert number in integers(text, lang), f"the broken renderer does not print {number}"
    problems = post_problems(summary, text, lang)
    assert f"{lang}: the whole number {number} is no figure of the post document" in problems, problems


def _more_tokens(original: Callable[..., Any]) -> Callable[..., Any]:
    """The contract table's answers with a 201-token count read off by a thousand."""
    def answer(ctx: Any, probe: str, name: str, side: Any) -> Any:
        found = original(ctx, probe, name, side)
        return found.model_copy(update={"prompt_tokens": 1201}) \
            if found is not None and found.prompt_tokens == 201 else found
    return answer


# what is broken: (fixture, module, function, the broken function given the original, the number it prints)
BROKEN: dict[str, tuple[str, Any, str, Callable[[Callable[..., Any]], Callable[..., Any]], str]] = {
    "host": (COMPLETE, post_figures, "host", lambda f: lambda ctx, env: {**f(ctx, env), "cpu_count": "61"}, "61"),
    "workload": (COMPLETE, post_figures, "workload",
                 lambda f: lambda ctx, st: {**f(ctx, st), "languages": "en 23, ko 20"}, "23"),
    "contract": (COMPLETE, post_figures, "answer", _more_tokens, "1,201"),
    "shim": (COMPLETE, post_figures, "shim_counts", lambda f: lambda ctx, name: ("77", f(ctx, name)[1]), "77"),
    "parity": (COMPLETE, post, "parity_claim",
               lambda f: lambda ctx: f(ctx).model_copy(update={"rows": "43"}), "43"),
    "p99": (COMPLETE, post_claims, "_p99_note",
            lambda f: lambda ctx, name: (f(ctx, name) or "").replace("24", "123"), "123"),
    "todo": (COMPLETE, post_figures, "todo_limit", lambda f: lambda ctx: "255", "255"),
    "memory": (QWEN3, post_figures, "memory", lambda f: lambda ctx, name: "4,906", "4,906"),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_renderer_printing_another_whole_number_is_caught(what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name, module, attribute, breaking, number = BROKEN[what]
    summary = stored_summary(name)
    assert post_problems(summary, render_post(summary, "en"), "en") == []
    monkeypatch.setattr(module, attribute, breaking(getattr(module, attribute)))
    _caught(summary, number)


def test_the_latency_header_s_concurrency_is_the_document_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliberate breakage: the columns' concurrency printed as another number than the document's."""
    summary = stored_summary(COMPLETE)
    printed = post_figures.printed

    def other(ctx: Any, key: str, fact: str, subjects: list[str] | None = None) -> str:
        return "12" if fact == "concurrency" else printed(ctx, key, fact, subjects)

    monkeypatch.setattr(post_figures, "printed", other)
    _caught(summary, "12")


def test_a_stored_document_without_the_whole_numbers_is_drawn_again() -> None:
    """A document stored before the whole numbers were its facts (its host statement has no CPU count) is drawn
    again at load, with the contract table, the shim's and the parity gate's counts."""
    data = upgrade_summary(json.loads((FIXTURES / COMPLETE).read_text(encoding="utf-8")))
    document = data["decisions"]["post"]["document"]
    for section in document["sections"]:
        section["statements"] = [s for s in section["statements"]
                                 if s["key"] not in ("post.contract_table", "post.shim_line", "post.parity_line")]
        for s in section["statements"]:
            if s["key"] == "post.host":
                s["facts"] = [f for f in s["facts"] if f["key"] != "cpu_count"]
    again = read_summary(data)
    assert again.decisions.post.document == stored_summary(COMPLETE).decisions.post.document


def _with_long_input() -> Summary:
    """The complete fixture with a long-input section: the legacy server keeps the first 256 tokens of a
    2,000-token document, vLLM answers 400, Dynamo keeps 512 (another vector for the same text)."""
    data = json.loads((FIXTURES / COMPLETE).read_text(encoding="utf-8"))
    data["long_input"] = {"measured": True, "document_tokens": 2000, "limits": [256, 512], "threshold": 0.99,
                          "by_target": {
                              "legacy": {"target": "legacy", "code": "truncated", "limit": 256, "cosine": 0.9999},
                              "vllm": {"target": "vllm", "code": "refused", "status": 400, "same_as_legacy": False},
                              "dynamo": {"target": "dynamo", "code": "truncated", "limit": 512, "cosine": 0.9998,
                                         "same_as_legacy": False}}}
    return read_summary(data)


def test_the_long_input_sentence_prints_the_document_s_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conclusion's long-input sentence: the document's tokens, the status and the limits as the document's
    ``post.long_inputs`` states them; each held to its source, and a renderer printing another one caught."""
    summary = _with_long_input()
    assert source_problems(summary) == []
    text = render_post(summary, "en")
    assert "2,000-token document" in text and "HTTP 400" in text and "first 512 tokens" in text
    assert post_problems(summary, text, "en") == []
    document = summary.decisions.post.document
    assert document is not None
    limit = next(document.statements("post.long_inputs")).fact("dynamo.limit")
    assert limit is not None
    limit.value = 1000
    assert any("post.long_inputs: dynamo.limit is stated as 1000" in p for p in source_problems(summary))
    limit.value = 512
    stated = post_figures.long_input
    monkeypatch.setattr(post_figures, "long_input", lambda ctx, st: {**stated(ctx, st), "tokens": "2,048"})
    _caught(summary, "2,048")


# a server that corrupts answers (tests/report/test_faults_headline.py's), with one probe's stale connection
CORRUPTING = {"answers": 90, "unusable": 13, "share": 0.1444, "by_part": {"latency": 13},
              "by_kind": {"wrong_length": 9, "bad_index": 2, "non_finite": 1, "cut_body": 1},
              "events": [{"part": "probes", "kind": "stale_connection", "count": 1, "sends": 3, "probe": "plain",
                          "path": "/v1/embeddings", "retried": [200], "others": [200, 200]}]}


@pytest.mark.parametrize("lang", ["ko", "en", "ja", "zh"])
def test_the_fault_lines_print_the_document_s_figures(complete_upgraded: dict[str, Any], lang: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The conclusion's fault line of a corrupting server (unusable of answers, the share, each kind, the stale
    connection's sends) prints the document's ``post.faults``: no figure outside it, each held to its source, and a
    renderer printing another count caught."""
    data = json.loads(json.dumps(complete_upgraded))
    data["faults"] = {"by_target": {"vllm": CORRUPTING}}
    summary = read_summary(data)
    assert source_problems(summary) == []
    text = render_post(summary, lang)
    assert "13" in integers(text, lang) and "90" in integers(text, lang) and "14.4" in text
    assert post_problems(summary, text, lang) == []
    document = summary.decisions.post.document
    assert document is not None
    sends = next(document.statements("post.faults")).fact("events.0.sends")
    assert sends is not None and sends.value == 3
    sends.value = 4
    assert any("post.faults: events.0.sends is stated as 4" in p for p in source_problems(summary))
    sends.value = 3
    stated = post_figures.faults
    monkeypatch.setattr(post_figures, "faults", lambda ctx, heads: [
        {**h, "unusable": "131"} for h in stated(ctx, heads)])
    _caught(summary, "131", lang)
