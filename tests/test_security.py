"""Security hygiene: servers on the loopback interface by default; API keys only from the environment and never
written anywhere (captures, steps.json, target.json, logs, notebooks, summary, report); the legacy server's body
limits over real HTTP; and schemathesis against the running legacy server's own /openapi.json."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from embedswap.captures import new_attempt, verify_attempt
from embedswap.wire.client import auth_headers
from embedswap.config import load_experiment
from embedswap.legacy.cli import parse_args
from embedswap.redact import REDACTED, redact
from embedswap.scaffold import new_experiment
from embedswap.pipeline.build import write_summary
from embedswap.targets import build_target
from embedswap.targets.base import ManagedProcess
from realkit import (DATA, EMBEDSWAP, JsonHandler, files_containing, legacy_target, make_experiment, measured_attempt,
                     quick_host_calibration, wait_no_processes)
from ports import free_ports

KEY_ENV = "EMBEDSWAP_TEST_EMBED_API_KEY"


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = f"sk-test-{secrets.token_hex(12)}"
    monkeypatch.setenv(KEY_ENV, key)
    return key


# --- loopback by default ---------------------------------------------------------------------------------------------


def test_targets_and_servers_bind_loopback_by_default(tmp_path: Path) -> None:
    folder = new_experiment("sec", tmp_path / "experiments", data_dir=DATA)
    experiment = load_experiment(folder)
    assert {name: t.host for name, t in experiment.targets.items()} == dict.fromkeys(experiment.targets, "127.0.0.1")
    for name in ("legacy", "vllm"):
        command = build_target(experiment, name, tmp_path / "logs").command()  # type: ignore[attr-defined]
        assert command[command.index("--host") + 1] == "127.0.0.1"
    _, host, _ = parse_args(["--model", "m", "--port", "1"])
    assert host == "127.0.0.1"


# --- API keys: from the environment, never written -------------------------------------------------------------------


def test_redact_patterns(api_key: str) -> None:
    assert redact(f"invalid key {api_key}!") == f"invalid key {REDACTED}!"
    assert redact("Authorization: Bearer abc.DEF-123_456") == f"Authorization: Bearer {REDACTED}"
    assert redact("vllm serve m --api-key s3cr3t-v4lue --port 1") == f"vllm serve m --api-key {REDACTED} --port 1"
    assert redact("x --token=abcdefgh") == f"x --token={REDACTED}"
    assert redact("https://user:pa55word@host.example/v1") == f"https://{REDACTED}@host.example/v1"
    assert redact("http://h/v1?api_key=abc123&x=1") == f"http://h/v1?api_key={REDACTED}&x=1"
    assert redact("nothing secret: 127.0.0.1:18081 --port 8000") == "nothing secret: 127.0.0.1:18081 --port 8000"


def test_a_key_read_by_auth_headers_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the variable is called: reading it through auth_headers registers the value for redaction."""
    key = f"plain-{secrets.token_hex(10)}"
    monkeypatch.setenv("EMBEDDING_SERVICE_CREDS", key)  # a name the environment heuristic does not catch
    assert auth_headers("EMBEDDING_SERVICE_CREDS") == {"Authorization": f"Bearer {key}"}
    folder = new_experiment("sec", tmp_path / "experiments", data_dir=DATA)
    attempt = new_attempt(folder)
    attempt.write_jsonl("t/requests.jsonl", [{"status": 401, "error": f"bad key {key}"}])
    attempt.write_json("t/target.json", {"commands": [f"server --api-key {key}"], "error": f"401: {key}"})
    attempt.mark_step("capture:t", "failed", error=f"RuntimeError: rejected {key}")
    assert files_containing(attempt.path, key) == []
    assert REDACTED in attempt.read_jsonl("t/requests.jsonl")[0]["error"]
    assert verify_attempt(attempt) == []  # redacted before the checksum, not after


def test_commands_in_target_json_are_redacted(tmp_path: Path, api_key: str) -> None:
    folder = new_experiment("sec", tmp_path / "experiments", data_dir=DATA)
    experiment = load_experiment(folder)
    target = build_target(experiment, "legacy", tmp_path / "logs")
    target.config.extra_args = ["--api-key", api_key]  # e.g. vLLM's --api-key, passed through extra_args
    command = target.command()  # type: ignore[attr-defined]
    assert api_key in command  # the server gets it; only what is written is redacted
    target.processes.append(ManagedProcess("legacy", command, {}, tmp_path / "logs" / "legacy.log"))
    description = json.dumps(target.describe())
    assert api_key not in description and f"--api-key {REDACTED}" in description


class _EchoKeyServer(JsonHandler):
    """An external embedding service that answers /v1/models and rejects every embedding request with an error
    message that echoes the Authorization header back (servers do that): the worst case for leaking a key."""

    def do_GET(self) -> None:  # noqa: N802
        self.answer(200, {"object": "list", "data": [{"id": "minilm", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization")
        self.answer(401, {"error": {"message": f"invalid api key: {auth} (key {auth.split()[-1]})",
                                     "type": "invalid_request_error"}})



@pytest.fixture
def echo_server() -> Iterator[int]:
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), _EchoKeyServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port
    server.shutdown()
    server.server_close()


def _external_experiment(root: Path, port: int) -> Path:
    external = {"kind": "external", "url": f"http://127.0.0.1:{port}/v1", "api_key_env": KEY_ENV,
                "headers": {"X-Team": "search"}}
    folder = make_experiment(root, "sec", dict(external), {"candidate": dict(external)},
                             latency={"sequential_requests": 3, "concurrent_requests": 4})
    return folder


def test_key_never_reaches_captures_summary_or_report(tmp_path: Path, api_key: str, echo_server: int) -> None:
    folder = _external_experiment(tmp_path, echo_server)
    with quick_host_calibration():  # the latency errors are read here, not the host readings
        attempt, summary = measured_attempt(folder)
    write_summary(summary, attempt)
    from embedswap.report.publish import render_report

    render_report(folder, attempt.name)
    # the key was sent (the server echoed it) and every echo was redacted before anything was written
    workload = attempt.read_jsonl("candidate/workload_requests.jsonl")
    assert {r["status"] for r in workload} == {401}
    assert all(f"Bearer {REDACTED}" in r["error"] for r in workload)
    assert all(REDACTED in r["error"] for r in attempt.read_jsonl("candidate/latency_requests.jsonl"))
    assert files_containing(attempt.path, api_key) == []
    assert files_containing(tmp_path / "reports", api_key) == []
    assert files_containing(folder, api_key) == []  # experiment.yaml names the variable, never the value
    assert verify_attempt(attempt) == []


@pytest.mark.e2e
def test_key_never_written_by_a_whole_run(tmp_path: Path, api_key: str, echo_server: int) -> None:
    """The same through `embedswap run`: executed notebooks, logs, steps, summary and report included."""
    folder = _external_experiment(tmp_path, echo_server)
    run = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02,03,04"], capture_output=True,
                         text=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    attempt = next((folder / "attempts").iterdir())
    assert list((attempt / "notebooks").glob("*.ipynb")), run.stdout[-3000:] + run.stderr[-3000:]
    assert api_key not in run.stdout + run.stderr
    assert files_containing(tmp_path, api_key) == []
    assert json.loads((attempt / "steps.json").read_text())["capture:candidate"]["status"] == "partial"


# --- the legacy server over real HTTP --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def legacy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("security-server")
    (port,) = free_ports(1)
    folder = make_experiment(root, "sec-server", legacy_target(
        port, extra_args=["--max-body-bytes", "65536", "--max-inputs", "16"]), {"candidate": legacy_target(port)})
    target = build_target(load_experiment(folder), "legacy", root / "logs")
    with target:
        yield target
    assert wait_no_processes([port]) == []


@pytest.mark.e2e
def test_legacy_server_listens_on_loopback_only(legacy_server: Any) -> None:
    process = psutil.Process(legacy_server.processes[0].pid)
    listening = [c.laddr for p in [process, *process.children(recursive=True)] for c in p.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening


@pytest.mark.e2e
def test_body_and_input_limits_over_real_http(legacy_server: Any) -> None:
    url = f"{legacy_server.base_url}/v1/embeddings"
    big = json.dumps({"input": "a" * 70_000}).encode()
    declared = httpx.post(url, content=big, headers={"Content-Type": "application/json"}, timeout=60)
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must count what it receives
        yield b'{"input": "'
        for _ in range(10):
            yield b"a" * 10_000
        yield b'"}'

    streamed = httpx.post(url, content=chunks(), headers={"Content-Type": "application/json"}, timeout=60)
    assert streamed.status_code == 413
    too_many = httpx.post(url, json={"input": ["hi"] * 17}, timeout=60)
    assert too_many.status_code == 400 and "at most 16 per request" in too_many.json()["error"]["message"]
    assert too_many.json()["error"]["type"] == "invalid_request_error"
    at_limit = httpx.post(url, json={"input": ["hi"] * 16}, timeout=120)
    assert at_limit.status_code == 200 and len(at_limit.json()["data"]) == 16
    assert httpx.get(f"{legacy_server.base_url}/health", timeout=10).status_code == 200  # still serving


@pytest.mark.e2e
def test_schemathesis_finds_nothing(legacy_server: Any, tmp_path: Path) -> None:
    """Property-based run against the server's own /openapi.json: every check, 50 examples per operation."""
    st = Path(sys.executable).parent / "st"
    if not st.exists():
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    run = subprocess.run(
        [str(st), "run", f"{legacy_server.base_url}/openapi.json", "--checks", "all", "--max-examples", "50",
         "--seed", "1", "--request-timeout", "60", "--no-color", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout
