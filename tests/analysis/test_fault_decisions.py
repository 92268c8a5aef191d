"""decisions.faults: silent corruption is a finding at any count; transport faults are judged per part by their
rate against decisions.margins.transport_rate (Clopper-Pearson, the latency error gate's test), beside the legacy
server's own rate (issue 56)."""

from __future__ import annotations

import copy
from typing import Any

from embedswap.analysis.faults import fault_decisions
from embedswap.analysis.upgrade import read_summary
from embedswap.config.decisions import DecisionsConfig


def _entry(**parts: dict[str, Any]) -> dict[str, Any]:
    by_kind: dict[str, int] = {}
    for part in parts.values():
        for kind, n in part.get("by_kind", {}).items():
            by_kind[kind] = by_kind.get(kind, 0) + n
    answers, unusable = sum(p["answers"] for p in parts.values()), sum(by_kind.values())
    return {"answers": answers, "unusable": unusable, "share": round(unusable / answers, 4), "by_kind": by_kind,
            "by_part": {k: p["unusable"] for k, p in parts.items() if p["unusable"]}, "parts": parts}


def _decide(summary: dict[str, Any], **by_target: dict[str, Any]) -> Any:
    out = copy.deepcopy(summary)
    out["faults"] = {"by_target": by_target}
    return read_summary(out)


CLEAN = {"answers": 262, "unusable": 0, "by_kind": {}}


def test_one_dropped_connection_in_262_probes_is_not_a_finding(complete_upgraded: dict[str, Any]) -> None:
    summary = _decide(complete_upgraded, legacy=_entry(probes=CLEAN),
                      dynamo=_entry(probes={"answers": 262, "unusable": 1, "by_kind": {"connection": 1}}))
    judged = fault_decisions(summary, DecisionsConfig())
    assert judged is not None and judged.margin == 0.05
    dynamo = judged.of("dynamo")
    assert dynamo is not None and dynamo.code == "transport_within_margin" and judged.corrupting() == []
    part = dynamo.parts["probes"]
    assert part.transport == 1 and part.corrupt == 0 and part.legacy_rate == 0
    assert part.verdict.code == "non_inferior" and part.verdict.high is not None and part.verdict.high < 0.05
    assert summary.decisions.faults is not None and summary.decisions.faults.of("dynamo") == dynamo  # stored


def test_one_wrong_length_200_is(complete_upgraded: dict[str, Any]) -> None:
    summary = _decide(complete_upgraded, vllm=_entry(
        workload={"answers": 262, "unusable": 1, "by_kind": {"wrong_length": 1}}))
    judged = fault_decisions(summary, DecisionsConfig())
    assert judged is not None and judged.corrupting() == ["vllm"]
    vllm = judged.of("vllm")
    assert vllm is not None and vllm.corrupt == {"wrong_length": 1} and vllm.parts["workload"].transport == 0


def test_a_part_above_the_margin_fails_and_names_its_kinds(complete_upgraded: dict[str, Any]) -> None:
    summary = _decide(complete_upgraded, vllm=_entry(
        latency={"answers": 40, "unusable": 6, "by_kind": {"timeout": 4, "stale_connection": 2}},
        probes={"answers": 40, "unusable": 0, "by_kind": {}}))
    vllm = fault_decisions(summary, DecisionsConfig()).of("vllm")  # type: ignore[union-attr]
    assert vllm is not None and vllm.code == "transport_above_margin"
    assert vllm.parts["latency"].verdict.code == "failed" and vllm.parts["probes"].verdict.code != "failed"
    looser = DecisionsConfig.model_validate({"margins": {"transport_rate": 0.2}})
    assert fault_decisions(summary, looser).of("vllm").code == "transport_within_margin"  # type: ignore[union-attr]


def test_a_summary_from_before_the_parts_is_judged_on_its_totals(complete_upgraded: dict[str, Any]) -> None:
    old = {"answers": 90, "unusable": 1, "share": 0.0111, "corrupting": True, "by_kind": {"cut_body": 1},
           "by_part": {"probes": 1}}  # flagged corrupting by the kit before issue 56: a cut body is transport
    summary = _decide({**complete_upgraded, "schema_version": 2}, dynamo=old)  # its flag dropped at load
    assert summary.faults is not None and summary.faults.of("dynamo") is not None
    dynamo = fault_decisions(summary, DecisionsConfig()).of("dynamo")  # type: ignore[union-attr]
    assert dynamo is not None and dynamo.code == "transport_within_margin" and set(dynamo.parts) == {"all"}
