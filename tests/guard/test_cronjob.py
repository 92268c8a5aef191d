"""The CronJob the kit renders for `guard check`: valid, the guard in a ConfigMap, the API key by reference only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from embedswap.cli import main
from embedswap.guard.cronjob import render_cronjob, validate
from embedswap.guard.guard_file import (
    Canary,
    Guard,
    Latency,
    Server,
    Source,
    Tolerance,
    Tolerances,
    pack_arrays,
    write_guard,
)


def small_guard(path: Path) -> Path:
    tol = Tolerance(value=1e-5, derived_from="test")
    guard = Guard(source=Source(experiment="e", attempt="a", target="vllm", manifest_sha256="0" * 64,
                                kit_version="0", created="2026-12-02T00:00:00+00:00"),
                  server=Server(kind="vllm", served_name="minilm", embeddings_path="/v1/embeddings"),
                  tolerances=Tolerances(direction=tol, length=tol, latency_p50_ratio=Tolerance(value=1.1,
                                                                                               derived_from="m")),
                  latency=Latency(requests_of=8, source="none"), batch_size=8,
                  canaries=[Canary(id="document:d1", kind="document", lang="en", text="hello", utf8_bytes=5,
                                   why="stratified", row=0)],
                  contract=[], arrays=pack_arrays(canaries=np.ones((1, 4))))
    return write_guard(guard, path)


def test_rendered_cronjob_is_valid_and_refers_to_the_secret(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GUARD_KEY", "sk-do-not-print-this-value-123")
    guard = small_guard(tmp_path / "g.json")
    text = render_cronjob(guard, url="http://vllm.embed.svc:8000", schedule="*/30 * * * *", name="guard",
                          namespace="embed", image="registry.local/embedswap:1", api_key_secret="vllm-key/api-key")
    configmap, cronjob = list(yaml.safe_load_all(text))
    assert validate(configmap) == [] and validate(cronjob) == []
    assert json.loads(configmap["data"]["guard.json"])["sha256"] == json.loads(guard.read_text())["sha256"]
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:4] == ["embedswap", "guard", "check", "/etc/embedswap-guard/guard.json"]
    assert container["env"] == [{"name": "EMBEDSWAP_GUARD_API_KEY",
                                 "valueFrom": {"secretKeyRef": {"name": "vllm-key", "key": "api-key"}}}]
    assert "sk-do-not-print" not in text


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["spec"].update(schedule="every hour"), "not a cron schedule"),
    (lambda d: d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0].update(
        env=[{"name": "API_KEY", "value": "x"}]), "inline value"),
    (lambda d: d["metadata"].update(name="Guard_1"), "DNS-1123"),
])
def test_validate_catches_a_broken_cronjob(tmp_path: Path, change, problem) -> None:
    text = render_cronjob(small_guard(tmp_path / "g.json"), url="http://x:8000", schedule="0 * * * *", name="guard",
                          namespace="default", image="img")
    cronjob = list(yaml.safe_load_all(text))[1]
    change(cronjob)
    assert any(problem in p for p in validate(cronjob))


def test_the_command_writes_the_manifests(tmp_path: Path) -> None:
    out = tmp_path / "cron.yaml"
    assert main(["guard", "cronjob", str(small_guard(tmp_path / "g.json")), "--url", "http://x:8000",
                 "--image", "img", "--out", str(out)]) == 0
    assert [d["kind"] for d in yaml.safe_load_all(out.read_text())] == ["ConfigMap", "CronJob"]
    assert main(["guard", "cronjob", str(small_guard(tmp_path / "h.json")), "--url", "http://x:8000",
                 "--image", "img", "--schedule", "often"]) == 2


def test_the_github_actions_example_runs_a_command_the_kit_accepts() -> None:
    import shlex

    from embedswap.cli import build_parser

    workflow = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples/guard/github-actions.yml").read_text())
    steps = workflow["jobs"]["guard"]["steps"]
    (run,) = [s["run"] for s in steps if "guard check" in s.get("run", "")]
    argv = shlex.split(run.replace("${{ vars.EMBEDDINGS_URL }}", "http://x"))
    assert argv[0] == "embedswap"
    args = build_parser().parse_args(argv[1:])
    assert (args.guard_command, args.api_key_env, args.junit) == ("check", "EMBEDDINGS_API_KEY", "guard-junit.xml")
    secret_env = next(s for s in steps if "guard check" in s.get("run", ""))["env"]
    assert secret_env == {"EMBEDDINGS_API_KEY": "${{ secrets.EMBEDDINGS_API_KEY }}"}
