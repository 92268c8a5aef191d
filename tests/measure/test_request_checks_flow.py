"""The answers checked against the request through the real flow (measure_target -> build_summary ->
render_report) against in-process fake servers: a hosted-style candidate that answers an empty string 200 with an
error object, echoes another model name and ignores `encoding_format` (as the legacy reference does too)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from embedswap.measure.capture import measure_target
from embedswap.report.publish import render_report
from embedswap.pipeline.build import build_summary, write_summary
from fakeservers import Behaviour, serve
from realkit import make_experiment, measured_attempt

PROBES = ["plain", "empty_string", "encoding_base64", "over_long_input"]


def _external(port: int) -> dict[str, Any]:
    return {"kind": "external", "url": f"http://127.0.0.1:{port}/v1", "capture": ["workload", "probes"]}


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], str]]:
    root = tmp_path_factory.mktemp("request-checks")
    behaviours = {"legacy": Behaviour(), "hosted": Behaviour(model="text-embedding-hosted", error_200=("",))}
    with ExitStack() as stack:
        ports = {name: stack.enter_context(serve(b)) for name, b in behaviours.items()}
        folder = make_experiment(root, "request-checks", _external(ports["legacy"]),
                                 {"hosted": _external(ports["hosted"])}, probes=PROBES)
        attempt, summary = measured_attempt(folder)
    write_summary(summary, attempt)
    written = render_report(folder, attempt.name)
    yield summary, written["report.en.md"].read_text(encoding="utf-8")


def _row(summary: dict[str, Any], probe: str) -> dict[str, Any]:
    return next(r for r in summary["contract"] if r["probe"] == probe)


def test_the_error_body_200_is_its_own_verdict_in_the_table_and_the_advice(flow: tuple[dict[str, Any], str]) -> None:
    summary, report = flow
    row = _row(summary, "empty_string")
    assert row["by_target"]["legacy"]["status"] == 400
    assert row["by_target"]["hosted"]["status"] == 200 and row["by_target"]["hosted"]["n_vectors"] is None
    assert row["verdicts"]["hosted"]["verdict"] == "empty-200"
    assert "| `empty_string` | 400 | 200 without embeddings | empty-200 | 200 without embeddings |" in report
    rules = {c["rule"] for c in summary["decisions"]["client_changes"]}
    assert "check_embeddings" in rules
    assert "check that `data` holds one vector per input before trusting the status" in report


def test_the_echoed_model_and_the_ignored_encoding_are_named(flow: tuple[dict[str, Any], str]) -> None:
    summary, report = flow
    assert summary["contract"][0]["by_target"]["hosted"]["model"] == "text-embedding-hosted"
    plain = _row(summary, "plain")["verdicts"]["hosted"]
    assert (plain["verdict"], plain["aspects"]) == ("metadata-difference", ["model_asked"])
    # the legacy reference ignores base64 too: a note about both servers, not a difference (issue 54); the
    # model echoed otherwise than asked is the candidate's alone
    row = _row(summary, "encoding_base64")
    base64 = row["verdicts"]["hosted"]
    assert "encoding_asked" not in base64["aspects"] and base64["shared"] == ["encoding_asked"]
    assert base64["verdict"] == "metadata-difference" and base64["aspects"] == ["model_asked"]
    assert "encoding_asked" in row["conformance"]["legacy"] and "encoding_asked" in row["conformance"]["hosted"]
    assert "model asked vs echoed" in report
    rules = {c["rule"] for c in summary["decisions"]["client_changes"]}
    assert "check_model" in rules and "check_encoding" not in rules


def test_the_model_limit_is_recorded_with_each_probe(flow: tuple[dict[str, Any], str]) -> None:
    summary, _ = flow
    side = _row(summary, "over_long_input")["by_target"]["hosted"]
    assert side["token_limit"] == 256  # MiniLM's sentence-transformers max_seq_length, not a fixed 512
