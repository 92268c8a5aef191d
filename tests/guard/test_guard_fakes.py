"""guard init / check against in-process fake servers: a guard made from a real capture (measure_target against a
fake server) passes against the same server and fails, naming the aspect, against a changed one; the file refuses
to load once edited; exit codes and outputs of the command."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml
from embedswap.captures import new_attempt
from embedswap.cli import main
from embedswap.config.experiment import load_experiment
from embedswap.guard.build import GuardBuildError, build_guard
from embedswap.guard.check import run_check
from embedswap.guard.guard_file import GuardFileError, load_guard, write_guard
from embedswap.measure.capture import measure_target
from embedswap.scaffold import new_experiment
from fakeservers import Behaviour, serve
from vector_proxy import vector_proxy

REPO = Path(__file__).resolve().parents[2]
PROBES = ["plain", "input_type_query", "dimensions_reduced", "batch8_member", "empty_string"]


def _captured(root: Path, legacy_port: int, port: int, shape: str = "openai") -> Path:
    """An experiment whose legacy and candidate are fake servers, captured for real (measure_target)."""
    folder = new_experiment(f"guarded-{shape}", root / "experiments", data_dir=REPO / "data")
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    capture = ["workload", "queries", "probes"]
    config["targets"] = {
        "legacy": {"kind": "external", "url": f"http://127.0.0.1:{legacy_port}/v1", "capture": capture},
        "cand": {"kind": "external", "url": f"http://127.0.0.1:{port}", "capture": capture, "api_shape": shape}}
    config["candidates"] = ["cand"]
    for key in ("ablations", "matryoshka"):
        config.pop(key, None)
    config["workload"]["repeats"] = 2
    config["contract"]["probes"] = PROBES
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    experiment = load_experiment(folder)
    attempt = new_attempt(folder)
    for name in ("legacy", "cand"):
        measure_target(experiment, folder, attempt, name, f"capture:{name}")
    return folder


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory):
    """The candidate stays up for the checks (yields its URL with the folder)."""
    with serve(Behaviour()) as legacy_port, serve(Behaviour()) as port:
        yield _captured(tmp_path_factory.mktemp("guard"), legacy_port, port), f"http://127.0.0.1:{port}"


def test_a_guard_of_another_api_shape_keeps_its_probes_and_checks_in_that_shape(tmp_path) -> None:
    with serve(Behaviour()) as legacy_port, serve(Behaviour(shape="tei")) as port:
        guard = build_guard(_captured(tmp_path, legacy_port, port, shape="tei"))
        assert guard.server.api_shape == "tei" and guard.server.embeddings_path == "/embed"
        assert {p.probe for p in guard.contract} >= {"plain", "dimensions_reduced"}
        result = run_check(guard, f"http://127.0.0.1:{port}")
    assert result.exit_code == 0, [a for a in result.aspects if a.status == "fail"]


def test_init_reads_the_captures_and_the_file_round_trips(captured, tmp_path) -> None:
    folder, _ = captured
    guard = build_guard(folder, documents=16, queries=6)
    kinds = [c.kind for c in guard.canaries]
    assert kinds.count("document") == 16 and kinds.count("query") == 6
    assert {c.lang for c in guard.canaries if c.kind == "document"} == {"en", "ko"}
    assert any(c.why == "longest" for c in guard.canaries)
    assert {p.probe for p in guard.contract} >= {"plain", "input_type_query", "dimensions_reduced"}
    assert next(p for p in guard.contract if p.probe == "dimensions_reduced").dim == 8
    assert guard.tolerances.direction.value == pytest.approx(1e-5)  # a deterministic server: the floor
    path = write_guard(guard, tmp_path / "g.json")
    again = load_guard(path)
    assert again.sha256 and np.array_equal(again.vectors()["canaries"], guard.vectors()["canaries"])
    assert again.vectors()["canaries"].dtype == np.float32


def test_an_edited_guard_file_does_not_load(captured, tmp_path) -> None:
    folder, _ = captured
    path = write_guard(build_guard(folder, documents=4, queries=2), tmp_path / "g.json")
    content = json.loads(path.read_text())
    content["tolerances"]["direction"]["value"] = 0.5
    path.write_text(json.dumps(content))
    with pytest.raises(GuardFileError, match="sha256 mismatch"):
        load_guard(path)
    assert main(["guard", "check", str(path), "--url", "http://127.0.0.1:9"]) == 2


def test_only_an_accepted_attempt_gives_a_guard(captured, tmp_path) -> None:
    import shutil

    folder, _ = captured
    with pytest.raises(GuardBuildError, match="not a target"):
        build_guard(folder, target="nope")
    copy = Path(shutil.copytree(folder, tmp_path / folder.name))
    (done,) = [p.name for p in (copy / "attempts").iterdir()]
    vectors = copy / "attempts" / done / "captures" / "cand" / "doc_vectors.npy"
    vectors.chmod(0o644)
    vectors.write_bytes(vectors.read_bytes()[:-4] + b"\0\0\0\0")  # one float changed by hand
    with pytest.raises(GuardBuildError, match="captures changed since they were written"):
        build_guard(copy, attempt_name=done)
    empty = new_attempt(copy)
    with pytest.raises(GuardBuildError, match="was not captured completely"):
        build_guard(copy, attempt_name=empty.name)


def test_the_same_server_passes(captured, tmp_path, capsys) -> None:
    folder, url = captured
    path = write_guard(build_guard(folder), tmp_path / "g.json")
    junit = tmp_path / "junit.xml"
    assert main(["guard", "check", str(path), "--url", url, "--junit", str(junit)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("pass: ") and "\n" not in line
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    assert {c.get("name") for c in suite.iter("testcase")} == {"contract", "dimensions", "direction", "length",
                                                               "identity", "latency"}


@pytest.mark.parametrize(("change", "aspect"), [
    (lambda v: [x * 1.5 for x in v], "length"),
    (lambda v: [v[0] + 0.3, *v[1:]], "direction"),
])
def test_a_changed_server_fails_naming_the_aspect(captured, tmp_path, capsys, change, aspect) -> None:
    folder, url = captured
    path = write_guard(build_guard(folder), tmp_path / "g.json")
    junit = tmp_path / "junit.xml"
    with vector_proxy(url, change) as proxied:
        assert main(["guard", "check", str(path), "--url", proxied, "--json", "--junit", str(junit)]) == 1
    result = json.loads(capsys.readouterr().out)
    failures = {case.get("name"): case.find("failure") for case in ET.parse(junit).getroot().iter("testcase")}
    assert failures[aspect] is not None and failures[aspect].get("message").startswith(f"{aspect}: worst canary ")
    assert result["result"] == "drift"
    assert result["summary"].startswith(f"drift: {aspect}: worst canary ")
    failed = [a for a in result["aspects"] if a["status"] == "fail"]
    assert failed[0]["name"] == aspect and failed[0]["worst"] and failed[0]["cosine"] is not None


def test_another_dimension_is_named(captured, tmp_path) -> None:
    folder, url = captured
    guard = build_guard(folder)
    with vector_proxy(url, lambda v: v[:8]) as proxied:
        result = run_check(guard, proxied)
    assert result.failed[0].name == "dimensions"
    assert result.failed[0].value == 8 and result.failed[0].tolerance == 16


def test_an_unreachable_server_is_could_not_tell(captured, tmp_path, capsys) -> None:
    folder, _ = captured
    path = write_guard(build_guard(folder, documents=4, queries=2), tmp_path / "g.json")
    assert main(["guard", "check", str(path), "--url", "http://127.0.0.1:9"]) == 3
    assert "could not tell" in (err := capsys.readouterr().err) and "no answer" in err


def test_a_server_that_says_try_later_is_could_not_tell_not_drift(captured, tmp_path, capsys) -> None:
    folder, url = captured
    path = write_guard(build_guard(folder, documents=4, queries=2), tmp_path / "g.json")
    junit = tmp_path / "junit.xml"
    with vector_proxy(url, refuse_with=503) as proxied:
        assert main(["guard", "check", str(path), "--url", proxied, "--json", "--junit", str(junit)]) == 3
    result = json.loads(capsys.readouterr().out)
    assert result["result"] == "could_not_tell" and result["summary"].startswith("could not tell: ")
    assert "503" in result["undecided"] and not [a for a in result["aspects"] if a["status"] == "fail"]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"


def test_a_server_that_names_itself_differently_is_an_identity_drift(captured, tmp_path, capsys) -> None:
    folder, url = captured
    guard = build_guard(folder)
    assert guard.server.identity is not None and guard.server.identity["served_models"]
    recorded = guard.server.identity

    def renamed(answer: dict) -> None:  # a tag moved to other weights: the server echoes another model
        answer["model"] = "minilm-retrained"
    path = write_guard(guard, tmp_path / "g.json")
    with vector_proxy(url, answer=renamed) as proxied:
        assert main(["guard", "check", str(path), "--url", proxied, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    (failed,) = [a for a in result["aspects"] if a["status"] == "fail"]
    assert failed["name"] == "identity" and "minilm-retrained" in failed["detail"], failed
    assert f"model: {recorded['model']} -> minilm-retrained" in failed["detail"]


def test_a_guard_file_without_an_identity_still_checks(captured, tmp_path) -> None:
    folder, url = captured
    guard = build_guard(folder)
    old = guard.model_copy(update={"server": guard.server.model_copy(update={"identity": None})})
    result = run_check(old, url)
    assert result.exit_code == 0
    (identity,) = [a for a in result.aspects if a.name == "identity"]
    assert identity.status in ("skipped", "warn"), identity  # the old warnings, never a drift


def test_a_non_finite_answer_fails_the_contract(captured) -> None:
    folder, url = captured
    guard = build_guard(folder, documents=8, queries=2)
    with vector_proxy(url, lambda v: [float("nan"), *v[1:]]) as proxied:
        result = run_check(guard, proxied)
    assert result.failed and result.failed[0].name == "contract"
    assert "non-finite" in result.failed[0].detail
