"""`embedswap run --attempt latest` resumes: complete captures are not measured again, the rest is.

The first tests replace the notebooks (runner.run_notebook) and the measurement (steps.measure_target) by
recorders, to check the plan on hand-made attempts in milliseconds; the last one resumes a real run through the CLI.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from embedswap import runner, steps
from embedswap.captures import Attempt, SUPERSEDED, new_attempt, open_attempt, verify_attempt
from realkit import EMBEDSWAP, legacy_target, make_experiment, wait_no_processes
from ports import free_ports

ANALYSIS = ["03_vector_contract_diff", "04_latency", "05_parity"]


def _folder(tmp_path: Path, candidates: tuple[str, ...] = ("candidate",)) -> tuple[Path, list[int]]:
    ports = free_ports(1 + len(candidates))
    folder = make_experiment(tmp_path, "resume", legacy_target(ports[0]),
                             {name: legacy_target(port) for name, port in zip(candidates, ports[1:])})
    # resume is about the candidates' captures: no A-B-A restart of the legacy server at the end of step 02
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config.setdefault("sequencing", {})["restore_legacy"] = False
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return folder, ports


def _captured(attempt: Attempt, name: str, status: str, **details: Any) -> None:
    """What measure_target leaves for a target: a few capture files, target.json, the step's status."""
    attempt.write_jsonl(f"{name}/workload_requests.jsonl", [{"status": 200 if status == "complete" else 500}])
    attempt.write_json(f"{name}/target.json", {"name": name, **({"error": "boom"} if status == "failed" else {})})
    attempt.mark_step(f"capture:{name}", status, target=name, **details)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []

    def run_notebook(name: str, experiment_dir: Path, attempt: Attempt, **_: Any) -> None:
        ran.append(name)

    monkeypatch.setattr(runner, "run_notebook", run_notebook)
    return ran


def test_latest_skips_complete_captures_and_reruns_the_rest(tmp_path: Path, recorded: list[str]) -> None:
    folder, ports = _folder(tmp_path)
    attempt = new_attempt(folder)
    _captured(attempt, "legacy", "complete")
    _captured(attempt, "candidate", "failed", error="TargetStartError: exited")
    for name, status in [("01_legacy_capture", "complete"), ("02_swap_deploy", "complete"),
                         ("03_vector_contract_diff", "complete")]:
        attempt.mark_step(f"notebook:{name}", status)
    attempt.mark_step("run", "failed", error="interrupted")
    with socket.socket() as taken:  # the legacy server is not started again: its port may be busy meanwhile
        taken.bind(("127.0.0.1", ports[0]))
        taken.listen()
        result = runner.run_experiment(folder, "latest", render=False)
    assert result.attempt.path == attempt.path, "resume must reuse the attempt, not make a new one"
    assert recorded == ["02_swap_deploy", *ANALYSIS]  # 03 is complete but its captures changed: rerun
    assert result.notebooks["01_legacy_capture"].startswith("skipped: captures of legacy complete")
    assert attempt.steps()["run"]["status"] == "resumed"
    assert attempt.steps()["run"]["previous"]["error"] == "interrupted"


def test_nothing_to_do_when_everything_is_complete(tmp_path: Path, recorded: list[str]) -> None:
    folder, _ = _folder(tmp_path)
    attempt = new_attempt(folder)
    _captured(attempt, "legacy", "complete")
    _captured(attempt, "candidate", "complete")
    for name in runner.NOTEBOOKS:
        attempt.mark_step(f"notebook:{name}", "complete")
    result = runner.run_experiment(folder, "latest", render=False)
    assert recorded == []
    assert all(v.startswith("skipped") for v in result.notebooks.values()) and result.ok
    # asked for by name, an analysis step runs again (the way to re-run 03/04 on the same captures)
    runner.run_experiment(folder, "latest", only=["03_vector_contract_diff"], render=False)
    assert recorded == ["03_vector_contract_diff"]
    # and a new attempt runs everything
    result = runner.run_experiment(folder, "new", render=False)
    assert result.attempt.path != attempt.path and recorded[1:] == runner.NOTEBOOKS


def test_partial_and_failed_analysis_steps_rerun(tmp_path: Path, recorded: list[str]) -> None:
    folder, _ = _folder(tmp_path)
    attempt = new_attempt(folder)
    _captured(attempt, "legacy", "complete")
    _captured(attempt, "candidate", "partial", problems=["latency: 3 latency request(s) failed"])
    attempt.write_json("parity/rows.json", {"rows": [], "pass": False})
    attempt.mark_step("parity", "failed", detail="gate failed")
    for name in runner.NOTEBOOKS:
        attempt.mark_step(f"notebook:{name}", "complete")
    runner.run_experiment(folder, "latest", render=False)
    assert recorded == ["02_swap_deploy", *ANALYSIS]
    # the parity rows came from captures that are being redone: kept aside, not overwritten, still verified
    assert not attempt.has("parity/rows.json")
    assert [p.name for p in attempt.captures.glob(f"{SUPERSEDED}/*/parity/rows.json")] == ["rows.json"]
    assert attempt.steps()["parity"]["status"] == "pending"
    assert verify_attempt(attempt) == []


def test_swap_deploy_measures_only_the_candidates_not_complete(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder, _ = _folder(tmp_path, candidates=("done", "broken", "interrupted", "fresh"))
    attempt = new_attempt(folder)
    _captured(attempt, "legacy", "complete")
    _captured(attempt, "done", "complete")
    _captured(attempt, "broken", "failed", error="TargetStartError: boom")
    attempt.write_jsonl("interrupted/workload_requests.jsonl", [{"status": 200}])  # killed before target.json
    attempt.mark_step("capture:interrupted", "running", target="interrupted")
    measured: list[str] = []

    def measure_target(experiment, experiment_dir, attempt_, name, step) -> dict[str, Any]:
        assert not attempt_.has(f"{name}/target.json"), "a capture would be overwritten"
        measured.append(name)
        attempt_.write_json(f"{name}/target.json", {"name": name})
        attempt_.mark_step(step, "complete", target=name, problems=[])
        return {"name": name}

    monkeypatch.setattr(steps, "measure_target", measure_target)
    ctx = steps.open_step(folder, attempt.name)
    results = steps.swap_deploy(ctx)
    assert measured == ["broken", "interrupted", "fresh"]
    assert set(results) == {"done", "broken", "interrupted", "fresh"}
    entries = attempt.steps()
    assert all(entries[f"capture:{n}"]["status"] == "complete" for n in ["done", "broken", "interrupted", "fresh"])
    # the clean record does not carry the earlier error; the earlier try is referenced, its files kept
    assert "error" not in entries["capture:broken"]
    assert entries["capture:broken"]["superseded"]["previous"]["error"] == "TargetStartError: boom"
    moved = entries["capture:broken"]["superseded"]["captures"]
    assert (attempt.path / moved / "target.json").exists()
    assert "superseded" not in entries["capture:fresh"]
    assert verify_attempt(attempt) == []
    manifest = attempt.manifest()["files"]
    assert f"{moved}/target.json" in manifest and "captures/broken/target.json" in manifest
    # and step 01 likewise does not measure a complete legacy server again
    assert steps.capture_legacy(ctx) == {"name": "legacy"} and measured == ["broken", "interrupted", "fresh"]


@pytest.mark.e2e
def test_resume_a_real_run(tmp_path: Path) -> None:
    """A run whose candidate fails to start; fixed, `--attempt latest` measures only the candidate."""
    legacy_port, candidate_port = free_ports(2)
    folder = make_experiment(tmp_path, "resume-real", legacy_target(legacy_port, capture=["workload"]),
                             {"candidate": legacy_target(candidate_port, capture=["workload"],
                                                         extra_args=["--no-such-flag"])})
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    first = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02", "--no-report"], capture_output=True,
                           text=True, timeout=900, env=env)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    attempt = open_attempt(folder, "latest")
    assert attempt.step_status("capture:legacy") == "complete"
    assert attempt.step_status("capture:candidate") == "failed"
    legacy_files = {k: v["sha256"] for k, v in attempt.manifest()["files"].items() if k.startswith("captures/legacy")}

    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["targets"]["candidate"].pop("extra_args")
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    second = subprocess.run([EMBEDSWAP, "run", str(folder), "--attempt", "latest", "--no-report"],
                            capture_output=True, text=True, timeout=1200, env=env)
    output = second.stdout + second.stderr
    assert second.returncode == 0, output[-5000:]
    assert "01_legacy_capture skipped: captures of legacy complete" in second.stdout
    assert len(list((folder / "attempts").iterdir())) == 1
    steps_now = attempt.steps()
    assert steps_now["capture:legacy"]["status"] == "complete"
    assert steps_now["capture:candidate"]["status"] == "complete", steps_now["capture:candidate"]
    assert steps_now["capture:candidate"]["superseded"]["previous"]["status"] == "failed"
    assert all(steps_now[f"notebook:{n}"]["status"] == "complete" for n in runner.NOTEBOOKS)
    # the legacy server was started once (its log has one launch line), its captures are untouched
    assert (attempt.logs / "legacy.log").read_text().count("$ ") == 1
    files = attempt.manifest()["files"]
    assert {k: files[k]["sha256"] for k in legacy_files} == legacy_files
    assert verify_attempt(attempt) == []
    summary = json.loads(attempt.summary_path.read_text())
    assert summary["vectors"]["comparisons"]["candidate"]["measured"] is True
    assert summary["parity"]["measured"] is True and summary["parity"]["not_run"] == []
    assert wait_no_processes([legacy_port, candidate_port]) == []
