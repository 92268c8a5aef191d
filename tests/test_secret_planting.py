"""Every form of secret, planted where a run picks it up, is found in no file the kit wrote (the attempt: captures,
steps.json, target.json, server logs, the Kubernetes manifest, executed notebooks; summary.json; the reports).

The forms: an API key read from ``api_key_env`` (sent as ``Bearer``), a value in a target's ``headers:``, an
``x-api-key:`` header, ``Authorization: Basic ...``, ``{"api_key": "..."}``, ``OPENAI_API_KEY=sk-...`` inside
text, a Hugging Face token (``hf_...``) nobody registered, and ``HF_TOKEN`` in a Kubernetes target's ``env``. A
real HTTP server (the "external service") echoes every header it got and the text forms in its error answers,
as servers do; a real server process prints them into its log; a notebook's outputs carry them."""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml

from embedswap.captures import new_attempt, verify_attempt
from embedswap.config import load_experiment
from embedswap.measure.capture import measure_target
from embedswap.redact import REDACTED, redact_tree
from embedswap.pipeline.build import build_summary, write_summary
from embedswap.targets.base import ManagedProcess, Target, server_env
from embedswap.measure.workload import load_workload
from realkit import JsonHandler, files_containing, make_experiment, quick_host_calibration
from ports import free_ports

KEY_ENV = "EMBEDSWAP_PLANT_API_KEY"


def _planted() -> dict[str, str]:
    """Fresh values per run, so nothing but this test can have written them."""
    h = secrets.token_hex
    return {
        "api_key_env": f"key-{h(12)}",
        "header_value": f"org-{h(10)}",  # X-Org: a header name that does not say "secret"
        "x_api_key": f"xak{h(10)}",
        "basic": base64.b64encode(f"user:{h(8)}".encode()).decode(),
        "json_api_key": f"jak{h(10)}",
        "openai": f"sk-{h(16)}",
        "hf_text": f"hf_{h(17)}",  # 34 characters after hf_, like a real one; registered nowhere
        "hf_k8s": f"hf_{h(17)}",
    }


def _text_forms(p: dict[str, str]) -> str:
    return (f"Authorization: Basic {p['basic']}\n{json.dumps({'api_key': p['json_api_key']})}\n"
            f"env: OPENAI_API_KEY={p['openai']} HF says token {p['hf_text']} is invalid")


class _Echo(JsonHandler):
    """An external embedding service that answers /v1/models and rejects every embedding request with an error
    echoing all the headers it received and the text forms."""

    planted: dict[str, str] = {}
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        self.answer(200, {"object": "list", "data": [{"id": "minilm", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = dict(self.headers.items())
        self.seen.append(headers)
        echoed = "\n".join(f"{k}: {v}" for k, v in headers.items())
        self.answer(401, {"error": {"message": f"rejected; you sent\n{echoed}\n{_text_forms(self.planted)}",
                                     "type": "invalid_request_error", "api_key": self.planted["json_api_key"]}})



@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[dict[str, str], int]]:
    values = _planted()
    monkeypatch.setenv(KEY_ENV, values["api_key_env"])
    _Echo.planted, _Echo.seen = values, []
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield values, port
    server.shutdown()
    server.server_close()


class _PrintingServer(Target):
    """A real server process that prints every planted form into its log (as a server echoing its config would)."""

    kind = "legacy"

    def __init__(self, log_dir: Path, text: str) -> None:
        self.text = text
        self.log_dir = log_dir
        self.processes = []
        self.name = "printer"
        self.config = SimpleNamespace(port=None, host="127.0.0.1", startup_timeout_s=20)

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:9"

    def launch(self) -> None:
        process = ManagedProcess("printer", ["sh", "-c", 'printf "%s\\n" "$PLANTED"; sleep 30'],
                                 server_env({"PLANTED": self.text}), self.log_dir / "printer.log")
        process.start()
        self.processes.append(process)

    def is_ready(self) -> bool:
        return "HF says" in (self.log_dir / "printer.log").read_text()


def test_no_planted_secret_in_any_file_the_kit_writes(tmp_path: Path, planted: tuple[dict[str, str], int]) -> None:
    p, port = planted
    external = {"kind": "external", "url": f"http://127.0.0.1:{port}/v1", "api_key_env": KEY_ENV,
                "headers": {"X-Org": p["header_value"], "x-api-key": p["x_api_key"]}}
    kubernetes = {"kind": "kubernetes", "env": {"HF_TOKEN": p["hf_k8s"], "LOG_LEVEL": "debug"}}
    folder = make_experiment(tmp_path, "plant", dict(external), {"candidate": dict(external), "k8s": kubernetes},
                             latency={"sequential_requests": 2, "concurrent_requests": 2})
    experiment = load_experiment(folder)
    attempt = new_attempt(folder)
    for name in experiment.target_order():
        try:
            with quick_host_calibration():  # the files written are read here, not the host readings' values
                measure_target(experiment, folder, attempt, name, f"capture:{name}")
        except Exception as exc:  # the Kubernetes target is not applied (no cluster): recorded, not measured
            attempt.mark_step(f"capture:{name}", "failed", error=f"{type(exc).__name__}: {exc}")
    summary = build_summary(experiment, folder, attempt, load_workload(experiment, folder))
    write_summary(summary, attempt)

    # a server's log, and an executed notebook whose outputs show the echoed error (what `embedswap run` redacts)
    with _PrintingServer(attempt.logs, "\n".join([_text_forms(p), f"X-Org: {p['header_value']}",
                                                  f"x-api-key: {p['x_api_key']}", f"HF_TOKEN={p['hf_k8s']}"])):
        pass
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(error)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=_text_forms(p) + f"\nBearer {p['api_key_env']}\n"
                               f"X-Org: {p['header_value']}\n")])])
    attempt.notebooks.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, attempt.notebooks / "02_swap_deploy.ipynb")
    redact_tree(attempt.notebooks)
    redact_tree(attempt.logs)
    from embedswap.report.publish import render_report

    render_report(folder, attempt.name)

    # every value was really sent or printed ...
    assert _Echo.seen and all(h.get("X-Org") == p["header_value"] and h.get("x-api-key") == p["x_api_key"]
                              and h.get("Authorization") == f"Bearer {p['api_key_env']}" for h in _Echo.seen)
    errors = [r["error"] for r in attempt.read_jsonl("candidate/workload_requests.jsonl")]
    assert errors and all(f"Authorization: Basic {REDACTED}" in e and "OPENAI_API_KEY=" + REDACTED in e
                          for e in errors)
    assert REDACTED in (attempt.logs / "printer.log").read_text()
    # ... and the manifest reads HF_TOKEN from a Secret, which its first lines say how to create
    manifest_text = (attempt.logs / "k8s.dynamographdeployment.yaml").read_text()
    envs = yaml.safe_load(manifest_text)["spec"]["services"]["VllmEmbeddingWorker"]["envs"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "embedswap-k8s-secrets", "key": "HF_TOKEN"}}} \
        in envs and {"name": "LOG_LEVEL", "value": "debug"} in envs
    assert 'kubectl create secret generic embedswap-k8s-secrets -n default --from-literal=HF_TOKEN="$HF_TOKEN"' \
        in manifest_text
    # ... and none of them is in any file written
    reports = tmp_path / "reports"
    assert list(reports.rglob("*.md")) and list(attempt.path.rglob("*.jsonl"))
    found = {form: files_containing(attempt.path, value) + files_containing(reports, value)
             for form, value in p.items()}
    assert found == {form: [] for form in p}
    assert verify_attempt(attempt) == []
