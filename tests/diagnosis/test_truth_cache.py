"""The diagnosis' truth pass through the reference cache (diagnosis.truth_cache, issue 61): a second diagnosis of
the same inputs reads the model's own vectors and loads no model; anything the vectors depend on misses; a damaged
entry is recomputed; ``off`` computes; a server that does not reproduce the truth is diagnosed with the model."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from embedswap.diagnosis.hypotheses import Diagnoser
from embedswap.parity import reference_cache

TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!",
         "the quick brown fox", "pooling decides the vector"]
MANY = [f"text number {i} with {'some ' * (i % 7)}words about servers" for i in range(40)]  # probed (> 2 * 16)
READ = "read from the reference cache"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(reference_cache.SWITCH, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def model(tiny_zoo: dict[str, Path], tmp_path: Path) -> Path:
    """A copy of a tiny model of this test's own (one test changes a file of it)."""
    return Path(shutil.copytree(tiny_zoo["tiny-bert-cls"], tmp_path / "model"))


def no_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("embedswap.legacy.embedder.Embedder", refuse)


@pytest.mark.parametrize("texts", [TEXTS, MANY], ids=["few", "probed"])
def test_a_second_diagnosis_reads_the_truth_and_loads_no_model(cache: Path, model: Path, texts: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = Diagnoser(model, texts, batches=[(0, 4), (4, len(texts))])
    served = first.truth_vectors().copy()
    found = first.diagnose(served, "server")
    assert first.cache.record()["computed"] == "in this attempt" and first.cache.record()["model_loaded"]
    no_model_load(monkeypatch)
    second = Diagnoser(model, texts, batches=[(0, 4), (4, len(texts))])
    assert second.diagnose(served, "server") == found and found["cause"] is None
    record = second.cache.record()
    assert record["computed"] == READ and record["cache_key"] == first.cache.record()["cache_key"]
    assert record["model_loaded"] is False and second.passes == 0
    np.testing.assert_array_equal(second.truth_vectors(), served)


def _texts(d: dict[str, Any]) -> None:
    d["texts"] = [*TEXTS[:-1], TEXTS[-1] + "."]


def _batches(d: dict[str, Any]) -> None:
    d["batches"] = [(0, 3), (3, 6)]


def _prompt(d: dict[str, Any]) -> None:
    d["expected_prompt"] = "query: "  # the queries' truth: the model with its query prompt


def _model_file(d: dict[str, Any]) -> None:
    config = Path(d["model"]) / "config.json"
    config.write_text(config.read_text() + "\n")


def _code(d: dict[str, Any]) -> None:
    d["monkeypatch"].setattr(reference_cache, "code_digest", lambda files: "another diagnosis")


@pytest.mark.parametrize("change", [_texts, _batches, _prompt, _model_file, _code],
                         ids=["text", "batches", "prompt", "model file", "code"])
def test_what_the_truth_depends_on_misses(cache: Path, model: Path, change: Callable[[dict[str, Any]], None],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    Diagnoser(model, TEXTS, batches=[(0, 4), (4, 6)]).truth_vectors()
    assert Diagnoser(model, TEXTS, batches=[(0, 4), (4, 6)]).cache.cached() is not None  # the same inputs hit
    inputs: dict[str, Any] = {"model": model, "texts": list(TEXTS), "batches": [(0, 4), (4, 6)],
                              "expected_prompt": None, "monkeypatch": monkeypatch}
    change(inputs)
    again = Diagnoser(inputs["model"], inputs["texts"], batches=inputs["batches"],
                      expected_prompt=inputs["expected_prompt"])
    assert again.cache.cached() is None
    assert again.cache.record() == {"computed": "in this attempt", "cache_key": again.cache.origin["cache_key"],
                                    "model_loaded": False}


def test_a_damaged_entry_is_recomputed_and_replaced(cache: Path, model: Path) -> None:
    first = Diagnoser(model, TEXTS)
    truth = first.truth_vectors().copy()
    entry = reference_cache.entry_path(cache, first.cache.origin["cache_key"])
    entry.write_bytes(entry.read_bytes()[:100])  # a truncated file
    second = Diagnoser(model, TEXTS)
    np.testing.assert_array_equal(second.truth_vectors(), truth)
    assert second.cache.record()["cache_entry_recomputed"].startswith("unreadable")
    assert second.cache.record()["model_loaded"]
    assert Diagnoser(model, TEXTS).cache.record() == {"computed": "not needed", "model_loaded": False}
    third = Diagnoser(model, TEXTS)
    np.testing.assert_array_equal(third.truth_vectors(), truth)
    assert third.cache.record()["computed"] == READ  # the entry was written again


def test_off_computes(model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(reference_cache.SWITCH, str(tmp_path / "cache"))
    Diagnoser(model, TEXTS).truth_vectors()
    monkeypatch.setenv(reference_cache.SWITCH, "off")
    found = Diagnoser(model, TEXTS)
    found.truth_vectors()
    assert found.cache.record() == {"computed": "in this attempt", "cache_key": None,
                                    "not_cached": "the reference cache is off", "model_loaded": True}


@pytest.mark.parametrize("texts", [TEXTS, MANY], ids=["few", "probed"])
def test_a_server_that_differs_is_diagnosed_with_the_model(cache: Path, model: Path, texts: list[str]) -> None:
    first = Diagnoser(model, texts)
    first._own_pass()
    served = first.candidates[next(h for h in first.candidates if h.pooling == "mean" and h.normalize)]
    assert first.diagnose(served, "vllm")["cause"] == "diagnosis_pooling"
    second = Diagnoser(model, texts)
    assert second.cache.cached() is not None  # the truth is known; it does not reproduce this server
    assert second.diagnose(served, "vllm")["cause"] == "diagnosis_pooling"
    assert second.embedder.loaded


def test_the_query_diagnosis_reads_its_truth_and_records_where_it_came_from(cache: Path, model: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 03's queries (the model with its query prompt): the second attempt's truth is read, no model loaded, and
    ``queries.truth`` of captures/diagnosis/vectors.json says so."""
    from types import SimpleNamespace

    from embedswap.captures import new_attempt
    from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
    from embedswap.diagnosis import step

    experiment = SimpleNamespace(
        legacy="legacy", candidates=["vllm"], target_order=lambda: ["legacy", "vllm"],
        targets={"legacy": SimpleNamespace(model=None, kind="legacy"),
                 "vllm": SimpleNamespace(model=None, kind="vllm")},
        model=SimpleNamespace(path=str(model), query_prompt_template=DEFAULT_QUERY_TEMPLATE,
                              query_task=DEFAULT_QUERY_TASK, max_input_tokens=None, served_name="tiny"))
    workload = SimpleNamespace(queries=[SimpleNamespace(text=t) for t in TEXTS])
    prompt = step.query_prompt(experiment)  # type: ignore[arg-type]
    served = Diagnoser(model, TEXTS, expected_prompt=prompt).truth_vectors()  # a server applying the prompt
    first, second = new_attempt(tmp_path / "one"), new_attempt(tmp_path / "two")
    for attempt in (first, second):
        attempt.write_array(f"legacy/{step.QUERY_FILE}", served)
        attempt.write_array(f"vllm/{step.QUERY_FILE}", served)
    monkeypatch.setattr(step, "_CACHE", {})
    found = step.diagnose_queries(experiment, first, workload, 0.999)  # type: ignore[arg-type]
    assert found["by_target"]["legacy"]["cause"] is None and found["truth"]["computed"] == READ
    no_model_load(monkeypatch)
    again = step.diagnose_queries(experiment, second, workload, 0.999)  # type: ignore[arg-type]
    assert again["by_target"] == found["by_target"]
    assert again["truth"]["computed"] == READ and again["truth"]["model_loaded"] is False
