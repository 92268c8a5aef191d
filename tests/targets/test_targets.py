"""Targets in depth: the Dynamo target (frontend + embedding worker), the Kubernetes manifest, start-up failures.

Everything here is fast (fake interpreters, no vLLM) except the one smoke test marked e2e, which starts the real
Dynamo frontend and worker with MiniLM.
"""

from __future__ import annotations

import copy
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from ports import free_port

from embedswap.config import ConfigError, DynamoTarget, KubernetesTarget, ModelConfig, parse_experiment
from embedswap.targets import build_target
from embedswap.targets.base import ManagedProcess, Target, TargetStartError, server_env
from embedswap.targets.dynamo import DynamoServerTarget
from embedswap.targets.kubernetes import (
    FRONTEND_SERVICE,
    WORKER_SERVICE,
    KubernetesDeploymentTarget,
    manifest_yaml,
    render_manifest,
    validate_manifest,
)

MODEL = ModelConfig(served_name="minilm")


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSWAP_CACHE", str(cache))
    return cache


def group_gone(pgid: int | None, wait_s: float = 15.0) -> bool:
    """True once no process of the group is left (zombies awaiting their reaper count as gone)."""
    assert pgid is not None
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for proc in psutil.process_iter(["pid", "status"]):
            try:
                if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                    left.append(proc.pid)
            except (ProcessLookupError, psutil.Error):
                continue
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.3)


def fake_python(folder: Path, body: str) -> str:
    """A stand-in engine interpreter: a shell script running ``body`` with the interpreter's arguments
    ("$1" is ``-c`` for the import and version checks, "$*" holds a server's command line)."""
    script = folder / "fake-python"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


# --- start-up failures (base behaviour) -----------------------------------------------------------------------
class CommandTarget(Target):
    """A target that runs one given command and is never healthy unless something listens on its port."""

    kind = "command"

    def __init__(self, command: list[str], log_dir: Path, timeout_s: float):
        config = DynamoTarget(kind="dynamo", port=free_port(), startup_timeout_s=timeout_s)
        super().__init__("cmd", config, MODEL, "/nonexistent/model", log_dir)
        self.command = command

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.config.port}"

    def launch(self) -> None:
        process = ManagedProcess(self.name, self.command, server_env(), self.log_dir / "cmd.log")
        self.processes.append(process)
        process.start()


def test_startup_timeout_names_the_timeout_and_the_log_tail(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import time; print('loading weights, slowly', flush=True); time.sleep(60)"]
    target = CommandTarget(command, tmp_path, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    assert time.monotonic() - started < 30
    assert "not healthy after 2 s" in message
    assert "loading weights, slowly" in message  # the log tail
    assert str(tmp_path / "cmd.log") in message
    assert group_gone(target.processes[0].pid)
    assert not (tmp_path / "cmd.pid").exists()


def test_teardown_after_a_failed_start_keeps_the_message(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; print('CUDA out of memory (pretend)'); sys.exit(1)"]
    target = CommandTarget(command, tmp_path, timeout_s=60)
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    assert "exited with code 1 during start-up" in message
    assert "CUDA out of memory (pretend)" in message
    assert group_gone(target.processes[0].pid)


def test_start_polls_health_on_one_client_every_health_poll_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # base.HEALTH_POLL_S: polled every 1 s, the wait overshot a ready server by 0.5 s on average; httpx.get built a
    # client and TLS context per check (22 ms of CPU each, taken from the server loading beside it)
    import http.server
    import threading

    import httpx

    from embedswap.targets import base

    asked: list[str] = []

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            asked.append(self.path)
            self.send_response(200 if len(asked) > 3 else 503)  # up at the fourth check
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    target = CommandTarget(["sleep", "60"], tmp_path, timeout_s=60)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", target.config.port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slept: list[float] = []
    monkeypatch.setattr(base.time, "sleep", slept.append)
    monkeypatch.setattr(httpx, "get", lambda *a, **k: pytest.fail("a readiness check built a client of its own"))
    try:
        target.launch()  # not start(): its preflight refuses the port this test's health server holds
        target.wait_healthy(60)
        polled = list(slept)  # not stop()'s waits
    finally:
        target.stop()
        server.shutdown()
        server.server_close()
    assert asked == ["/health"] * 4
    assert polled == [base.HEALTH_POLL_S] * 3 and base.HEALTH_POLL_S < 1.0


# --- the Dynamo target -------------------------------------------------------------------------------------------
def dynamo_target(tmp_path: Path, **config: Any) -> DynamoServerTarget:
    cfg = DynamoTarget(kind="dynamo", port=config.pop("port", None) or free_port(), **config)
    return DynamoServerTarget("dynamo", cfg, MODEL, "/models/minilm", tmp_path / "logs")


def test_dynamo_commands_follow_the_tested_launch(tmp_path: Path) -> None:
    target = dynamo_target(tmp_path, python="/engine/python", dtype="float32", max_model_len=256,
                           extra_args=["--enforce-eager"], frontend_args=["--router-mode", "round-robin"])
    port = str(target.config.port)
    assert target.frontend_command() == [
        "/engine/python", "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", port,
        "--discovery-backend", "file", "--router-mode", "round-robin",
    ]
    assert target.worker_command() == [
        "/engine/python", "-m", "dynamo.vllm", "--model", "/models/minilm", "--served-model-name", "minilm",
        "--embedding-worker", "--runner", "pooling", "--discovery-backend", "file",
        "--dtype", "float32", "--max-model-len", "256", "--enforce-eager",
    ]
    assert target.health_url().endswith("/v1/models")


def test_dynamo_without_engine_python_is_a_clear_error(tmp_path: Path) -> None:
    target = dynamo_target(tmp_path, python=str(tmp_path / "no-such-venv" / "bin" / "python"))
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    assert "Dynamo not measured" in message
    assert "does not exist" in message and "make engine" in message
    assert target.processes == []


def test_dynamo_missing_from_the_engine_is_a_clear_error(tmp_path: Path) -> None:
    # the interpreter exists but has no Dynamo: the import check names what is missing
    python = fake_python(tmp_path, 'if [ "$1" = "-c" ]; then echo dynamo.frontend dynamo.vllm; exit 0; fi\nexit 3\n')
    target = dynamo_target(tmp_path, python=python)
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    assert "cannot import dynamo.frontend, dynamo.vllm" in message
    assert "ai-dynamo" in message
    assert target.processes == []


def test_dynamo_worker_failure_stops_both_and_keeps_the_message(tmp_path: Path, own_cache: Path) -> None:
    python = fake_python(
        tmp_path,
        'if [ "$1" = "-c" ]; then exit 0; fi\n'
        'case "$*" in *dynamo.vllm*) sleep 1; echo "worker: ValueError: boom while loading"; exit 1;; esac\n'
        "env | grep -E '^(DYN_|HOME=|HF_HUB_OFFLINE=|VLLM_CPU_KVCACHE_SPACE=|VLLM_CACHE_ROOT=)' | sort\n"
        "exec sleep 60\n",
    )
    target = dynamo_target(tmp_path, python=python, startup_timeout_s=60)
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    assert "dynamo.worker exited with code 1" in message
    assert "boom while loading" in message
    names = [p.name for p in target.processes]
    assert names == ["dynamo.frontend", "dynamo.worker"]
    assert all(group_gone(p.pid) for p in target.processes)
    logs = tmp_path / "logs"
    assert (logs / "dynamo.frontend.log").exists() and (logs / "dynamo.worker.log").exists()
    assert not list(logs.glob("*.pid"))
    lines = (logs / "dynamo.frontend.log").read_text().splitlines()[1:]
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    for key in ("DYN_TCP_RPC_HOST", "DYN_TCP_RESPONSE_STREAM_HOST", "DYN_SYSTEM_HOST", "DYN_EVENT_PLANE_HOST"):
        assert env[key] == "127.0.0.1"
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert Path(env["HOME"]).is_relative_to(own_cache)
    assert Path(env["VLLM_CACHE_ROOT"]).is_relative_to(own_cache)
    state = Path(env["DYN_FILE_KV"])
    assert state.is_relative_to(own_cache)
    assert not state.exists()  # the discovery state of a stopped graph is removed


def test_dynamo_stop_does_not_wait_out_a_worker_that_hangs_after_shutdown(tmp_path: Path) -> None:
    # Dynamo 1.6.1's worker logs its last line after SIGTERM and then hangs at interpreter exit: stop() kills it
    # soon after that line instead of waiting the whole grace period.
    python = fake_python(
        tmp_path,
        'if [ "$1" = "-c" ]; then exit 0; fi\n'
        'case "$*" in *dynamo.vllm*)\n'
        '  trap \'echo "INFO _core: tasks still running at interpreter exit; continuing without them"\' TERM\n'
        "  while true; do sleep 0.2; done;;\n"
        "esac\n"
        "exec sleep 60\n",
    )
    target = dynamo_target(tmp_path, python=python)
    target.launch()
    time.sleep(1.0)
    assert target.alive()
    started = time.monotonic()
    codes = target.stop()
    assert time.monotonic() - started < 10
    assert codes["dynamo.worker"] == -9 and codes["dynamo.frontend"] == -15
    assert all(group_gone(p.pid) for p in target.processes)


# --- the Kubernetes target: the article's DynamoGraphDeployment ---------------------------------------------------
def k8s_config(**overrides: Any) -> KubernetesTarget:
    return KubernetesTarget(kind="kubernetes", **overrides)


def test_manifest_is_the_articles_graph() -> None:
    doc = render_manifest(k8s_config(namespace="embed"), "Qwen/Qwen3-Embedding-0.6B", "embedder", "k8s")
    doc = yaml.safe_load(manifest_yaml(doc))  # what is written is what is checked
    assert doc["apiVersion"] == "nvidia.com/v1alpha1" and doc["kind"] == "DynamoGraphDeployment"
    assert doc["metadata"]["namespace"] == "embed"
    services = doc["spec"]["services"]
    assert set(services) == {FRONTEND_SERVICE, WORKER_SERVICE}  # one frontend, one worker
    assert services[FRONTEND_SERVICE]["componentType"] == "frontend"
    assert services[FRONTEND_SERVICE]["replicas"] == 1
    worker = services[WORKER_SERVICE]
    assert worker["componentType"] == "worker" and worker["replicas"] == 1
    assert worker["resources"]["limits"]["gpu"] == "1"
    container = worker["extraPodSpec"]["mainContainer"]
    assert container["image"].startswith("nvcr.io/nvidia/ai-dynamo/vllm-runtime:")
    assert container["command"] == ["python3", "-m", "dynamo.vllm"]
    args = container["args"]
    assert args[:2] == ["--model", "Qwen/Qwen3-Embedding-0.6B"]
    joined = " ".join(args)
    assert "--embedding-worker" in args
    assert "--runner pooling" in joined
    assert "--max-model-len 1024" in joined
    assert "--gpu-memory-utilization 0.4" in joined
    assert all(isinstance(a, str) for a in args)  # "1024", not 1024
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in worker["envs"]
    assert validate_manifest(doc) == []


def _broken(mutate) -> list[str]:
    doc = render_manifest(k8s_config(), "Qwen/Qwen3-Embedding-0.6B", "embedder", "k8s")
    doc = copy.deepcopy(doc)
    mutate(doc)
    return validate_manifest(doc)


def _worker_container(doc: dict) -> dict:
    return doc["spec"]["services"][WORKER_SERVICE]["extraPodSpec"]["mainContainer"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(kind="Deployment"), "kind: must be 'DynamoGraphDeployment'"),
        (lambda d: d.update(apiVersion="v1"), "apiVersion"),
        (lambda d: d["metadata"].update(name="Embed_Swap"), "metadata.name"),
        (lambda d: d["spec"]["services"].pop(FRONTEND_SERVICE), "componentType 'frontend'"),
        (lambda d: d["spec"].pop("services"), "spec.services: missing"),
        (lambda d: _worker_container(d)["args"].remove("--embedding-worker"), "'--embedding-worker' missing"),
        (lambda d: _worker_container(d)["args"].remove("pooling"), "'--runner pooling' missing"),
        (lambda d: _worker_container(d).update(args=[1024 if a == "1024" else a for a in _worker_container(d)["args"]]),
         "must be a string (got int 1024; quote it)"),
        (lambda d: _worker_container(d).pop("image"), "mainContainer.image: missing"),
        (lambda d: d["spec"]["services"][WORKER_SERVICE].update(replicas="1"), "replicas: must be an integer"),
        (lambda d: d["spec"]["services"][WORKER_SERVICE]["resources"]["limits"].update(gpu=1), "gpu: must be a quoted"),
        (lambda d: d["spec"]["services"][WORKER_SERVICE]["envs"][0].update(value=1), "envs[0].value: must be a string"),
        (lambda d: d["spec"]["services"][WORKER_SERVICE].pop("extraPodSpec"), "mainContainer: missing"),
    ],
)
def test_validate_manifest_catches_a_broken_manifest(mutate, expected: str) -> None:
    problems = _broken(mutate)
    assert problems, "the broken manifest passed"
    assert any(expected in p for p in problems), problems


def test_validate_manifest_rejects_non_mappings() -> None:
    assert validate_manifest(["not", "a", "manifest"]) == ["manifest: must be a mapping (got list)"]


def test_kubernetes_without_cluster_writes_manifest_and_says_not_applied(tmp_path: Path) -> None:
    target = KubernetesDeploymentTarget("k8s", k8s_config(namespace="embed"), MODEL, "/local/minilm", tmp_path)
    with pytest.raises(TargetStartError) as error:
        target.start()
    message = str(error.value)
    path = tmp_path / "k8s.dynamographdeployment.yaml"
    assert "not applied: no cluster configured; manifest written to" in message
    assert str(path) in message and "not measured" in message
    doc = yaml.safe_load(path.read_text())
    assert validate_manifest(doc) == []
    # a package: model exists only on this machine: the manifest names its resolved folder
    assert _worker_container(doc)["args"][1] == "/local/minilm"
    assert "--embedding-worker" in target.commands()[1]


def test_kubernetes_model_comes_from_the_target_or_the_experiment(tmp_path: Path) -> None:
    hf_model = ModelConfig(path="Qwen/Qwen3-Embedding-0.6B", served_name="embedder")
    plain = KubernetesDeploymentTarget("k8s", k8s_config(), hf_model, "Qwen/Qwen3-Embedding-0.6B", tmp_path)
    assert _worker_container(plain.manifest())["args"][1] == "Qwen/Qwen3-Embedding-0.6B"
    named = KubernetesDeploymentTarget("k8s", k8s_config(model="org/other"), hf_model, "x", tmp_path)
    assert _worker_container(named.manifest())["args"][1] == "org/other"


def test_kubernetes_apply_without_kubectl_is_not_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    config = k8s_config(apply=True, url="http://127.0.0.1:18399/v1")
    target = KubernetesDeploymentTarget("k8s", config, MODEL, "/local/minilm", tmp_path)
    assert target.base_url == "http://127.0.0.1:18399"
    with pytest.raises(TargetStartError, match="not applied: kubectl is not on PATH"):
        target.start()


# --- configuration ------------------------------------------------------------------------------------------------
def _experiment(targets: dict, candidates: list[str]) -> dict:
    return {
        "name": "unit", "date": "2026-11-29", "workload": {"documents": "docs.jsonl"},
        "targets": {"legacy": {"kind": "legacy", "port": 18301}, **targets}, "candidates": candidates,
    }


def test_config_builds_dynamo_and_kubernetes_targets(tmp_path: Path) -> None:
    experiment = parse_experiment(_experiment(
        {"dynamo": {"kind": "dynamo", "port": 18302, "dtype": "float32", "extra_args": ["--enforce-eager"]},
         "k8s": {"kind": "kubernetes", "namespace": "embed"}},
        ["dynamo", "k8s"],
    ))
    k8s = experiment.targets["k8s"]
    assert (k8s.max_model_len, k8s.gpu_memory_utilization, k8s.apply, k8s.url) == (1024, 0.4, False, None)
    assert isinstance(build_target(experiment, "dynamo", tmp_path), DynamoServerTarget)
    assert isinstance(build_target(experiment, "k8s", tmp_path), KubernetesDeploymentTarget)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"kind": "dynamo", "port": 18302, "frontend_arg": []},
         "unknown key 'targets.cand.frontend_arg' (did you mean 'frontend_args'?)"),
        ({"kind": "kubernetes", "namspace": "x"}, "unknown key 'targets.cand.namspace' (did you mean 'namespace'?)"),
        ({"kind": "kubernetes", "apply": True}, "needs 'url'"),
        ({"kind": "kubernetes", "gpu_memory_utilization": 1.5}, "targets.cand.gpu_memory_utilization"),
    ],
)
def test_config_errors_name_the_key(target: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_experiment(_experiment({"cand": target}, ["cand"]))
    assert expected in str(error.value)
