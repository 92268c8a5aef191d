"""End to end on fake servers of known speed: the same fake server code, the candidate's service time 30 % longer
than legacy's. The latency headline must say ``different``/``slower`` with the host's drift bound stated, the
legacy server measured again after the candidate (A-B-A, on by default), and the report and the summary agree.

benchmarks/latency_twins.py runs the same pair (and twins) ten seeded times through the kit's capture and decision
(figures in docs/equivalence.md); this test runs it once through ``embedswap run``.

Both runs are ``--steps 01,02`` (issue 61, the quiet pass): the captures, A-B-A included; the summary and the
report (its latency section, table and figure) are built from them all the same. No assertion here reads step 03
(the vectors and the contract: these fake servers capture latency only), 04 (a view of the summary's latency) or
05 (the parity gate, skipped with no document vectors): ~9 s a run, three notebook kernels."""

from __future__ import annotations

import json

import pytest
import yaml

from embedswap.paths import report_dir
from embedswap.summary.model import validate_summary

from fakeservers import Behaviour, serve
from realkit import make_experiment, run_whole_experiment

pytestmark = [pytest.mark.e2e, pytest.mark.quiet_host]  # decides latency verdicts: run alone

SERVICE_MS = 100.0
STEPS = "01,02"  # what the assertions read (the docstring)


def _external(port: int) -> dict:
    return {"kind": "external", "url": f"http://127.0.0.1:{port}/v1", "capture": ["latency"],
            "startup_timeout_s": 30}


def test_a_server_30_percent_slower_than_its_twin_is_different_slower(tmp_path) -> None:
    with serve(Behaviour(service_ms=SERVICE_MS, seed=1)) as legacy_port, \
            serve(Behaviour(service_ms=1.3 * SERVICE_MS, seed=2)) as candidate_port:
        folder = make_experiment(tmp_path, "twins", _external(legacy_port), {"candidate": _external(candidate_port)},
                                 restore=True)
        done = run_whole_experiment(folder, timeout_s=900, steps=STEPS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    attempt = sorted((folder / "attempts").iterdir())[-1]
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    decided = summary["decisions"]["latency"]["ratios"]["candidate"]
    drift = decided["drift"]
    ratio = validate_summary(summary).latency_ratio("candidate", "sequential", "p50")
    print("seq p50 ratio:", ratio, "drift:", drift, "headline:", decided["verdict"])
    assert summary["restore"]["latency"]["sequential"]["p50_ms"] > 0  # legacy measured again (A-B-A)
    assert drift["bound"] is not None  # the drift the gauges establish, stated whatever it is
    assert decided["verdict"]["code"] == "different" and decided["verdict"]["direction"] == "slower"
    report = (report_dir(folder) / "report.en.md").read_text(encoding="utf-8")
    assert "circular block bootstrap" in report
    table = report.split("| Host drift |", 1)[1]
    assert " bound, from " in table or "no drift beyond the gauges' own noise" in table


def test_interleaved_the_slower_server_is_different_slower_with_drift_cancelled_by_design(tmp_path) -> None:
    """The same pair answering at once (``sequencing.interleave``, what ``embedswap new --legacy-url`` writes):
    the candidate's runs alternate with legacy's in one phase and its ratios divide by those legacy runs."""
    with serve(Behaviour(service_ms=SERVICE_MS, seed=3)) as legacy_port, \
            serve(Behaviour(service_ms=1.3 * SERVICE_MS, seed=4)) as candidate_port:
        folder = make_experiment(tmp_path, "interleaved", _external(legacy_port),
                                 {"candidate": _external(candidate_port)})
        config = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
        config["sequencing"].update(stop_legacy_before_candidates=False, interleave=True)
        (folder / "experiment.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        done = run_whole_experiment(folder, timeout_s=900, steps=STEPS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    attempt = sorted((folder / "attempts").iterdir())[-1]
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    assert summary["latency"]["paired_legacy"]["candidate"]["interleaved_with"] == "candidate"
    decided = summary["decisions"]["latency"]["ratios"]["candidate"]
    print("seq p50:", decided["intervals"]["sequential"]["p50"], "drift:", decided["drift"],
          "headline:", decided["verdict"])
    assert decided["drift"]["design"] == "interleaved" and decided["drift"]["bound_source"] is None
    assert decided["verdict"]["code"] == "different" and decided["verdict"]["direction"] == "slower"
    report = (report_dir(folder) / "report.en.md").read_text(encoding="utf-8")
    assert "cancelled by design" in report.split("| Host drift |", 1)[1]
