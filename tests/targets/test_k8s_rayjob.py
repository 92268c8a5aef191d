"""The open-loop sweep as a KubeRay RayJob: rendered from the experiment, secrets by reference, checked by the
validator (which finds what a hand edit breaks), and written by `embedswap rayjob`."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from embedswap.cli import main
from embedswap.config.experiment import parse_experiment
from embedswap.targets.k8s_rayjob import (create_secret_command, rayjob_yaml, render_rayjob, secret_env,
                                          validate_rayjob)

SECRET_VALUE = "sk-live-0123456789abcdef"


def _config(**open_loop: object) -> dict:
    return {
        "name": "fleet", "date": "2026-12-03", "workload": {"documents": "docs.jsonl", "batch_size": 4},
        "targets": {"legacy": {"kind": "external", "url": "http://legacy.embed.svc:8080/v1"},
                    "fleet": {"kind": "external", "url": "http://fleet.embed.svc/v1", "api_key_env": "FLEET_API_KEY"}},
        "legacy": "legacy", "candidates": ["fleet"],
        "latency": {"open_loop": {"slo": {"p99_ms": 200}, "rates": [1000, 4000, 16000], "workers": 12,
                                  "ray_address": "auto", **open_loop}},
    }


def test_the_sweep_renders_a_valid_rayjob_with_every_key_from_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_API_KEY", SECRET_VALUE)
    experiment = parse_experiment(_config())
    doc = render_rayjob(experiment, "fleet", image="registry.example/embedswap-ray:0.9", claim="embedswap-data",
                        namespace="bench", cpus_per_pod=4)
    assert validate_rayjob(doc) == []
    assert doc["spec"]["entrypoint"] == "embedswap run /experiments/fleet --steps 01,02 --no-report"
    workers = doc["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert workers["replicas"] == 3 and workers["rayStartParams"] == {"num-cpus": "4"}  # 12 senders, 4 per pod
    assert doc["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0"}
    env = workers["template"]["spec"]["containers"][0]["env"]
    assert secret_env(experiment) == ["FLEET_API_KEY", "HF_TOKEN"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "valueFrom" in e}
    assert refs["FLEET_API_KEY"] == {"name": "embedswap-sweep-fleet-secrets", "key": "FLEET_API_KEY", "optional": True}
    text = rayjob_yaml(doc, create_secret_command(experiment, "fleet", "bench"))
    assert SECRET_VALUE not in text
    assert '--from-literal=FLEET_API_KEY="$FLEET_API_KEY"' in text.splitlines()[2]
    assert validate_rayjob(yaml.safe_load(text)) == []


def test_the_validator_finds_what_a_hand_edit_breaks() -> None:
    good = render_rayjob(parse_experiment(_config()), "fleet", image="img:1", claim="data")
    cases = {
        "looks secret": lambda d: d["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
        ["env"].append({"name": "FLEET_API_KEY", "value": SECRET_VALUE}),
        "must be a string": lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["rayStartParams"]
        .update({"num-cpus": 4}),
        "image: missing": lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
        ["containers"][0].pop("image"),
        "integer >= 1": lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update({"replicas": 0}),
        "DNS-1123": lambda d: d["metadata"].update({"name": "Embedswap_Sweep"}),
        "not a volume": lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
        .update({"volumes": []}),
        "embedswap run": lambda d: d["spec"].update({"entrypoint": "python sweep.py"}),
        "apiVersion": lambda d: d.update({"apiVersion": "ray.io/v1alpha1"}),
    }
    for expected, edit in cases.items():
        doc = copy.deepcopy(good)
        edit(doc)
        problems = validate_rayjob(doc)
        assert any(expected in p for p in problems), (expected, problems)


def test_a_sweep_that_would_start_its_own_ray_is_not_rendered() -> None:
    with pytest.raises(ValueError, match="ray_address must be 'auto'"):
        render_rayjob(parse_experiment(_config(ray_address=None)), "fleet", image="img:1", claim="data")


def test_embedswap_rayjob_writes_the_manifest_beside_the_experiment(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "experiments" / "fleet"
    folder.mkdir(parents=True)
    (folder / "experiment.yaml").write_text(yaml.safe_dump(_config()), encoding="utf-8")
    assert main(["rayjob", str(folder), "--image", "img:1", "--claim", "data", "--namespace", "bench"]) == 0
    written = folder / "rayjob.yaml"
    assert capsys.readouterr().out.strip() == str(written)
    assert validate_rayjob(yaml.safe_load(written.read_text(encoding="utf-8"))) == []
    (folder / "experiment.yaml").write_text(yaml.safe_dump(_config(ray_address="ray://head:10001")),
                                            encoding="utf-8")
    assert main(["rayjob", str(folder), "--image", "img:1", "--claim", "data"]) == 2
    assert "ray_address must be 'auto'" in capsys.readouterr().err
