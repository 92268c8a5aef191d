"""A probe that got no answer on every send is a contract finding, not a transport-fault rate (issue 64, point 4):
counted in no part, kept as one event of its own; the post's conclusion speaks of transport faults only where they
were decided a finding (``decisions.faults`` not ``none``) and intermittent, and one probe's events are one sentence
(issues 63, 64)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from synthetic_experiment import write_experiment

from embedswap.captures import new_attempt
from embedswap.config import load_experiment
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.summary.sections.faults import faults_section
from typed_summary import as_typed

DROPPED = "RemoteProtocolError: Server disconnected without sending a response."
LOST = {"status": 0, "error": DROPPED}
OK = {"status": 200, "error": None, "dim": 384}


def _section(tmp_path: Path, probes: list[dict[str, Any]]) -> dict[str, Any]:
    folder = write_experiment(tmp_path / "exp", {
        "name": "t", "date": "2026-12-06", "workload": {"documents": "d.jsonl"},
        "targets": {"legacy": {"kind": "legacy", "port": 18801}, "tei": {"kind": "vllm", "port": 18802}},
        "candidates": ["tei"]}, [{"id": "d0", "lang": "en", "text": "a"}])
    attempt = new_attempt(folder)
    attempt.write_jsonl("tei/workload_requests.jsonl", [OK] * 4)
    attempt.write_jsonl("tei/probes.jsonl", probes)
    return faults_section(load_experiment(folder), attempt)["by_target"]["tei"]


def test_a_probe_dropped_on_every_send_counts_in_no_rate_and_is_one_event(tmp_path: Path) -> None:
    # the empty string: no answer on 3 of 3 sends, one of them sent once more after a stale connection, no answer
    empty = {"probe": "empty_string", "path": "/v1/embeddings", "sent": {"input": [""]}, **LOST,
             "repeats": [{**LOST, "stale_retry": {"status": 0, "error": f"stale keep-alive connection: {DROPPED}"}},
                         LOST]}
    tei = _section(tmp_path, [empty, {"probe": "plain", "sent": {"input": ["a"]}, **OK, "repeats": [OK, OK]}])
    assert tei["by_kind"] == {} and tei["unusable"] == 0
    assert tei["parts"]["probes"] == {"answers": 3, "unusable": 0, "by_kind": {}}  # plain's three, not the empty one
    assert tei["events"] == [{"part": "probes", "kind": "connection", "count": 3, "sends": 3, "probe": "empty_string",
                              "path": "/v1/embeddings", "retried": [0], "others": [], "every_send": True}]


def test_an_intermittent_drop_stays_a_transport_fault_in_one_sentence(tmp_path: Path) -> None:
    # one send of three lost, another answered after a stale connection: one event, counted in the probes' rate
    retried = {**OK, "stale_retry": {"status": 0, "error": f"stale keep-alive connection: {DROPPED}"}}
    probe = {"probe": "plain", "path": "/v1/embeddings", "sent": {"input": ["a"]}, **OK, "repeats": [LOST, retried]}
    tei = _section(tmp_path, [probe])
    assert tei["by_kind"] == {"connection": 1} and tei["parts"]["probes"]["answers"] == 3
    assert tei["events"] == [{"part": "probes", "kind": "connection", "count": 2, "sends": 3, "probe": "plain",
                              "path": "/v1/embeddings", "retried": [200], "others": [200]}]


def _with_faults(summary: dict[str, Any], dynamo: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(summary)
    out["faults"] = {"by_target": {"legacy": {"answers": 262, "unusable": 0, "share": 0, "by_kind": {}},
                                   "dynamo": dynamo}}
    return out


EVERY_SEND = {"part": "probes", "kind": "connection", "count": 3, "sends": 3, "probe": "empty_string",
              "path": "/v1/embeddings", "retried": [0], "every_send": True}
# issue 63's non-finding: one stale connection on a route the legacy server answers 404 too, the retry answered 404
STALE_404 = {"part": "probes", "kind": "stale_connection", "count": 1, "sends": 3, "probe": "v2_embed_query",
             "path": "/v2/embed", "retried": [404], "others": [404]}
NO_FAULT = {"answers": 262, "unusable": 0, "share": 0, "by_kind": {},
            "parts": {"workload": {"answers": 180, "unusable": 0, "by_kind": {}},
                      "probes": {"answers": 82, "unusable": 0, "by_kind": {}}}}


def _conclusion(post: str) -> str:
    return post.split("## 1.")[0]


@pytest.mark.parametrize("lang", ["ko", "en", "ja", "zh"])
def test_the_conclusion_leaves_a_non_finding_and_a_probe_s_own_finding_to_the_report(
        complete_upgraded: dict[str, Any], lang: str) -> None:
    summary = _with_faults(complete_upgraded, {**NO_FAULT, "events": [STALE_404, EVERY_SEND]})
    post, report = render_post(as_typed(summary), lang), render_markdown(as_typed(summary), lang)
    assert "`empty_string`" not in _conclusion(post) and "`v2_embed_query`" not in _conclusion(post), lang
    assert "5.0%" not in _conclusion(post)  # no transport-fault rate, no margin
    # in the full report, under the server's name, one sentence per probe
    lines = report.splitlines()
    headline = next(i for i, line in enumerate(lines)
                    if line.startswith("- `dynamo`") and "`v2_embed_query`" in lines[i + 1])
    events = lines[headline + 1:headline + 3]
    assert "`v2_embed_query`" in events[0] and "`empty_string`" in events[1], (lang, events)


def test_the_report_words_the_probe_s_own_finding_once(complete_upgraded: dict[str, Any]) -> None:
    report = render_markdown(as_typed(_with_faults(complete_upgraded, {**NO_FAULT, "events": [EVERY_SEND]})), "en")
    lines = [line for line in report.splitlines() if "`empty_string` (`/v1/embeddings`)" in line]
    assert len(lines) == 1 and ("got no answer on every one of its 3 sends, and again when sent once more: that is "
                                "how this server answers the request, not an intermittent transport fault") in lines[0]


def test_intermittent_faults_stay_in_the_conclusion_without_the_probe_s_own_finding(
        complete_upgraded: dict[str, Any]) -> None:
    intermittent = {"part": "probes", "kind": "connection", "count": 1, "sends": 3, "probe": "v2_embed_query",
                    "path": "/v2/embed", "others": [404]}
    dynamo = {"answers": 262, "unusable": 1, "share": 0.0038, "by_part": {"probes": 1}, "by_kind": {"connection": 1},
              "parts": {"workload": {"answers": 180, "unusable": 0, "by_kind": {}},
                        "probes": {"answers": 82, "unusable": 1, "by_kind": {"connection": 1}}},
              "events": [intermittent, EVERY_SEND]}
    conclusion = _conclusion(render_post(as_typed(_with_faults(complete_upgraded, dynamo)), "en"))
    assert "`dynamo` answered 1 of 262 requests (0.4%)" in conclusion and "transport faults" in conclusion
    assert "1 of 3 sends of the probe `v2_embed_query`" in conclusion and "`empty_string`" not in conclusion
