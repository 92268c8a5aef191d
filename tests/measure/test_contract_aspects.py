"""Issue 16 through the real flow (measure_target -> build_summary -> render_report) against in-process fake
servers: a candidate that scales its vectors, and one that slices `dimensions` without re-normalising and counts
usage in characters (as Infinity 0.0.78 does), are reported as a length difference in the probe table, the
vectors table and the advice list; a usage difference alone is metadata-difference, measured against the model
tokenizer's own count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from embedswap.measure.capture import measure_target
from embedswap.report.publish import render_report
from embedswap.pipeline.build import build_summary, write_summary
from fakeservers import Behaviour, serve
from realkit import make_experiment, measured_attempt

PROBES = ["plain", "dimensions_reduced", "encoding_float"]


def _external(port: int, **extra: Any) -> dict[str, Any]:
    return {"kind": "external", "url": f"http://127.0.0.1:{port}/v1", "capture": ["workload", "probes"], **extra}


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], str]]:
    root = tmp_path_factory.mktemp("aspects")
    behaviours = {"legacy": Behaviour(), "scaled": Behaviour(scale=0.5, usage=None),
                  "sliced": Behaviour(slice_renormalise=False, usage="chars")}
    with ExitStack() as stack:
        ports = {name: stack.enter_context(serve(b)) for name, b in behaviours.items()}
        folder = make_experiment(root, "aspects", _external(ports["legacy"]),
                                 {n: _external(ports[n]) for n in ("scaled", "sliced")}, probes=PROBES)
        attempt, summary = measured_attempt(folder)
    write_summary(summary, attempt)
    written = render_report(folder, attempt.name)
    yield summary, written["report.en.md"].read_text(encoding="utf-8")


def _verdict(summary: dict[str, Any], probe: str, name: str) -> dict[str, Any]:
    row = next(r for r in summary["contract"] if r["probe"] == probe)
    return row["verdicts"][name]


def test_scaled_candidate_is_a_length_difference_in_the_probe_table(flow: tuple[dict[str, Any], str]) -> None:
    summary, _ = flow
    plain = _verdict(summary, "plain", "scaled")
    assert plain["verdict"] == "silent-divergence"
    assert plain["aspects"] == ["length", "usage"]  # cosine 1, half the length; usage omitted
    assert plain["cosine"] == pytest.approx(1.0, abs=1e-9)
    codes = [d["code"] for d in plain["detail_reason"]["params"]["differences"]]
    assert codes == ["difference_norm_ratio", "difference_usage_missing_counted"]
    ratio = plain["detail_reason"]["params"]["differences"][0]["params"]["ratio"]
    assert float(ratio) == pytest.approx(0.5, abs=1e-4)


def test_sliced_candidate_differs_in_length_only_where_dimensions_is_asked(flow: tuple[dict[str, Any], str]) -> None:
    summary, _ = flow
    reduced = _verdict(summary, "dimensions_reduced", "sliced")
    assert reduced["verdict"] == "silent-divergence" and "length" in reduced["aspects"]
    assert "direction" not in reduced["aspects"]  # the same direction: cosine cannot see it
    plain = _verdict(summary, "plain", "sliced")
    # same vectors, usage counted in characters: a metadata difference, not a vector divergence
    assert (plain["verdict"], plain["aspects"]) == ("metadata-difference", ["usage"])
    usage = plain["detail_reason"]["params"]["differences"][0]
    assert usage["code"] == "difference_usage_off"
    row = next(r for r in summary["contract"] if r["probe"] == "plain")
    expected = row["by_target"]["legacy"]["tokenizer_tokens"]
    assert isinstance(expected, int) and expected > 2
    sent = row["by_target"]["sliced"]["prompt_tokens"]
    assert usage["params"]["off"] == f"{sent - expected:+d}" and sent != expected


def test_vectors_table_carries_the_norm_ratio(flow: tuple[dict[str, Any], str]) -> None:
    summary, report = flow
    comparisons = summary["vectors"]["comparisons"]
    assert comparisons["scaled"]["norm_ratio"]["differs"] is True
    assert comparisons["scaled"]["norm_ratio"]["median"] == pytest.approx(0.5, abs=1e-6)
    assert comparisons["sliced"]["norm_ratio"]["differs"] is False  # the workload sends no `dimensions`
    ratio_line = next(line for line in report.splitlines() if line.startswith("| Median length ratio to legacy"))
    cells = [c.strip() for c in ratio_line.strip("|").split("|")]
    assert "length differs" in cells[2] and "length differs" not in cells[3]


def test_advice_names_the_length_and_the_usage(flow: tuple[dict[str, Any], str]) -> None:
    summary, report = flow
    changes = {c["rule"]: c for c in summary["decisions"]["client_changes"]}
    renormalise = {(p["probe"], p["candidate"]) for p in changes["renormalise"]["probes"]}
    assert {("plain", "scaled"), ("dimensions_reduced", "sliced"), ("workload", "scaled")} <= renormalise
    assert {p["candidate"] for p in changes["count_tokens"]["probes"]} == {"scaled", "sliced"}
    assert "re-normalise after `dimensions`" in report
    assert "count tokens client-side" in report
    # the plain request's advice says what differs there
    assert "The plain request already answers differently (length (norm), usage (token count))" in report


def test_probe_table_has_an_aspect_column(flow: tuple[dict[str, Any], str]) -> None:
    _, report = flow
    header = next(line for line in report.splitlines() if line.startswith("| Request |"))
    assert "What differs (`scaled`)" in header and "What differs (`sliced`)" in header
    plain = next(line for line in report.splitlines() if line.startswith("| `plain`"))
    assert "length (norm), usage (token count)" in plain and "‖v‖ 0.5000" in plain
    assert "metadata-difference" in plain


def test_the_shim_restores_the_length_and_invents_no_usage(flow: tuple[dict[str, Any], str]) -> None:
    summary, report = flow
    rows = {r["probe"]: r for r in summary["shim"]["rows"]}
    # the sliced answer re-normalised: the same vectors as legacy; its usage stays as the server counted it
    assert rows["dimensions_reduced"]["verdicts"]["sliced"]["aspects"] == ["usage"]
    # the scaled answers re-normalised; usage stays missing (the shim counts nothing itself)
    assert rows["plain"]["verdicts"]["scaled"]["verdict"] == "metadata-difference"
    assert rows["plain"]["verdicts"]["scaled"]["aspects"] == ["usage"]
    assert summary["shim"]["config"]["scaled"]["renormalise"] is True
    assert "the shim re-normalises every vector (L2)" in report
