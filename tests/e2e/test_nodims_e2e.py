"""End to end, real servers: a judgement-free workload (no ``qrels``) against a legacy server that ignores
``dimensions`` (the reference legacy server with ``--fault ignore-dimensions``, a common behaviour). The shim cuts
the candidate's answer to the asked length while legacy answers full length: the run must complete, write
summary.json and report the mismatch as a verdict, and the ranking section must show agreement without nDCG."""

from __future__ import annotations

import json

import pytest
import yaml

from embedswap.captures import new_attempt
from embedswap.config import load_experiment
from embedswap.measure.capture import measure_target
from embedswap.pipeline.build import build_summary, write_summary
from embedswap.measure.workload import load_workload
from realkit import FEW_PROBES, legacy_target, make_experiment, pooled_target, wait_no_processes
from ports import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start


def test_judgement_free_run_against_a_legacy_that_ignores_dimensions(tmp_path, legacy_minilm) -> None:
    # the legacy side is its own start (a faulty configuration: --fault ignore-dimensions); the candidate, a legacy
    # server that honours `dimensions`, is the worker's shared one (kind external)
    (legacy_port,) = free_ports(1)
    folder = make_experiment(tmp_path, "nodims",
                             legacy_target(legacy_port, capture=["workload", "queries", "probes"],
                                           extra_args=["--fault", "ignore-dimensions"]),
                             {"candidate": pooled_target(legacy_minilm, ["workload", "queries", "probes"])},
                             probes=[*FEW_PROBES, "dimensions_reduced"])
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["workload"].pop("qrels", None)  # judgement-free
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    experiment = load_experiment(folder)
    attempt = new_attempt(folder)
    for name in ("legacy", "candidate"):
        measure_target(experiment, folder, attempt, name, f"capture:{name}")
    workload = load_workload(experiment, folder)
    assert not workload.qrels
    write_summary(build_summary(experiment, folder, attempt, workload), attempt)
    summary = json.loads((attempt.path / "summary.json").read_text(encoding="utf-8"))  # strict JSON: no NaN

    legacy_probe = {r["probe"]: r for r in attempt.read_jsonl("legacy/probes.jsonl")}["dimensions_reduced"]
    candidate_probe = {r["probe"]: r for r in attempt.read_jsonl("candidate/probes.jsonl")}["dimensions_reduced"]
    assert legacy_probe["dim"] != candidate_probe["dim"]  # legacy ignored `dimensions`, the candidate honoured it
    contract_row = next(r for r in summary["contract"] if r["probe"] == "dimensions_reduced")
    assert contract_row["verdict"] not in (None, "same") and contract_row["cosine"] is None
    shim_rows = [r for r in (summary.get("shim") or {}).get("rows") or [] if r["probe"] == "dimensions_reduced"]
    for row in shim_rows:  # through the shim: a verdict, never a NaN cosine
        assert row["verdict"] is not None and row["cosine"] is None
        assert "384 vs 256" in row["detail"]
    assert shim_rows and summary["non_finite"] == []
    ranking = summary["ranking"]
    assert ranking["measured"] is True and ranking["judged"] is False
    assert ranking["legacy"]["ndcg_at_10"] is None
    agreement = ranking["candidate_naive"]["agreement"]
    assert agreement["queries"] == len(workload.queries) and 0.0 <= agreement["rbo"]["mean"] <= 1.0
    assert wait_no_processes([legacy_port]) == []  # the shared server runs on: its fixture stops it
