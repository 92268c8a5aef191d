"""summary.json loads into the typed Summary: every fixture fits and round-trips, and a renamed key fails at load
with the path of the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from embedswap.summary.model import Summary
from embedswap.analysis.upgrade import SummaryError, load_summary, read_summary, upgrade_summary

FIXTURES = Path(__file__).parents[1] / "fixtures"
NAMES = ["summary_complete.json", "summary_smoke.json", "summary_v1_qwen3_tiny.json"]


def _upgraded(name: str) -> dict[str, Any]:
    return upgrade_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def _dump(summary: Summary) -> dict[str, Any]:
    return summary.model_dump(mode="json", by_alias=True, exclude_unset=True)


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_loads_typed_and_round_trips(name: str) -> None:
    summary = load_summary(FIXTURES / name)
    assert isinstance(summary, Summary)
    expected = _upgraded(name)
    assert _dump(summary) == expected
    # the same numbers, not only equal ones: a stored 1 stays 1 (the report prints it as stored)
    assert json.dumps(_dump(summary), sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize("name", NAMES)
def test_read_summary_is_load_summary_in_memory(name: str) -> None:
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    assert _dump(read_summary(data)) == _dump(load_summary(FIXTURES / name))


def _measured_latency_target(summary: dict[str, Any]) -> str:
    return next(n for n, t in summary["latency"]["by_target"].items() if t.get("measured") and t.get("sequential"))


def _rename(entry: dict[str, Any], old: str, new: str) -> None:
    entry[new] = entry.pop(old)


def _renamed_latency_point(summary: dict[str, Any]) -> str:
    name = _measured_latency_target(summary)
    _rename(summary["latency"]["by_target"][name]["sequential"], "p50_ms", "p50")
    return f"latency.by_target.{name}.sequential.p50"


def _renamed_comparison_figure(summary: dict[str, Any]) -> str:
    name = next(n for n, c in summary["vectors"]["comparisons"].items() if c.get("measured"))
    _rename(summary["vectors"]["comparisons"][name], "cosine", "cos_min")
    return f"vectors.comparisons.{name}.cos_min"


def _renamed_instruction_key(summary: dict[str, Any]) -> str:
    _rename(summary["instruction"], "threshold", "cosine_threshold")
    return "instruction.cosine_threshold"


def _renamed_parity_row(summary: dict[str, Any]) -> str:
    _rename(summary["parity"]["rows"][0], "cos_min", "cosine_min")
    return "parity.rows.0.cosine_min"


@pytest.mark.parametrize("rename", [_renamed_latency_point, _renamed_comparison_figure, _renamed_instruction_key,
                                    _renamed_parity_row])
def test_a_renamed_field_fails_at_load_naming_its_path(rename: Any, tmp_path: Path) -> None:
    # the fixture with the most sections measured (instruction is measured only there)
    summary = copy.deepcopy(_upgraded("summary_v1_qwen3_tiny.json"))
    path = rename(summary)
    stored = tmp_path / "summary.json"
    stored.write_text(json.dumps(summary), encoding="utf-8")
    with pytest.raises(SummaryError) as error:
        load_summary(stored)
    assert path in str(error.value)


def test_a_section_not_measured_has_no_figures() -> None:
    summary = load_summary(FIXTURES / "summary_smoke.json")
    assert summary.diagnosis is not None and summary.diagnosis.measured is False
    assert summary.diagnosis.reason is not None and summary.diagnosis.by_target == {}


def test_the_agreement_builder_writes_the_typed_agreement() -> None:
    """Every k the builder measures has its field (a new k would otherwise fail every summary at load), and what
    it writes loads with the figures where the report reads them."""
    from embedswap.ranking.agreement import AGREEMENT_K, agreement
    from embedswap.summary.types_sections import Agreement

    docs = [f"d{i}" for i in range(10)]
    reference = {"per_query": {"q1": {"top10": docs}, "q2": {"top10": docs}}}
    other = {"per_query": {"q1": {"top10": docs}, "q2": {"top10": docs[::-1]}}}
    loaded = Agreement.model_validate(agreement(reference, other))
    assert loaded.k == list(AGREEMENT_K) and loaded.queries == 2
    assert all(loaded.overlap_at(k) is not None for k in AGREEMENT_K)
    assert loaded.overlap_at(10).mean == 1.0 and loaded.top1_changed.mean == 0.5


def test_target_settings_keep_the_keys_of_each_kind() -> None:
    """A target's configuration types what the report reads and keeps every other key as written."""
    from embedswap.summary.model import Target

    target = Target.model_validate({"measured": True, "config": {"kind": "external", "url": "http://h/v1",
                                                                  "api_shape": "openai", "routes": {"embed": "/e"}}})
    assert target.config.kind == "external" and target.config.lock is None
    assert target.config.model_dump(exclude_unset=True)["routes"] == {"embed": "/e"}
