"""A server that corrupts some of its answers (summary ``faults``): one headline with the share of unusable
answers by kind in the report and the post, no latency ratio for it and no "the vectors were the same"."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from synthetic_experiment import write_experiment

from embedswap.captures import new_attempt
from embedswap.config import load_experiment
from embedswap.report.front_matter import description
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.report.publish import headline
from embedswap.summary.sections.faults import faults_section
from embedswap.analysis.upgrade import read_summary
from typed_summary import as_typed

CORRUPTING = {"answers": 90, "unusable": 13, "share": 0.1444, "by_part": {"latency": 13},
              "by_kind": {"wrong_length": 9, "bad_index": 2, "non_finite": 1, "cut_body": 1}}


def with_faults(summary: dict[str, Any], **by_target: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(summary)
    out["faults"] = {"by_target": by_target}
    return out


def test_a_summary_without_the_faults_part_reads_it_absent_and_keeps_its_sentences(complete_upgraded: dict[str, Any]) -> None:
    assert read_summary(complete_upgraded).faults.absent
    post = render_post(as_typed(complete_upgraded), "en")
    assert "The vectors were the same" in post and "`vllm` against the legacy server: sequential p50 0.68×" in post


def test_a_corrupting_candidate_gets_a_headline_and_no_comparison(complete_upgraded: dict[str, Any]) -> None:
    summary = with_faults(complete_upgraded, vllm=CORRUPTING,
                          legacy={"answers": 90, "unusable": 0, "share": 0, "by_kind": {}})
    post = render_post(as_typed(summary), "en")
    assert ("`vllm` answered 13 of 90 requests (14.4%) with an answer that could not be used (wrong length 9, "
            "index not a permutation 2, non-finite values 1, body cut off 1).") in post
    assert "The vectors were the same" not in post and "## 3. The vectors of a server that corrupts answers" in post
    assert "`vllm` against the legacy server" not in post and "`dynamo` against the legacy server" in post  # the other candidate keeps its ratio
    report = render_markdown(as_typed(summary), "en")
    assert "`vllm`: 13 of 90 answers (14.4%) could not be used: wrong length 9" in report
    assert "no ratio is given" in report
    latency = report[report.index("## 5. Latency"):]
    assert "- `vllm`: sequential p50 went from" not in latency and "- `dynamo`: sequential p50" in latency
    head = headline(as_typed(summary))  # the front matter's description and the console: no ratio either
    assert head.candidate == "vllm" and head.candidate_seq_p50_ratio is None
    assert "Sequential p50" not in description(head, "en")
    assert headline(as_typed(complete_upgraded)).candidate_seq_p50_ratio is not None  # a whole one keeps it


@pytest.mark.parametrize("lang", ["ko", "ja", "zh"])
def test_the_headline_is_in_every_language(complete_upgraded: dict[str, Any], lang: str) -> None:
    summary = with_faults(complete_upgraded, vllm=CORRUPTING)
    post, report = render_post(as_typed(summary), lang), render_markdown(as_typed(summary), lang)
    assert "14.4%" in post and "14.4%" in report
    assert "wrong length" not in post  # the kinds in the language's words


def test_a_legacy_server_that_corrupts_answers_leaves_no_ratio_at_all(complete_upgraded: dict[str, Any]) -> None:
    post = render_post(as_typed(with_faults(complete_upgraded, legacy=CORRUPTING)), "en")
    assert "against the legacy server:" not in post.split("## 1.")[0] and "`legacy` answered 13 of 90" in post


def test_the_section_counts_every_capture_by_kind(tmp_path: Path) -> None:
    folder = write_experiment(tmp_path / "exp", {
        "name": "t", "date": "2026-12-03", "workload": {"documents": "d.jsonl"},
        "targets": {"legacy": {"kind": "legacy", "port": 18801}, "vllm": {"kind": "vllm", "port": 18802}},
        "candidates": ["vllm"]}, [{"id": "d0", "lang": "en", "text": "a"}])
    attempt = new_attempt(folder)
    ok = {"status": 200, "error": None, "dim": 384}
    attempt.write_jsonl("vllm/workload_requests.jsonl", [ok, ok, {"status": 200, "dim": 384,
                                                                  "error": "vectors of different lengths [383, 384]"}])
    attempt.write_jsonl("vllm/latency_requests.jsonl", [
        {"status": 200, "error": None}, {"status": 0, "error": "ClientPayloadError: Response payload is not completed"},
        {"status": 429, "error": "slow down"}, {"status": 0, "error": "TimeoutError: no complete answer within 60 s"}])
    attempt.write_jsonl("vllm/probes.jsonl", [
        {"probe": "plain", "sent": {"input": ["a"]}, "status": 200, "error": None, "dim": 383,
         "repeats": [ok, {"status": 200, "error": "non-finite values (NaN/inf) in vectors", "dim": 384}]},
        {"probe": "dimensions_reduced", "sent": {"input": ["a"], "dimensions": 256}, "status": 200, "error": None,
         "dim": 256},  # asked for: not another length
        # refused: an answer the transport delivered (counted, since issue 56, in the rate's denominator), never
        # unusable
        {"probe": "empty_list", "sent": {"input": []}, "status": 400, "error": "empty"},
        {"probe": "v2_embed_query", "status": None, "not_applicable": True}])
    attempt.write_jsonl("legacy/workload_requests.jsonl", [ok])
    section = faults_section(load_experiment(folder), attempt)
    vllm = section["by_target"]["vllm"]
    assert vllm["answers"] == 3 + 4 + 5 and vllm["unusable"] == 6
    assert vllm["by_kind"] == {"wrong_length": 2, "cut_body": 1, "status": 1, "timeout": 1, "non_finite": 1}
    assert vllm["by_part"] == {"workload": 1, "latency": 3, "probes": 2} and "corrupting" not in vllm  # decided
    assert vllm["parts"]["probes"] == {"answers": 5, "unusable": 2, "by_kind": {"wrong_length": 1, "non_finite": 1}}
    assert section["by_target"]["legacy"] == {
        "answers": 1, "unusable": 0, "share": 0.0, "by_kind": {}, "by_part": {},
        "parts": {"workload": {"answers": 1, "unusable": 0, "by_kind": {}}}}


def test_an_intermittent_probe_is_not_called_refused(complete: dict[str, Any]) -> None:
    from embedswap.analysis.upgrade import upgrade_summary

    summary = copy.deepcopy(complete)
    row = next(r for r in summary["contract"] if r["probe"] == "over_long_input")
    before = render_post(as_typed(upgrade_summary(summary)), "en")
    refused = next(line for line in before.splitlines() if "Refused or failed" in line)
    assert "over-long input" in refused  # the fixture's candidates refuse it: listed
    for name in ("vllm", "dynamo"):
        row["verdicts"][name] = {"verdict": "nondeterministic", "cosine": None, "aspects": ["repeats"],
                                 "detail": "the candidate answered 1 of 3 identical requests otherwise"}
    after = render_post(as_typed(upgrade_summary(summary)), "en")
    refused = next(line for line in after.splitlines() if "Refused or failed" in line)
    assert "over-long input" not in refused and "unknown model name" in refused


def test_a_dropped_and_a_retried_request_are_kept_as_events(tmp_path: Path) -> None:
    """Dynamo on the demo: one of three sends of a probe to a route it does not serve got no answer; a workload
    request on a stale keep-alive connection was sent once more and answered (counted once, by that answer)."""
    folder = write_experiment(tmp_path / "exp", {
        "name": "t", "date": "2026-12-03", "workload": {"documents": "d.jsonl"},
        "targets": {"legacy": {"kind": "legacy", "port": 18801}, "dynamo": {"kind": "vllm", "port": 18802}},
        "candidates": ["dynamo"]}, [{"id": "d0", "lang": "en", "text": "a"}])
    attempt = new_attempt(folder)
    ok = {"status": 200, "error": None, "dim": 384}
    dropped = "RemoteProtocolError: Server disconnected without sending a response."
    attempt.write_jsonl("dynamo/workload_requests.jsonl", [
        ok, {**ok, "stale_retry": {"status": 0, "error": f"stale keep-alive connection: {dropped}", "latency_ms": 1}}])
    attempt.write_jsonl("dynamo/probes.jsonl", [
        {"probe": "v2_embed_query", "path": "/v2/embed", "sent": {"texts": ["a"]}, "status": 404, "error": "nf",
         "repeats": [{"status": 404, "error": "nf"}, {"status": 0, "error": dropped}]}])
    dynamo = faults_section(load_experiment(folder), attempt)["by_target"]["dynamo"]
    assert dynamo["answers"] == 5 and dynamo["by_kind"] == {"connection": 1}
    assert dynamo["events"] == [
        {"part": "workload", "kind": "stale_connection", "count": 1, "retried": [200]},
        {"part": "probes", "kind": "connection", "count": 1, "sends": 3, "probe": "v2_embed_query",
         "path": "/v2/embed", "retried": [], "others": [404]}]


DROPPED = {"answers": 262, "unusable": 1, "share": 0.0038, "corrupting": True, "by_part": {"probes": 1},
           "by_kind": {"connection": 1},
           "parts": {"workload": {"answers": 180, "unusable": 0, "by_kind": {}},
                     "probes": {"answers": 82, "unusable": 1, "by_kind": {"connection": 1}}},
           "events": [{"part": "probes", "kind": "connection", "count": 1, "sends": 3, "probe": "v2_embed_query",
                       "path": "/v2/embed", "others": [404]}]}


def test_a_dropped_connection_is_stated_and_the_comparisons_stay(complete_upgraded: dict[str, Any]) -> None:
    """The demo's Dynamo (issue 56): one of three sends to a route it does not serve got no answer. It is named
    with its probe and kind; its vectors and latency are still compared (``corrupting`` as an older kit wrote it
    is dropped at load: the kinds decide)."""
    summary = with_faults({**complete_upgraded, "schema_version": 2}, dynamo=DROPPED,
                          legacy={"answers": 262, "unusable": 0, "share": 0, "by_kind": {}})
    post = render_post(as_typed(summary), "en")
    assert ("`dynamo` answered 1 of 262 requests (0.4%) with an answer that could not be used (no answer 1). They "
            "are transport faults, not above the 5.0% margin") in post
    assert ("1 of 3 sends of the probe `v2_embed_query` (`/v2/embed`) got no answer; its other sends were answered "
            "404.") in post
    assert "corrupts" not in post and "`dynamo` against the legacy server" in post
    report = render_markdown(as_typed(summary), "en")
    assert "no ratio is given" not in report and "- `dynamo`: sequential p50" in report[report.index("## 5. Latency"):]
    row = next(line for line in report.splitlines() if line.startswith("| `dynamo` | probes |"))
    assert "| 82 | no answer 1 | 1.2% [0.1%, 5.7%] |" in row and "not shown above the margin" in row, row


def test_the_faults_table_calls_the_corrupting_proxy_so(complete_upgraded: dict[str, Any]) -> None:
    proxy = {**CORRUPTING, "parts": {"latency": {"answers": 90, "unusable": 13, "by_kind": CORRUPTING["by_kind"]}}}
    report = render_markdown(as_typed(with_faults(complete_upgraded, vllm=proxy)), "en")
    row = next(line for line in report.splitlines() if line.startswith("| `vllm` | latency |"))
    assert "wrong length 9" in row and "corrupts answers (a finding at any count)" in row
    for lang in ("ko", "ja", "zh"):
        assert "`vllm`" in render_markdown(as_typed(with_faults(complete_upgraded, vllm=proxy)), lang)
