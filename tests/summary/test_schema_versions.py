"""One stored summary per schema version (1 to the current one), each loaded through the migrations and rendered in
every language (issue 62): an old file is upgraded once, at load, and the readers see one shape.

- version 1: tests/fixtures/versions/summary_v1.json, written by the kit at 2ed678e, the last commit whose
  SCHEMA_VERSION was 1 (its own ``build_summary`` on captures written by tests/fixtures/versions/make_summary_v1.py:
  no decisions, no reason codes, no ranking verdicts, none of the later sections);
- version 2: tests/fixtures/versions/summary_v2.json, written by the kit at 7acde53 (the index summary of
  tests/support/index_summary.py with a ``models`` section naming one candidate another model, and the index
  options' choice stored beside the sample's code, as that kit stored them);
- version 3: tests/fixtures/versions/summary_v3.json, written by a version-3 kit (d4ab4a3; its latency ratios decided on
  intervals widened by the host drift, without ``widened``);
- version 4: tests/fixtures/versions/summary_v4.json, the current kit's (summary_v3.json upgraded by it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from embedswap.analysis import decide
from embedswap.analysis.upgrade import SCHEMA_VERSION, read_summary, upgrade_summary
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.summary.model import SummaryBody
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
BY_VERSION = {1: FIXTURES / "versions" / "summary_v1.json", 2: FIXTURES / "versions" / "summary_v2.json",
              3: FIXTURES / "versions" / "summary_v3.json", 4: FIXTURES / "versions" / "summary_v4.json"}


def _load(version: int) -> dict[str, Any]:
    return json.loads(BY_VERSION[version].read_text(encoding="utf-8"))


def test_every_version_up_to_the_current_one_has_a_stored_summary() -> None:
    assert sorted(BY_VERSION) == list(range(1, SCHEMA_VERSION + 1))
    assert all(_load(v).get("schema_version", 1) == v for v in BY_VERSION)


@pytest.mark.parametrize("version", sorted(BY_VERSION))
def test_a_summary_of_each_version_loads_and_renders_in_every_language(version: int) -> None:
    summary = read_summary(_load(version))
    assert summary.schema_version == SCHEMA_VERSION
    for lang in LANGUAGES:
        assert render_markdown(as_typed(summary), lang).strip() and render_post(as_typed(summary), lang).strip(), lang


def test_version_1_gets_the_later_sections_not_measured_and_its_decisions() -> None:
    stored = _load(1)
    assert "decisions" not in stored and "plan" not in stored and "models" not in stored
    summary = read_summary(stored)
    for key in ("diagnosis", "plan"):  # sections the version-1 kit never wrote
        section = getattr(summary, key)
        assert section.measured is False and section.reason is not None and section.reason.code == "section_absent", key
    assert summary.plan.others() == set()  # every candidate read as the same model, as it was then
    # decided at load from the measured sections: the candidate ignores the query prompt, the client adds it
    assert summary.ranking.measured and summary.decisions.ranking.by_candidate["vllm"].decision == "client"
    assert set(summary.decisions.index) <= set(stored["roles"]["candidates"])


def test_version_2_s_models_and_two_index_fields_become_the_plan_and_one_decision() -> None:
    stored = _load(2)
    summary = read_summary(stored)
    other = next(n for n, c in stored["models"]["by_candidate"].items() if c["code"] == "another_model")
    plan = summary.plan.of(other)
    assert plan is not None and (plan.comparison, plan.probes_against, plan.ranking_question) == \
        ("another_model", "own", "non_inferiority") and plan.model.candidate_model == "e5"
    assert summary.plan.others() == {other}
    decision = summary.decisions.index[other]  # the options' affine map, the sample's re-embed its evidence
    assert (decision.choice, decision.map_kind, decision.decided_on, decision.sample) == \
        ("map", "affine", "options", stored["decisions"]["index"][other]["code"])
    for name, entry in stored["decisions"]["index"].items():
        if name != other:  # no options there: the sample's code, in the one vocabulary
            assert summary.decisions.index[name].decided_on == "sample"
            assert summary.decisions.index[name].sample == entry["code"]


def test_version_2_decisions_made_before_a_decision_existed_are_decided_again() -> None:
    """The ranking decided with one tolerance (``delta_max``) and no verdicts, latency ratios without their verdicts,
    post conclusions without the vectors verdict, a server's faults without per-part figures: each is filled."""
    stored = copy.deepcopy(_load(2))
    decisions = stored["decisions"]
    decisions["ranking"] = {"meaningful": True, "tolerance": {"top5_overlap_min": 0.95, "delta_max": 0.01},
                            "by_candidate": {name: {"naive": {"unchanged": True}, "shim": {"unchanged": True},
                                                    "decision": "none"}
                                             for name in decisions["ranking"]["by_candidate"]}}
    for entry in decisions["latency"]["ratios"].values():
        entry.pop("verdicts")
    for conclusion in decisions["post"]["conclusions"]:
        conclusion.pop("vectors")
    stored["faults"] = {"by_target": {"vllm": {"answers": 10, "unusable": 1, "share": 0.1, "by_kind": {"timeout": 1}}}}
    summary = read_summary(stored)
    body = summary.model_dump(mode="json", by_alias=True, exclude={"decisions"}, exclude_unset=True)
    fresh = decide(SummaryBody.model_validate(body))
    assert summary.decisions.ranking == fresh.ranking  # decided now, on the plan (one candidate another model)
    tolerance = summary.decisions.ranking.tolerance
    assert (tolerance.ndcg_margin, tolerance.recall_margin, tolerance.mrr_margin) == (0.02, 0.02, 0.02)
    assert all(v.equivalence is not None for c in summary.decisions.ranking.by_candidate.values()
               for v in (c.naive, c.shim) if v is not None and v.tests)
    assert summary.decisions.latency.ratios == fresh.latency.ratios
    assert all(r.verdicts for r in summary.decisions.latency.ratios.values())
    # drawn again from the decisions above: the candidate the plan reads as another model is not compared
    assert {c.name: c.vectors for c in summary.decisions.post.conclusions} == {"vllm": "same", "dynamo": "another_model"}
    assert summary.faults is not None and list(summary.faults.by_target["vllm"].parts) == ["all"]
    assert all(render_markdown(summary, lang).strip() for lang in LANGUAGES)


def test_a_current_summary_is_left_as_it_is() -> None:
    current = _load(SCHEMA_VERSION)
    assert upgrade_summary(current) == current
