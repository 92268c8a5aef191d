"""parity.sample / latency.sample in step 05 and the summary, the time tables (summary.timing -> report), and
`embedswap new --lean` (what `make demo` runs) -- issue 20."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from synthetic_experiment import write_experiment

from embedswap import steps
from embedswap.captures import new_attempt
from embedswap.config import load_experiment
from embedswap.report.markdown import render_markdown
from embedswap.scaffold import new_experiment
from embedswap.summary.timing import timing_section
from embedswap.summary.types_parity import ParitySample
from typed_summary import as_typed

LANGS = ["ko"] * 6 + ["en"] * 3 + ["ja"] * 1


def _experiment(tmp_path: Path, parity_sample: int, latency_sample: int | None = None) -> Path:
    documents = [{"id": f"d{i}", "lang": lang, "text": f"text {i}"} for i, lang in enumerate(LANGS)]
    config = {"name": "t", "date": "2026-12-02", "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801}, "vllm": {"kind": "vllm", "port": 18802}},
              "candidates": ["vllm"], "parity": {"sample": parity_sample, "engine_witness": False},
              "latency": {"sample": latency_sample}}
    return write_experiment(tmp_path / "exp", config, documents)


def _unit(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_the_parity_gate_runs_on_the_stratified_sample_and_the_summary_says_so(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path, parity_sample=5, latency_sample=4), create=True)
    corpus = _unit(len(LANGS))
    from embedswap.measure.workload import stratified_sample

    sample = stratified_sample(LANGS, 5)
    assert sorted({LANGS[i] for i in sample}) == ["en", "ja", "ko"]  # the one ja document is kept
    ctx.attempt.write_array("reference/doc_vectors.npy", corpus[sample])  # as if computed on the sample
    ctx.attempt.write_array("legacy/doc_vectors.npy", corpus[None])
    noisy = corpus.copy()
    noisy[[i for i in range(len(LANGS)) if i not in sample]] = _unit(len(LANGS) - 5, seed=9)  # outside the sample
    ctx.attempt.write_array("vllm/doc_vectors.npy", noisy[None])
    result = steps.run_parity(ctx)
    assert result["pass"] is True, result  # documents outside the sample are not gated
    assert result["sample"]["documents"] == 5 and result["sample"]["of"] == 10 and not result["sample"]["whole"]
    assert result["sample"]["languages"] == {LANGS[i]: sum(1 for j in sample if LANGS[j] == LANGS[i])
                                             for i in sample}
    summary = ctx.summary()  # typed, as the notebooks get it
    assert summary.workload.samples is not None
    assert summary.workload.samples.parity == ParitySample.model_validate(result["sample"])
    assert summary.workload.samples.latency.documents == 4
    for lang, words in (("en", "5 of the 10 documents"), ("ko", "문서 10개 중 5개"), ("ja", "文書10件のうち5件"),
                        ("zh", "10 个文档中的 5 个")):
        text = render_markdown(as_typed(summary), lang)
        assert words in text, lang


def test_timing_comes_from_recorded_seconds_only(tmp_path: Path) -> None:
    folder = _experiment(tmp_path, parity_sample=512)
    experiment = load_experiment(folder)
    attempt = new_attempt(folder)
    assert timing_section(experiment, attempt)["measured"] is False
    attempt.mark_step("capture:legacy", "complete")  # no seconds: left out, never estimated
    attempt.mark_step("notebook:01_legacy_capture", "complete", seconds=30.0)
    attempt.mark_step("notebook:05_parity", "failed", seconds=90.0)
    attempt.write_json("legacy/target.json", {"start_seconds": 4.2, "measured_seconds": 25.0,
                                              "part_seconds": {"workload": 3.5, "latency": 17.25}})
    timing = timing_section(experiment, attempt)
    assert [s["step"] for s in timing["steps"]] == ["notebook:01_legacy_capture", "notebook:05_parity"]
    assert timing["total_seconds"] == 120.0 and timing["steps"][1]["share"] == 0.75
    assert timing["servers"]["legacy"]["parts"] == {"workload": 3.5, "queries": None, "probes": None,
                                                    "latency": 17.25}
    assert "vllm" not in timing["servers"]


def test_the_report_shows_both_time_tables_in_every_language(tmp_path: Path) -> None:
    folder = _experiment(tmp_path, parity_sample=512)
    ctx = steps.open_step(folder, create=True)
    ctx.attempt.mark_step("notebook:01_legacy_capture", "complete", seconds=31.5)
    ctx.attempt.write_json("legacy/target.json", {"start_seconds": 4.2, "measured_seconds": 25.0,
                                                  "part_seconds": {"workload": 3.5, "latency": 17.4}})
    summary = ctx.summary()
    for lang in ("ko", "en", "ja", "zh"):
        text = render_markdown(as_typed(summary), lang)
        assert "| `notebook:01_legacy_capture` | complete | 31.5 | 100% |" in text, lang
        assert "| `legacy` | 4.2 | 3.5 | — | — | 17.4 | 25.0 |" in text, lang


def test_lean_experiment_has_the_three_servers_and_the_protocol_without_the_extras(tmp_path: Path) -> None:
    lean = load_experiment(new_experiment("demo", tmp_path / "experiments", lean=True))
    full = load_experiment(new_experiment("demo-full", tmp_path / "experiments"))
    assert lean.target_order() == ["legacy", "dynamo", "vllm"]
    assert lean.ablations == [] and lean.matryoshka is None
    # A-B-A: the legacy server is measured again after the candidates (the drift bound of every latency ratio)
    assert lean.sequencing.restore_legacy and lean.sequencing.restore_latency
    assert {b.kind for b in lean.parity.backends} == {"transformers"}  # no offline engine start
    assert {b.dtype for b in lean.parity.backends} == {"float16", "bfloat16"}
    # the article's protocol in both presets (`make demo` runs the full one; the e2e demo run sends fewer requests)
    for preset in (lean, full):
        latency = preset.latency
        assert (latency.sequential_requests, latency.concurrent_requests, latency.concurrency, latency.repeats) \
            == (30, 40, 4, 3)
    assert lean.workload.repeats == full.workload.repeats == 3
    assert lean.latency.sweep == [] and full.latency.sweep == [1, 2, 4, 8, 16]
    assert lean.parity.checks is not None and not lean.parity.checks.engine  # no offline engine for the matrix
    assert full.parity.checks is not None and full.parity.checks.engine
    assert full.ablations == ["legacy-nolock"] and full.matryoshka is not None
    assert {b.kind for b in full.parity.backends} == {"vllm-offline"}
