"""The command line: every error is one line naming its cause, with exit code 2 (usage, config, nothing
started) or 1 (a failed measurement or report); `--debug` shows the traceback. Also `embedswap new` outside a
checkout, `engine install|use`, `doctor`.

Each test runs the real `embedswap` command in a subprocess from an empty folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from embedswap.captures import open_attempt
from realkit import EMBEDSWAP, FEW_PROBES, SMALL_LATENCY, JsonHandler
from ports import free_ports
from typed_summary import as_typed

REPO = Path(__file__).resolve().parents[1]


def embedswap(*args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([EMBEDSWAP, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def one_line_error(run: subprocess.CompletedProcess) -> str:
    """The run's stderr is exactly one line, `embedswap: ...`, and there is no traceback anywhere."""
    assert "Traceback" not in run.stdout + run.stderr, run.stdout[-2000:] + run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("embedswap: "), run.stderr
    return lines[0]


def external_experiment(root: Path, urls: list[str], **changes: object) -> Path:
    """`embedswap new` against servers the user runs, shrunk like the other real-process tests."""
    run = embedswap("new", "cli", "--legacy-url", urls[0], "--candidate-url", urls[1], "--experiments",
                    str(root / "experiments"), cwd=root)
    assert run.returncode == 0, run.stderr
    folder = Path(run.stdout.strip())
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["latency"] = dict(SMALL_LATENCY)
    config["contract"]["probes"] = FEW_PROBES
    config["workload"]["repeats"] = 1
    config["report"]["languages"] = ["en"]
    config.update(changes)
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def test_run_without_experiment_yaml(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = embedswap("run", "empty", cwd=tmp_path)
    assert run.returncode == 2
    assert "'empty' has no experiment.yaml" in one_line_error(run)


def test_run_with_a_bad_key(tmp_path: Path) -> None:
    folder = external_experiment(tmp_path, ["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"])
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    config["targets"]["legacy"]["verify_tsl"] = False
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config))
    run = embedswap("run", str(folder), cwd=tmp_path)
    assert run.returncode == 2
    line = one_line_error(run)
    assert "unknown key 'targets.legacy.verify_tsl' (did you mean 'verify_tls'?)" in line, line
    assert not (folder / "attempts").exists()  # nothing was started


class _ModelsOnly(JsonHandler):
    """A server that answers the preflight's GET /v1/models (and nothing else)."""

    def do_GET(self) -> None:  # noqa: N802
        self.answer(200, {"object": "list", "data": [{"id": "minilm", "object": "model"}]})


def test_run_against_a_dead_server(tmp_path: Path) -> None:
    dead, alive = free_ports(2)  # nothing listens on `dead`
    server = ThreadingHTTPServer(("127.0.0.1", alive), _ModelsOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        folder = external_experiment(tmp_path, [f"http://127.0.0.1:{alive}/v1", f"http://127.0.0.1:{dead}/v1"])
        run = embedswap("run", str(folder), cwd=tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert run.returncode == 2
    line = one_line_error(run)
    assert "nothing was started" in line and f"target 'candidate': http://127.0.0.1:{dead}/v1/models does not " \
        "answer" in line, line
    assert not (folder / "attempts").exists()


def test_run_whose_steps_leave_no_summary(tmp_path: Path) -> None:
    """Step 03 alone on a new attempt has no captures to read: it fails, no summary.json is written, so no
    report: one line for the step, one for the report, exit 1, no traceback (the issue's `ReportError`)."""
    folder = external_experiment(tmp_path, ["http://127.0.0.1:9/v1"] * 2)
    run = embedswap("run", str(folder), "--steps", "03", cwd=tmp_path, timeout=600)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr
    out = run.stdout.splitlines()
    assert any(line.startswith("[embedswap] 03_vector_contract_diff failed: StepError:") for line in out), out
    assert any(line.startswith("[embedswap] no report: ") and "summary.json" in line for line in out), out
    assert out[-1].startswith("[embedswap] FAILED"), out


def test_report_of_an_attempt_without_summary_and_debug(tmp_path: Path) -> None:
    folder = external_experiment(tmp_path, ["http://127.0.0.1:9/v1"] * 2)
    attempt = open_attempt(folder, "new", create=True)
    run = embedswap("report", str(folder), "--attempt", attempt.name, cwd=tmp_path)
    assert run.returncode == 1
    assert "summary.json" in one_line_error(run)
    debug = embedswap("report", str(folder), "--attempt", attempt.name, "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == run.stderr.strip()


@pytest.mark.parametrize("args, cause", [
    (["new", "My_Swap"], "SLUG 'My_Swap'"),
    (["new", "x", "--date", "2026-02-30"], "--date '2026-02-30'"),
    (["new", "x", "--legacy-url", "http://127.0.0.1:9/v1"], "--legacy-url and --candidate-url go together"),
    (["engine", "use", "/no/such/python"], "/no/such/python: no such interpreter"),
])
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], cause: str) -> None:
    run = embedswap(*args, cwd=tmp_path, env={"EMBEDSWAP_CONFIG_DIR": str(tmp_path / "config")})
    assert run.returncode == (1 if args[0] == "engine" else 2)
    assert cause in one_line_error(run)


def test_new_outside_a_checkout_uses_the_packaged_workload_and_notebooks(tmp_path: Path) -> None:
    run = embedswap("new", "myswap", "--date", "2026-12-01", cwd=tmp_path, env={"EMBEDSWAP_ROOT": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "experiments" / "2026-12-01-myswap"
    assert Path(run.stdout.strip()) == folder
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    assert config["workload"]["documents"] == "sample:documents.jsonl"
    assert "notebooks" not in config  # the packaged ones
    copied = embedswap("new", "mine", "--copy-notebooks", "--copy-data", cwd=tmp_path,
                       env={"EMBEDSWAP_ROOT": str(tmp_path)})
    assert copied.returncode == 0, copied.stderr
    mine = Path(copied.stdout.strip())
    config = yaml.safe_load((mine / "experiment.yaml").read_text())
    assert config["notebooks"] == "notebooks" and config["workload"]["qrels"] == "data/qrels.jsonl"
    assert sorted(p.name for p in (mine / "notebooks").glob("*.ipynb")) == sorted(
        p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert (mine / "data" / "documents.jsonl").read_bytes() == (REPO / "data" / "documents.jsonl").read_bytes()
    again = embedswap("new", "mine", cwd=tmp_path, env={"EMBEDSWAP_ROOT": str(tmp_path)})
    assert again.returncode == 2 and "already exists" in one_line_error(again)


def test_workload_sample_shorthand_and_missing_notebooks(tmp_path: Path) -> None:
    from embedswap.config import ConfigError, load_experiment
    from embedswap.runner import PreflightError, preflight

    folder = external_experiment(tmp_path, ["http://127.0.0.1:9/v1"] * 2, workload="sample",
                                 notebooks="my-notebooks")
    experiment = load_experiment(folder)
    assert experiment.workload.documents == "sample:documents.jsonl"
    with pytest.raises(PreflightError, match=r"notebooks: .*my-notebooks has no 01_legacy_capture.ipynb"):
        preflight(experiment, folder, [])
    (folder / "experiment.yaml").write_text((folder / "experiment.yaml").read_text().replace(
        "workload: sample", "workload: mine"))
    with pytest.raises(ConfigError, match="key 'workload': 'mine' is not a workload"):
        load_experiment(folder)


@pytest.mark.e2e  # needs the engine environment (make engine)
def test_engine_install_runs_the_packaged_script_and_records_the_interpreter(tmp_path: Path) -> None:
    """The CPU install is scripts/install-engine-cpu.sh, shipped with the package. An environment whose stamp
    matches the pins is left as it is (the script's own fast path), so this test builds nothing: the engine
    folder is a stand-in (its python is the kit's, with no vLLM), and recording it must then fail by name.
    `engine use` records the real engine environment."""
    from embedswap.paths import asset

    engine = tmp_path / "engine"
    (engine / "bin").mkdir(parents=True)
    (engine / "bin" / "python").symlink_to(sys.executable)
    # the script's stamp: sha256sum of the two engine locks, relative to the folder holding requirements/
    locks = ["requirements/engine-cpu.lock", "requirements/engine-cpu-nodeps.lock"]
    stamp = subprocess.run(["sha256sum", *locks], cwd=asset("requirements").parent, capture_output=True, text=True,
                           check=True).stdout
    (engine / ".embedswap-engine-installed").write_text(stamp)
    env = {"EMBEDSWAP_CONFIG_DIR": str(tmp_path / "config")}
    run = embedswap("engine", "install", "--into", str(engine), cwd=tmp_path, env=env)
    assert "is up to date" in run.stdout, run.stdout + run.stderr  # the packaged script ran
    assert run.returncode == 1 and "has no vLLM installed" in one_line_error(run)
    assert not (tmp_path / "config" / "engine.json").exists()

    from embedswap.paths import engine_python

    real = os.environ.get("EMBEDSWAP_ENGINE_PYTHON") or engine_python()
    if not Path(real).exists():
        pytest.fail(f"engine environment missing ({real}): run `make engine`")
    used = embedswap("engine", "use", real, cwd=tmp_path, env=env)
    assert used.returncode == 0, used.stderr
    record = json.loads((tmp_path / "config" / "engine.json").read_text())
    assert record["python"] == str(Path(real).absolute()) and "ai-dynamo" in record["versions"]
    doctor = embedswap("doctor", cwd=tmp_path, env={**env, "EMBEDSWAP_ENGINE_PYTHON": ""})
    assert doctor.returncode == 0, doctor.stdout
    engines = next(line for line in doctor.stdout.splitlines() if " engines: " in line)
    assert engines.startswith("ok ") and real in engines and "recorded in" in engines, engines


def test_the_console_headline_reads_the_typed_summary(complete) -> None:
    from embedswap.runner import headline
    from embedswap.analysis.upgrade import read_summary

    lines = headline(as_typed(read_summary(complete)))
    assert lines[0].startswith("attempt ")
    assert any(line.startswith("cosine ") and "min " in line for line in lines), lines
    assert any("parity gate: " in line for line in lines), lines
