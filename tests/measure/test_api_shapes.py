"""Issue 16: any server's routes and API shapes. External targets at their own routes (no /v1 prefix, TEI's
/embed, Ollama's /api/embed, Cohere v2's /v2/embed), measured through the real flow against in-process fake
servers; probes a shape cannot express are 'not applicable', never failures; the config is strict."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from embedswap.wire.api_shapes import NotApplicable, translate
from embedswap.config import ConfigError, load_experiment
from embedswap.report.publish import render_report
from embedswap.pipeline.build import write_summary
from embedswap.targets import build_target
from embedswap.targets.base import TargetStartError
from fakeservers import Behaviour, serve
from realkit import make_experiment, measured_attempt, quick_host_calibration

PROBES = ["plain", "encoding_float", "token_ids", "instruction_field", "unknown_model", "dimensions_reduced",
          "input_type_query"]
SHAPES = {"cohere": "cohere-v2", "tei": "tei", "ollama": "ollama"}


def test_translate_says_each_field_in_the_shape_or_refuses() -> None:
    body = {"model": "m", "input": ["a"], "dimensions": 8}
    assert translate(body, "openai") == body
    assert translate(body, "cohere-v2") == {"model": "m", "texts": ["a"], "output_dimension": 8,
                                            "embedding_types": ["float"]}
    assert translate(body, "tei", "m") == {"inputs": ["a"], "dimensions": 8}
    assert translate(body, "ollama") == {"model": "m", "input": ["a"], "dimensions": 8}
    assert translate({"input": ["q"], "input_type": "query"}, "cohere-v2")["input_type"] == "search_query"
    assert translate({"input": ["q"], "input_type": "query"}, "tei") == {"inputs": ["q"], "prompt_name": "query"}
    assert translate({"input": 12345}, "tei") == {"inputs": 12345}  # a wrong type stays the same question
    for shape, request, field in [("ollama", {"input": [[101, 102]]}, "token ids"),
                                  ("cohere-v2", {"input": [1, 2, 3]}, "token ids"),
                                  ("tei", {"input": ["a"], "encoding_format": "float"}, "`encoding_format`"),
                                  ("tei", {"model": "other", "input": ["a"]}, "`model`"),
                                  ("cohere-v2", {"input": ["a"], "instruction": "x"}, "`instruction`"),
                                  ("ollama", {"input": ["a"], "input_type": "query"}, "`input_type`")]:
        with pytest.raises(NotApplicable) as caught:
            translate(request, shape, "m")
        assert caught.value.field == field and caught.value.shape == shape


@pytest.fixture(scope="module")
def shapes_flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], Any, str]]:
    root = tmp_path_factory.mktemp("shapes")
    behaviours = {"legacy": Behaviour(), "root": Behaviour(prefix=""),
                  **{name: Behaviour(shape=shape) for name, shape in SHAPES.items()}}
    with ExitStack() as stack:
        stack.enter_context(quick_host_calibration())  # six latency phases; this file reads no host reading
        ports = {name: stack.enter_context(serve(b)) for name, b in behaviours.items()}

        def target(name: str, **extra: Any) -> dict[str, Any]:
            return {"kind": "external", "url": f"http://127.0.0.1:{ports[name]}", **extra}

        candidates = {"root": target("root", embeddings_path="/embeddings", health_path="/models"),
                      **{name: target(name, api_shape=shape) for name, shape in SHAPES.items()}}
        candidates["ollama"]["health_check"] = False  # no health route asked: taken as up
        folder = make_experiment(root, "shapes", target("legacy"), candidates, probes=PROBES)
        attempt, summary = measured_attempt(folder)
        write_summary(summary, attempt)
        written = render_report(folder, attempt.name)
        yield summary, attempt, written["report.en.md"].read_text(encoding="utf-8"), behaviours


def _verdicts(summary: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    return {row["probe"]: row["verdicts"][name] for row in summary["contract"]}


def test_each_shape_is_reached_at_its_own_route(shapes_flow: Any) -> None:
    summary, attempt, _, behaviours = shapes_flow
    routes = {"root": "/embeddings", "cohere": "/v2/embed", "tei": "/embed", "ollama": "/api/embed"}
    for name, route in routes.items():
        posts = {path for method, path, _ in behaviours[name].requests if method == "POST"}
        assert posts == {route}, (name, posts)
        assert {r["status"] for r in attempt.read_jsonl(f"{name}/workload_requests.jsonl")} == {200}
        stats = attempt.read_json(f"{name}/latency_stats.json")  # the load harness speaks the shape too
        assert stats["sequential"]["errors"] == 0 and stats["concurrent"]["errors"] == 0
    assert not any(method == "GET" for method, _, _ in behaviours["ollama"].requests)  # health_check: false
    assert ("GET", "/models", None) in behaviours["root"].requests
    # the same vectors in every shape: the workload compares at cosine 1, lengths equal
    for name in routes:
        comparison = summary["vectors"]["comparisons"][name]
        assert comparison["cosine"]["min"] == pytest.approx(1.0, abs=1e-9)
        assert comparison["norm_ratio"]["differs"] is False


def test_probes_a_shape_cannot_express_are_not_applicable(shapes_flow: Any) -> None:
    summary, _, report, _ = shapes_flow
    expected_na = {"cohere": {"token_ids", "instruction_field"},
                   "tei": {"encoding_float", "instruction_field", "unknown_model"},
                   "ollama": {"encoding_float", "token_ids", "instruction_field", "input_type_query"},
                   "root": set()}
    for name, na in expected_na.items():
        verdicts = _verdicts(summary, name)
        assert {p for p, v in verdicts.items() if v["verdict"] == "not-applicable"} == na, name
        for probe in na:
            assert verdicts[probe]["detail_reason"]["code"] == "detail_not_applicable"
        others = {p: v["verdict"] for p, v in verdicts.items() if p not in na}
        # the same answers; TEI's carry no usage, which its shape cannot carry: not a difference per probe, the
        # verdict names it (``shape``) and the client changes state it once (issue 64)
        assert set(others.values()) <= {"same"}, (name, others)
        if name == "tei":
            assert all(verdicts[p].get("shape") == ["usage"] for p in others), verdicts
    changes = {c["rule"] for c in summary["decisions"]["client_changes"]}
    assert "review" not in changes and "send_text" not in changes  # not applicable is not a finding
    assert "shape_usage" in changes
    assert "not applicable: the ollama API cannot express token ids" in report


def _config(tmp_path: Path, **external: Any) -> Path:
    folder = make_experiment(tmp_path, "strict", {"kind": "external", "url": "http://127.0.0.1:1"},
                             {"cand": {"kind": "external", "url": "http://127.0.0.1:1", **external}})
    return folder


@pytest.mark.parametrize(("external", "key", "words"), [
    ({"api_shape": "grpc"}, "targets.cand.api_shape", "openai"),
    ({"embeddings_path": "embed"}, "targets.cand.embeddings_path", "starting with '/'"),
    ({"health_path": "http://x/health"}, "targets.cand.health_path", "URL path"),
    ({"health_path": "/health", "health_check": False}, "targets.cand", "health_check"),
    ({"embedings_path": "/embed"}, "targets.cand.embedings_path", "embeddings_path"),
])
def test_route_and_shape_config_is_strict(tmp_path: Path, external: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_experiment(_config(tmp_path, **external))
    assert key in str(caught.value) and words in str(caught.value)


def test_a_health_route_that_does_not_exist_fails_at_once(tmp_path: Path) -> None:
    with serve(Behaviour(prefix="")) as port:
        folder = make_experiment(tmp_path, "nohealth", {"kind": "external", "url": f"http://127.0.0.1:{port}/v1"},
                                 {"cand": {"kind": "external", "url": f"http://127.0.0.1:{port}/v1",
                                           "startup_timeout_s": 300}})
        target = build_target(load_experiment(folder), "cand", tmp_path / "logs")
        with pytest.raises(TargetStartError, match=r"answered 404: set targets\.cand\.health_path"):
            target.start()
