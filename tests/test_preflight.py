"""A bad configuration is one clear error with exit code 2, before anything starts (through the real CLI).

Each case runs ``embedswap run`` as a subprocess on a small experiment and checks: exit code 2, the message names
the problem, no attempt folder was made and no server process runs on the experiment's ports.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from realkit import EMBEDSWAP, legacy_target, make_experiment
from ports import free_ports, port_processes


def _run(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EMBEDSWAP, "run", str(folder), "--no-report", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def _experiment(tmp_path: Path, mutate: Callable[[dict[str, Any]], None] | None = None) -> tuple[Path, list[int]]:
    ports = free_ports(2)
    folder = make_experiment(tmp_path, "preflight", legacy_target(ports[0]), {"candidate": legacy_target(ports[1])})
    if mutate:
        path = folder / "experiment.yaml"
        config = yaml.safe_load(path.read_text())
        mutate(config)
        path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return folder, ports


def _assert_refused(run: subprocess.CompletedProcess[str], folder: Path, ports: list[int], *expected: str) -> None:
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stderr.startswith("embedswap: "), run.stderr
    assert "Traceback" not in run.stderr
    for text in expected:
        assert text in run.stderr, run.stderr
    assert not (folder / "attempts").exists(), "an attempt folder was made for a run that could not start"
    assert port_processes(ports) == []


def test_unknown_key(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path, lambda c: c["targets"]["candidate"].update(prot=1))
    _assert_refused(_run(folder), folder, ports, "unknown key 'targets.candidate.prot' (did you mean 'port'?)")


def test_model_path_that_does_not_exist(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path, lambda c: c["model"].update(path="./no-such-model"))
    _assert_refused(_run(folder), folder, ports, "nothing was started", "model path './no-such-model' does not exist")


def test_model_id_not_in_the_offline_cache(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path, lambda c: c["model"].update(path="no-such-org/no-such-model"))
    _assert_refused(_run(folder), folder, ports, "model 'no-such-org/no-such-model' does not exist",
                    "not in the local Hugging Face cache")


def test_model_package_not_installed(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path, lambda c: c["model"].update(path="package:no_such_model_package"))
    _assert_refused(_run(folder), folder, ports, "Python package 'no_such_model_package' is not installed")


def test_port_in_use(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[1]))
        taken.listen()
        run = _run(folder)
    _assert_refused(run, folder, ports, f"target 'candidate': port 127.0.0.1:{ports[1]} is already in use",
                    "targets.candidate.port")


def test_url_that_does_not_answer(tmp_path: Path) -> None:
    (dead,) = free_ports(1)

    def external(config: dict[str, Any]) -> None:
        config["targets"]["candidate"] = {"kind": "external", "url": f"http://127.0.0.1:{dead}/v1"}

    folder, ports = _experiment(tmp_path, external)
    _assert_refused(_run(folder), folder, ports + [dead],
                    f"target 'candidate': http://127.0.0.1:{dead}/v1/models does not answer (ConnectError")


def test_api_key_variable_not_set(tmp_path: Path) -> None:
    (dead,) = free_ports(1)

    def external(config: dict[str, Any]) -> None:
        config["targets"]["candidate"] = {"kind": "external", "url": f"http://127.0.0.1:{dead}/v1",
                                          "api_key_env": "EMBEDSWAP_TEST_UNSET_KEY"}

    folder, ports = _experiment(tmp_path, external)
    env = {k: v for k, v in os.environ.items() if k != "EMBEDSWAP_TEST_UNSET_KEY"}
    run = subprocess.run([EMBEDSWAP, "run", str(folder)], capture_output=True, text=True, timeout=300, env=env)
    _assert_refused(run, folder, ports, "environment variable EMBEDSWAP_TEST_UNSET_KEY (api_key_env) is not set")


def test_every_problem_is_listed_once(tmp_path: Path) -> None:
    folder, ports = _experiment(tmp_path, lambda c: c["model"].update(path="./no-such-model"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[0]))
        taken.listen()
        run = _run(folder)
    _assert_refused(run, folder, ports, "nothing was started: \n  - model path './no-such-model' does not exist",
                    f"\n  - target 'legacy': port 127.0.0.1:{ports[0]} is already in use")


def test_only_the_servers_to_start_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A taken port matters only for a server this run starts (in-process, notebooks replaced by a recorder)."""
    from embedswap import runner

    ran: list[str] = []
    monkeypatch.setattr(runner, "run_notebook", lambda name, *a, **k: ran.append(name))
    folder, ports = _experiment(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[0]))  # the legacy server's port
        taken.listen()
        with pytest.raises(runner.PreflightError, match="port 127.0.0.1:.* is already in use"):
            runner.run_experiment(folder, "new", only=["01_legacy_capture"], render=False)
        assert not (folder / "attempts").exists() and ran == []
        runner.run_experiment(folder, "new", only=["02_swap_deploy", "03_vector_contract_diff"], render=False)
    assert ran == ["02_swap_deploy", "03_vector_contract_diff"]
