"""Issue 54, an engine upgrade run the way a user checks one: Infinity 0.0.77 (requirements/infinity-previous.lock,
`make infinity-previous`) as the legacy server and Infinity 0.0.78 (requirements/infinity.lock, `make infinity`) as
the candidate, both external targets serving the kit's embedded MiniLM offline with the same command line, through
`embedswap run --steps 01,02,03`; then a guard made from the older server's captures checks the newer server. The
newer server is the worker's shared one (``infinity_minilm`` of tests/e2e/conftest.py, also test_aa_infinity_e2e.py's:
the same command line); the older one is started here.

Why this pair (docs/upgrade-pair.md): the two releases share every dependency (0.0.77 is installed alone, --no-deps,
in a venv layered over 0.0.78's; `pip check` passes), so the second release costs ~10 s to install and each server
~10 s to start, where a vLLM CPU pair costs a 133 MB wheel and ~50-100 s a start. What changed between them for a
torch-engine text model is nothing a client can see: their answers to every request of the catalogue are the same
(statuses, bodies, document vectors byte for byte); the versions differ only where Infinity states its version, its
OpenAPI document (`/openapi.json` `info.version`). One thing that did change is why both run with
`--no-bettertransformer`: without optimum installed (the lock has none), 0.0.77 fails at start with
`NameError: BetterTransformerManager` where 0.0.78 skips BetterTransformer; with the flag both load the model alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from embedswap.config import load_experiment
from embedswap.measure.contract import CATALOGUE
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path
from embedswap.shim.settings import ShimConfig
from embedswap.targets.base import ManagedProcess
from realkit import EMBEDSWAP, REPO, make_experiment, wait_no_processes
from ports import free_ports
from answering import infinity_env, wait_answering

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900), pytest.mark.xdist_group(name="infinity-0.0.78-minilm")]
# the group of the files sharing the Infinity 0.0.78 server (tests/e2e/conftest.py): one worker, one start

PYTHONS = {
    "v0077": Path(os.environ.get("EMBEDSWAP_INFINITY_PREVIOUS_PYTHON")
                  or REPO / ".venvs/infinity-previous/bin/python"),
    "v0078": Path(os.environ.get("EMBEDSWAP_INFINITY_PYTHON") or REPO / ".venvs/infinity/bin/python"),
}
VERSIONS = {"v0077": "0.0.77", "v0078": "0.0.78"}
LEGACY, CANDIDATE = "v0077", "v0078"
CAPTURE = ["workload", "probes"]
# the whole catalogue but `large_batch` (512 inputs to both servers, bare and through the shim: minutes of CPU here,
# and about batch limits, which the two releases share)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]
VECTOR_ASPECTS = ("contract", "dimensions", "direction", "length")
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1"}


def _infinity(python: Path, model: str, served: str, port: int, log: Path) -> ManagedProcess:
    command = [str(python), "-m", "infinity_emb.cli", "v2", "--model-id", model, "--served-model-name", served,
               "--host", "127.0.0.1", "--port", str(port), "--engine", "torch", "--device", "cpu",
               "--no-model-warmup", "--no-bettertransformer"]
    env = infinity_env()
    return ManagedProcess("infinity", command, env, log)


def _external(port: int) -> dict[str, Any]:
    return {"kind": "external", "url": f"http://127.0.0.1:{port}", "embeddings_path": "/embeddings",
            "health_path": "/models", "capture": CAPTURE, "startup_timeout_s": 120}


def _guard_check(guard: Path, url: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([EMBEDSWAP, "guard", "check", str(guard), "--url", url, "--json"], capture_output=True,
                          text=True, env=OFFLINE, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    for name, python in PYTHONS.items():
        assert python.exists(), (f"{python} is missing ({name}): `make infinity infinity-previous` builds both "
                                 "(make test does), or set EMBEDSWAP_INFINITY_PYTHON / EMBEDSWAP_INFINITY_PREVIOUS_PYTHON")
    root = tmp_path_factory.mktemp("upgrade")
    (legacy_port,) = free_ports(1)
    # the newer release is the shared server: its port is known once it answers (below); the older starts first, so
    # that the two start side by side when this file is the first of its group to run
    ports = {LEGACY: legacy_port, CANDIDATE: 1}
    folder = make_experiment(root, "upgrade", _external(ports[LEGACY]), {CANDIDATE: _external(ports[CANDIDATE])},
                             probes=PROBES)
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["targets"] = {LEGACY: config["targets"].pop("legacy"), **config["targets"]}
    config["legacy"] = LEGACY
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    served = load_experiment(folder).model.served_name
    model = resolve_model_path(EMBEDDED_DEFAULT)
    # the older release only: the newer is the shared `infinity_minilm`, started with the same command line
    servers = {name: (_infinity(PYTHONS[name], model, served, ports[name], root / f"{name}.log"),
                      f"http://127.0.0.1:{ports[name]}/models", root / f"{name}.log") for name in (LEGACY,)}
    began = time.monotonic()
    for server, _, _ in servers.values():
        server.start()
    try:
        newer = request.getfixturevalue("infinity_minilm")  # started (and waited for) here unless already up
        assert newer.served_name == served
        ports[CANDIDATE] = newer.port
        config["targets"][CANDIDATE] = _external(newer.port)
        path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        wait_answering(servers, 180)
        ready_s = time.monotonic() - began
        run = subprocess.run([EMBEDSWAP, "run", str(folder), "--steps", "01,02,03"], capture_output=True, text=True,
                             timeout=900, env=OFFLINE)
        run_s = time.monotonic() - began - ready_s
        guard = root / f"guard-{LEGACY}.json"
        made = subprocess.run([EMBEDSWAP, "guard", "init", str(folder), "--target", LEGACY, "--out", str(guard)],
                              capture_output=True, text=True, env=OFFLINE, timeout=300)
        # the newer server only: `tests/e2e/test_guard_e2e.py` shows a guard passing the server it was made from
        check = _guard_check(guard, f"http://127.0.0.1:{ports[CANDIDATE]}") if made.returncode == 0 else None
        guard_s = time.monotonic() - began - ready_s - run_s
    finally:
        for server, _, _ in servers.values():
            server.stop()
    assert wait_no_processes([ports[LEGACY]]) == []  # the shared newer server runs on: its fixture stops it
    attempts = list((folder / "attempts").iterdir())
    assert attempts, run.stdout[-3000:] + run.stderr[-3000:]
    summary_path = attempts[0] / "summary.json"
    assert summary_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    report = root / "reports" / folder.name / "report.en.md"
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    assert made.returncode == 0, made.stdout + made.stderr
    print(f"both Infinity releases ready in {ready_s:.1f} s; embedswap run 01-03 took {run_s:.1f} s; "
          f"guard init and check {guard_s:.1f} s")
    yield {"summary": json.loads(summary_path.read_text()), "report": report.read_text(encoding="utf-8"),
           "post": (root / "reports" / folder.name / "post.en.md").read_text(encoding="utf-8"),
           "attempt": attempts[0], "check": check}


def test_each_server_states_its_own_version(upgrade: dict[str, Any]) -> None:
    """What each server says about itself names its release (Infinity states it in its OpenAPI document only), and
    the setup names both versions as the servers state them."""
    targets, post, report = upgrade["summary"]["targets"], upgrade["post"], upgrade["report"]
    for name, version in VERSIONS.items():
        target = targets[name]
        assert target["identity"]["routes"]["/openapi.json"]["version"] == version, target["identity"]
        assert (target["version"], target["version_source"]) == (version, "server"), target
        assert target["statement"] == f"/openapi.json {version}"
    # everything else they say about themselves is the same (the model list, the echoed model, the headers)
    said = {name: {k: v for k, v in targets[name]["identity"].items() if k != "routes"} for name in VERSIONS}
    assert said[LEGACY] == said[CANDIDATE]
    for role, name in (("Legacy server", LEGACY), ("Candidate", CANDIDATE)):
        line = f"{role} `{name}`: {VERSIONS[name]}, as the server states it (`/openapi.json {VERSIONS[name]}`)"
        assert line in post, [ln for ln in post.splitlines() if name in ln]
    assert all(f"Version: {v}, as the server states it" in report for v in VERSIONS.values())


def test_the_vectors_are_byte_identical(upgrade: dict[str, Any]) -> None:
    vectors = upgrade["summary"]["vectors"]
    shas = {name: vectors["by_target"][name]["sha256"] for name in VERSIONS}
    assert shas[LEGACY] and shas[LEGACY] == shas[CANDIDATE], shas
    comparison = vectors["comparisons"][CANDIDATE]
    assert comparison["cosine"]["min"] >= 0.999999 and comparison["norm_ratio"]["differs"] is False


def test_every_request_is_answered_alike(upgrade: dict[str, Any]) -> None:
    """Both releases answer each probe with the same status; where one answers, the other answers the same."""
    summary = upgrade["summary"]
    for row in summary["contract"]:
        sides = row["by_target"]
        assert sides[LEGACY]["status"] == sides[CANDIDATE]["status"], (row["probe"], sides)
    verdicts = {row["probe"]: row["verdicts"][CANDIDATE]["verdict"] for row in summary["contract"]}
    assert {v for v in verdicts.values()} <= {"same", "not-applicable"}, verdicts


def test_the_conclusion_is_drop_in(upgrade: dict[str, Any]) -> None:
    conclusion = next(c for c in upgrade["summary"]["decisions"]["post"]["conclusions"] if c["name"] == CANDIDATE)
    assert conclusion["code"] == "drop_in", {k: v for k, v in conclusion.items() if k != "answers"}
    assert conclusion["differ"] == 0 and conclusion["compared"] > 0


def test_the_shim_is_a_pass_through_that_opens_nothing(upgrade: dict[str, Any]) -> None:
    shim = upgrade["summary"]["shim"]
    config = ShimConfig.from_dict(shim["config"][CANDIDATE])
    assert config.rewrites() == [], shim["config"][CANDIDATE]
    outcome = upgrade["summary"]["decisions"]["shim"][CANDIDATE]
    assert outcome["differ_before"] == outcome["differ_after"] == 0 and outcome["opened"] == [], outcome
    assert {row["verdicts"][CANDIDATE]["verdict"] for row in shim["rows"]} <= {"same", "not-applicable"}


def test_the_guard_of_the_old_release_names_the_version_change_of_the_new(upgrade: dict[str, Any]) -> None:
    code, result = upgrade["check"]
    print(result["summary"])
    aspects = {a["name"]: a for a in result["aspects"]}
    for name in VECTOR_ASPECTS:  # the answers and the vectors did not move
        assert aspects[name]["status"] == "pass", aspects[name]
    assert aspects["direction"]["cosine"] >= 0.999999
    identity = aspects["identity"]
    assert identity["status"] == "fail" and code == 1
    assert f"/openapi.json version: {VERSIONS[LEGACY]} -> {VERSIONS[CANDIDATE]}" in identity["detail"], identity
    assert "version" in result["summary"] and VERSIONS[CANDIDATE] in result["summary"], result["summary"]
