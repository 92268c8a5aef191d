"""A shape without ``usage`` (TEI) is one client change, not a difference on every probe (issue 64, point 1 in its
small form): the per-probe comparison leaves the usage the shape cannot carry uncompared (``shape``), the count of
differing requests counts what remains, and the to-do says "count tokens client-side" once, naming the shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
from synthetic_experiment import write_experiment

from embedswap import steps
from embedswap.answers.classify import classify
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.format import code
from embedswap.report.post import render_post
from embedswap.wire.api_shapes import ANSWER_LACKS
from embedswap.wire.client import parse_response
from typed_summary import as_typed

V = [0.6, 0.8, 0.0]


def _openai(vector: list[float], tokens: int) -> dict[str, Any]:
    body = {"data": [{"index": 0, "embedding": vector}], "model": "minilm",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return {**parse_response(httpx.Response(200, json=body), 1.0).record(), "vector": vector}


def _tei(vector: list[float]) -> dict[str, Any]:
    return {**parse_response(httpx.Response(200, json=[vector]), 1.0).record(), "vector": vector}


def test_usage_the_shape_cannot_carry_is_no_difference_of_the_probe() -> None:
    legacy, candidate = _openai(V, 7), _tei(V)
    assert candidate["prompt_tokens"] is None
    plain = classify(legacy, candidate)
    assert plain.verdict == "metadata-difference" and plain.aspects == ["usage"]  # without the shape: a difference
    shaped = classify(legacy, candidate, shape_lacks=ANSWER_LACKS["tei"])
    assert (shaped.verdict, shaped.aspects, shaped.shape) == ("same", [], ["usage"])
    # what lies beyond the shape is still a difference
    other = classify(legacy, _tei([0.0, 0.0, 1.0]), shape_lacks=ANSWER_LACKS["tei"])
    assert other.verdict == "silent-divergence" and other.aspects == ["direction"] and other.shape == ["usage"]
    # a shape that carries usage is compared as before
    assert ANSWER_LACKS.get("openai", frozenset()) == frozenset()


PROBES = ("plain", "batch8_member", "whitespace_padded", "unicode_mixed", "same_text_twice")


def _tei_step(tmp_path: Path) -> steps.StepContext:
    """A step over an experiment whose candidate ``tei`` speaks TEI's shape to an OpenAI-shaped legacy server."""
    config = {"name": "t", "date": "2026-12-06", "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801},
                          "tei": {"kind": "external", "url": "http://127.0.0.1:18803", "api_shape": "tei"}},
              "candidates": ["tei"]}
    return steps.open_step(write_experiment(tmp_path / "exp", config, [{"id": "d0", "lang": "en", "text": "a"}]),
                           create=True)


def test_the_shape_is_one_client_change_and_no_probe_differs_by_it(tmp_path: Path) -> None:
    ctx = _tei_step(tmp_path)
    vectors = np.eye(3)
    legacy = [{"probe": p, "sent": {"input": ["a"]}, **_openai(list(vectors[i % 3]), 5 + i)}
              for i, p in enumerate(PROBES)]
    candidate = [{"probe": p, "sent": {"inputs": ["a"]}, **_tei(list(vectors[i % 3]))} for i, p in enumerate(PROBES)]
    candidate[-1] = {**candidate[-1], **_tei(list(vectors[0] * 0.5 + vectors[1]))}  # one real difference
    ctx.attempt.write_jsonl("legacy/probes.jsonl", legacy)
    ctx.attempt.write_jsonl("tei/probes.jsonl", candidate)
    summary = ctx.summary()
    readings = {row.probe: row.verdict_for("tei") for row in summary.contract}
    assert [p for p, r in readings.items() if r.verdict != "same"] == ["same_text_twice"]
    assert all(r.shape == ["usage"] and "usage" not in r.aspects for r in readings.values())
    rules = [c.rule for c in summary.decisions.client_changes]
    assert rules.count("shape_usage") == 1 and "count_tokens" not in rules, rules
    change = next(c for c in summary.decisions.client_changes if c.rule == "shape_usage")
    assert change.params == {"shape": "tei"} and {h.probe for h in change.probes} == set(PROBES)
    conclusion = summary.decisions.post.conclusion("tei")
    assert (conclusion.differ, conclusion.api_shape, conclusion.code) == (1, "tei", "client_changes")
    for lang in ("ko", "en", "ja", "zh"):
        said = fill(catalogue(lang).terms["changes"]["shape_usage"], shape=code("tei"))
        assert render_post(as_typed(summary), lang).count(said) == 1, lang


def test_alike_answers_in_another_shape_are_no_drop_in(tmp_path: Path) -> None:
    """Every answer alike beyond the shape: the post says the address alone does not do, names the shape once, and
    its count of differing requests is 0 (issue 64)."""
    ctx = _tei_step(tmp_path)
    ctx.attempt.write_jsonl("legacy/probes.jsonl", [{"probe": p, "sent": {"input": ["a"]}, **_openai(V, 5)}
                                                    for p in PROBES])
    ctx.attempt.write_jsonl("tei/probes.jsonl", [{"probe": p, "sent": {"inputs": ["a"]}, **_tei(V)} for p in PROBES])
    summary = ctx.summary()
    conclusion = summary.decisions.post.conclusion("tei")
    assert (conclusion.differ, conclusion.code, conclusion.api_shape) == (0, "client_changes", "tei")
    post = render_post(as_typed(summary), "en")
    assert "Swapping only the address works" not in post and "the address alone can be swapped" not in post
    assert post.count("Swapping only the address does not work: `tei` (`tei`) speaks another API shape") == 1
    for lang in ("ko", "ja", "zh"):
        assert "`tei` (`tei`)" in render_post(as_typed(summary), lang), lang
