"""Another API shape through the real flow (measure_target -> build_summary -> render_report) against in-process
fake servers (issue 64): an OpenAI-shaped legacy server and a TEI-shaped candidate with the same vectors. The
candidate's stated model is read on TEI's own route (``/info``), the missing usage is one client change for the
shape rather than a difference on every probe, and the post does not call it a drop-in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from embedswap.measure.capture import measure_target
from embedswap.pipeline.build import build_summary, write_summary
from embedswap.report.publish import render_report
from fakeservers import Behaviour, serve
from realkit import make_experiment, measured_attempt

PROBES = ["plain", "batch8_member", "whitespace_padded", "unicode_mixed"]
E5 = "intfloat/multilingual-e5-small"


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], str, str]]:
    root = tmp_path_factory.mktemp("shape-flow")
    behaviours = {"legacy": Behaviour(), "tei": Behaviour(shape="tei", usage=None, model=E5)}
    with ExitStack() as stack:
        ports = {name: stack.enter_context(serve(b)) for name, b in behaviours.items()}
        legacy = {"kind": "external", "url": f"http://127.0.0.1:{ports['legacy']}/v1",
                  "capture": ["workload", "probes"]}
        tei = {"kind": "external", "url": f"http://127.0.0.1:{ports['tei']}", "api_shape": "tei",
               "capture": ["workload", "probes"]}
        folder = make_experiment(root, "shape-flow", legacy, {"tei": tei}, probes=PROBES)
        attempt, summary = measured_attempt(folder)
    write_summary(summary, attempt)
    written = render_report(folder, attempt.name)
    yield summary, written["post.en.md"].read_text(encoding="utf-8"), written["report.en.md"].read_text("utf-8")


def test_the_stated_model_is_read_on_tei_s_own_route(flow: tuple[dict[str, Any], str, str]) -> None:
    summary = flow[0]
    assert summary["targets"]["tei"]["identity"]["served_models"] == [E5]
    stated = next(e for e in summary["plan"]["by_candidate"]["tei"]["model"]["evidence"] if e["kind"] == "stated")
    assert stated["candidate"] == "multilingual-e5-small"


def test_missing_usage_is_one_change_for_the_shape(flow: tuple[dict[str, Any], str, str]) -> None:
    summary, post, _ = flow
    verdicts = {r["probe"]: r["verdicts"]["tei"] for r in summary["contract"]}
    assert {p: v["verdict"] for p, v in verdicts.items()} == dict.fromkeys(PROBES, "same")
    assert all(v.get("shape") == ["usage"] for v in verdicts.values()), verdicts
    rules = [c["rule"] for c in summary["decisions"]["client_changes"]]
    assert rules.count("shape_usage") == 1 and "count_tokens" not in rules, rules
    conclusion = next(c for c in summary["decisions"]["post"]["conclusions"] if c["name"] == "tei")
    assert (conclusion["differ"], conclusion["code"], conclusion["api_shape"]) == (0, "client_changes", "tei")
    assert post.count("carries no `usage`: count tokens client-side") == 1
    assert "Swapping only the address works" not in post
