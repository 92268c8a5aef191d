"""No crash from one figure: mismatched shapes, empty answers and NaNs become verdicts with reason codes, and a
run that asked no server for document vectors has nothing to gate (the parity gate neither passes nor fails)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from synthetic_experiment import write_experiment

from embedswap import steps
from embedswap.reasons import REASONS
from embedswap.summary.finite import null_non_finite
from embedswap.stats.vectors import compare

LANGS = ["ko", "ko", "en", "en"]
IDS = ["a", "b", "c", "d"]


def unit(n: int, dim: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_mismatched_shapes_are_a_verdict_not_an_exception() -> None:
    out = compare(unit(4, 8), unit(4, 6), LANGS, IDS)
    assert out["measured"] is False and out["reason"]["code"] == "vector_shapes_differ"
    assert out["reason"]["params"] == {"a": [4, 8], "b": [4, 6]}
    assert compare(unit(4, 8), unit(3, 8), LANGS, IDS)["reason"]["code"] == "vector_shapes_differ"


def test_empty_answers_are_a_verdict() -> None:
    out = compare(np.zeros((0, 8)), np.zeros((0, 8)), [], [])
    assert out["measured"] is False and out["reason"]["code"] == "vectors_empty"


def test_nan_rows_are_counted_and_left_out_of_the_spreads() -> None:
    legacy = unit(4, 8)
    candidate = legacy.copy()
    candidate[1] = np.nan
    candidate[3] = 0.0  # a zero vector has no cosine either
    out = compare(legacy, candidate, LANGS, IDS)
    assert out["measured"] is True
    assert out["non_finite"]["n"] == 2 and out["non_finite"]["reason"]["code"] == "vectors_non_finite"
    assert math.isclose(out["cosine"]["min"], 1.0) and math.isclose(out["cosine"]["max"], 1.0)
    assert [d["cosine"] is None for d in out["per_document"]] == [False, True, False, True]
    assert [w["doc_id"] for w in out["worst"]] and {w["doc_id"] for w in out["worst"]} <= {"a", "c"}
    assert out["by_language"]["ko"]["n"] == 1 and out["by_language"]["en"]["n"] == 1
    _, bad = null_non_finite(out)
    assert bad == []  # nothing left that json.dumps(allow_nan=False) refuses
    json.dumps(out, allow_nan=False)


def test_all_nan_is_a_verdict() -> None:
    out = compare(unit(4, 8), np.full((4, 8), np.nan), LANGS, IDS)
    assert out["measured"] is False and out["reason"]["code"] == "vectors_non_finite"
    assert out["reason"]["params"] == {"n": 4, "total": 4}


def test_new_codes_are_in_every_catalogue() -> None:
    import tomllib

    import embedswap

    catalogues = Path(embedswap.__file__).parent / "report" / "catalogue"  # steps is a package now
    for code in ("parity_nothing_gated", "vectors_empty", "vectors_non_finite"):
        assert code in REASONS
        for lang in ("en", "ko", "ja", "zh"):
            table = tomllib.loads((catalogues / f"{lang}.toml").read_text(encoding="utf-8"))["reasons"]
            assert code in table, (lang, code)
            assert table[code] != REASONS[code] or lang == "en", (lang, code)  # a real translation


def _latency_only(tmp_path: Path, legacy_capture: list[str]) -> Path:
    config = {"name": "t", "date": "2026-12-01", "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801, "capture": legacy_capture},
                          "vllm": {"kind": "vllm", "port": 18802, "capture": ["latency"]}},
              "candidates": ["vllm"]}
    return write_experiment(tmp_path / "exp", config, [{"id": "x", "text": "hello"}])


def test_parity_gate_has_nothing_to_gate_in_a_latency_only_run(tmp_path: Path) -> None:
    ctx = steps.open_step(_latency_only(tmp_path, ["latency"]), create=True)
    result = steps.run_parity(ctx)  # no fp32 reference is computed: nobody asked for document vectors
    assert result["pass"] is None and result["rows"] == [] and result["not_run"] == []
    assert result["not_asked"] == ["legacy", "vllm"] and result["reason"]["code"] == "parity_nothing_gated"
    assert not ctx.attempt.has("reference/doc_vectors.npy")
    assert ctx.attempt.step_status("parity") == "skipped"
    summary = ctx.summary()
    assert summary.parity.measured is False and summary.parity.passed is None


def test_parity_gate_fails_when_an_asked_target_has_no_vectors(tmp_path: Path) -> None:
    """The legacy target was asked for document vectors (``workload`` captured) and has none: that is a failure,
    not "nothing to gate"; the latency-only candidate is listed as not asked."""

    ctx = steps.open_step(_latency_only(tmp_path, ["workload", "latency"]), create=True)
    ctx.attempt.write_array("reference/doc_vectors.npy", unit(1, 384))
    result = steps.run_parity(ctx)
    assert result["pass"] is False and [m["backend"] for m in result["not_run"]] == ["legacy"]
    assert result["not_asked"] == ["vllm"]
    assert ctx.attempt.step_status("parity") == "failed"
