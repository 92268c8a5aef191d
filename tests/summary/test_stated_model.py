"""The model a server states, read where its API shape states it (issue 64, point 3): TEI's ``/info``, Ollama's
``/api/tags``, OpenAI's ``/v1/models``; a candidate whose model was neither stated nor configured is never named with
the experiment's model (the legacy server's): the summary stores that it was not stated, and the post, the report,
the diagnosis and step 05 say so in every language."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakeservers import Behaviour, serve
from synthetic_experiment import write_experiment

from embedswap import steps
from embedswap.measure.identity import server_identity
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.summary.sections.models import model_change
from embedswap.wire.client import EmbeddingClient
from typed_summary import as_typed

LANGS = ["ko"] * 6 + ["en"] * 4
E5 = "intfloat/multilingual-e5-small"


@pytest.mark.parametrize("shape, route", [("tei", "/health"), ("ollama", "/api/tags"), ("openai", "/v1/models")])
def test_each_shape_s_stated_model_is_read_on_its_own_route(shape: str, route: str) -> None:
    behaviour = Behaviour(shape=shape, model=E5)
    with serve(behaviour) as port, EmbeddingClient(f"http://127.0.0.1:{port}", "minilm", timeout_s=5,
                                                   api_shape=shape, models_path=route) as client:
        found = server_identity(client, "hello")
    # the fake's OpenAI models route lists "embedder"; its answers echo the model it was built to echo
    assert found["served_models"] == (["embedder"] if shape == "openai" else [E5]), found
    quiet = Behaviour(shape=shape, states_model=False)
    with serve(quiet) as port, EmbeddingClient(f"http://127.0.0.1:{port}", "minilm", timeout_s=5,
                                               api_shape=shape, models_path=route) as client:
        unsaid = server_identity(client, "hello")
    if shape != "openai":
        assert unsaid["served_models"] is None, unsaid


def _ctx(tmp_path: Path, **candidate: object) -> steps.StepContext:
    config = {"name": "t", "date": "2026-12-06", "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801},
                          "tei": {"kind": "external", "url": "http://127.0.0.1:18803", "api_shape": "tei",
                                  **candidate}},
              "candidates": ["tei"], "parity": {"sample": 10, "engine_witness": False}}
    documents = [{"id": f"d{i}", "lang": lang, "text": f"text {i}"} for i, lang in enumerate(LANGS)]
    ctx = steps.open_step(write_experiment(tmp_path / "exp", config, documents), create=True)
    rng = np.random.default_rng(0)
    for name, seed in (("legacy", 0), ("tei", 7)):  # unrelated unit vectors: another model by the cosine
        v = np.random.default_rng(seed).normal(size=(len(LANGS), 384))
        ctx.attempt.write_array(f"{name}/doc_vectors.npy", (v / np.linalg.norm(v, axis=1, keepdims=True))[None])
    ctx.attempt.write_array("reference/doc_vectors.npy", rng.normal(size=(len(LANGS), 384)).astype(np.float32))
    return ctx


def test_a_stated_model_is_the_candidate_s_name_and_a_configured_one_wins(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path / "stated")
    ctx.attempt.write_json("tei/target.json", {"identity": {"routes": {"/info": {"model_id": E5}}}})
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "tei")
    assert (found.code, found.candidate_model, found.candidate_model_source) == (
        "another_model", "multilingual-e5-small", "stated")
    configured = _ctx(tmp_path / "configured", model="e5-small")
    found = model_change(configured.experiment, configured.attempt, configured.workload, "tei")
    assert (found.candidate_model, found.candidate_model_source) == ("e5-small", "configured")


def test_a_model_neither_stated_nor_configured_is_never_named_with_the_experiment_s(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "tei")
    assert (found.code, found.candidate_model, found.candidate_model_source) == ("another_model", None, "not_stated")
    result = steps.run_parity(ctx)
    assert result["other_model"][0]["reason"]["code"] == "parity_no_local_model_unstated"
    summary = ctx.summary()
    assert summary.decisions.diagnosis["tei"].code == "diagnosis_another_model_unstated"
    for lang in ("ko", "en", "ja", "zh"):
        unstated = fill(catalogue(lang).terms["models"]["not_stated"], name="tei")
        post, report = render_post(as_typed(summary), lang), render_markdown(as_typed(summary), lang)
        assert unstated in post and unstated in report, lang
        # the experiment's model is the legacy server's, named once beside it in the conclusion, never as tei's
        conclusion = next(line for line in post.splitlines() if unstated in line)
        assert conclusion.count(ctx.experiment.model.path) == 1, (lang, conclusion)
    post = render_post(as_typed(summary), "en")
    assert ("`tei` serves another model (not stated by the server; `targets.tei.model` would name it) than the "
            f"legacy server (`{ctx.experiment.model.path}`)") in post
