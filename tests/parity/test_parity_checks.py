"""Step 05's parity matrix (embedswap.parity.checks): the config key, the rows per check with a fake engine and the
real legacy padding (transformers on MiniLM), cold start from captures, the decisions, and the report section."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from typed_summary import decisions_of, summary_body

from embedswap.parity import checks as pc
from embedswap.analysis.parity_matrix import matrix_findings
from embedswap.config import ConfigError, ParityChecks, parse_experiment
from embedswap.models import EMBEDDED_DEFAULT
from embedswap.parity.backends import TransformersBackend
from embedswap.parity.vllm_configs import ConfigRun
from embedswap.report.markdown import render_markdown
from embedswap.report.format import esc
from embedswap.report.catalogue import LANGUAGES, fill
from embedswap.summary.model import validate_summary
from embedswap.analysis.upgrade import upgrade_summary
from typed_summary import as_typed

REPO = Path(__file__).resolve().parents[2]
TEXTS = [json.loads(line)["text"] for line in (REPO / "data" / "documents.jsonl").read_text().splitlines()[:40]]
CONFIG = {"name": "t", "date": "2026-12-01", "workload": {"documents": "d.jsonl"},
          "targets": {"legacy": {"kind": "legacy", "port": 18801}, "vllm": {"kind": "vllm", "port": 18802}},
          "candidates": ["vllm"]}


def _parity(checks: Any) -> Any:
    return parse_experiment({**CONFIG, "parity": {"checks": checks}}).parity.checks


def test_checks_key_is_strict_and_switchable() -> None:
    assert parse_experiment(CONFIG).parity.checks is None  # absent: the matrix is not run
    assert _parity(True) == ParityChecks() and _parity(False) is None
    assert _parity({"dtypes": ["bfloat16"]}).dtypes == ["bfloat16"]
    with pytest.raises(ConfigError, match=r"parity\.checks\.dtype'"):
        _parity({"dtype": ["float32"]})
    with pytest.raises(ConfigError, match=r"parity\.checks\.dtypes\.0"):
        _parity({"dtypes": ["int8"]})
    with pytest.raises(ConfigError, match=r"parity\.checks\.texts"):
        _parity({"texts": 0})


class _MemoBackend:
    """The fake engine's vectors, remembered per text across the module's tests (issue 61: each test loaded MiniLM
    and re-embedded the same texts). Exact: at batch size 1 a text's vector does not depend on its batch. ``embed``
    is an attribute a test may replace, as with the backend itself."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
        if missing:
            _VECTORS.update(zip(missing, self.inner.embed(missing)))
        return np.stack([_VECTORS[t] for t in texts]).astype(np.float32)


_VECTORS: dict[str, Any] = {}


@functools.cache
def _shared_backend() -> TransformersBackend:
    return TransformersBackend(EMBEDDED_DEFAULT, batch_size=1)


class FakeEngine:
    """run_vllm_configs stand-in: the exact fp32 transformers vectors, batch-independent (as vLLM measured), and the
    meta vLLM reports; ``chunked_ran`` is what vLLM says it ran when asked for chunked prefill. ``calls`` has one
    entry per configuration, ``processes`` the configurations' labels per engine process."""

    def __init__(self, fail: bool = False, chunked_ran: bool = True) -> None:
        self.fail, self.chunked_ran, self.calls, self.processes = fail, chunked_ran, [], []
        self.failing: set[str] = set()  # labels of configurations that fail alone
        self.joins: dict[str, tuple[str, ...]] = {}  # per label, the configurations it may run inside
        self.backend = _MemoBackend(_shared_backend())

    def __call__(self, model_path: str, configs: list, **_: Any) -> list:
        self.processes.append([c.label for c in configs])
        self.joins.update({c.label: c.join for c in configs})
        runs = []
        for config in configs:
            dtype, jobs, kwargs = config.dtype, config.jobs, dict(config.kwargs)
            assert kwargs.pop("seed") == 0
            self.calls.append((dtype, [size for _, size in jobs], kwargs, _.get("env")))
            if self.fail or config.label in self.failing:
                runs.append(ConfigRun(None, {}, f"{config.label}: vLLM exited with code 1"))
                continue
            chunked = kwargs.get("enable_chunked_prefill", False) and self.chunked_ran
            runs.append(ConfigRun([self.backend.embed(texts) for texts, _size in jobs], {
                "device": "cpu", "dtype": dtype, "chunked_prefill": chunked, "load_s": 1.0,
                "max_num_batched_tokens": kwargs.get("max_num_batched_tokens"),
                "max_model_len": kwargs.get("max_model_len")}))
        return runs


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    fake = FakeEngine()
    monkeypatch.setattr(pc, "run_vllm_configs", fake)
    monkeypatch.setattr(pc, "_engine_missing", lambda: None)
    return fake


def _rows(matrix: dict) -> dict[tuple[str, str, str], dict]:
    return {(r["check"], r["backend"], r["setting"].split(",")[0]): r for r in matrix["rows"]}


def test_matrix_rows_for_an_encoder_model(engine: FakeEngine) -> None:
    matrix = pc.run_matrix(ParityChecks(texts=8), EMBEDDED_DEFAULT, TEXTS, 0.999, [])
    rows = _rows(matrix)
    fp32 = rows[("batch_invariance", pc.LEGACY_PADDING, "float32 alone vs batch 8")]
    assert fp32["passed"] and fp32["n"] == 8 and fp32["cos_min"] > 0.9999
    bf16 = rows[("batch_invariance", pc.LEGACY_PADDING, "bfloat16 alone vs batch 8")]
    assert bf16["cos_min"] < 1.0 and not bf16["figures"]["bit_identical"]  # padding changes bf16 vectors
    too_few = rows[("batch_invariance", pc.LEGACY_PADDING, "float32 alone vs batch 32")]
    assert too_few["passed"] is None and too_few["reason"]["code"] == "parity_matrix_too_few_texts"
    engine_row = rows[("batch_invariance", pc.ENGINE, "bfloat16 alone vs batch 8")]
    assert engine_row["figures"]["bit_identical"] and engine_row["figures"]["dtype"] == "bfloat16"
    # MiniLM: 256 tokens, an encoder: chunked off measured, chunked on refused as a finding (no engine start)
    assert matrix["settings"]["max_model_len"] == 256 and max(matrix["settings"]["long_tokens"]) <= 256
    off = rows[("long_context", pc.ENGINE, "chunked prefill off")]
    assert off["passed"] and off["n"] == 3
    on = rows[("long_context", pc.ENGINE, "chunked prefill on (512 tokens/step)")]
    assert on["passed"] is None and on["reason"]["code"] == "parity_chunked_prefill_encoder" and on["why"]
    tp = [r for r in matrix["rows"] if r["check"] == "tensor_parallel"]
    assert [r["reason"]["code"] for r in tp] == ["parity_tp_opt_in"]
    assert [c[0] for c in engine.calls] == ["float32", "bfloat16"]  # one start per dtype, long inputs in fp32's
    assert engine.calls[0][1] == [1, 8, 1] and engine.calls[1][1] == [1, 8]
    assert engine.processes == [["matrix-float32", "matrix-bfloat16"]]  # both in one engine process


def test_chunked_prefill_that_vllm_turned_off_is_said(engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pc, "model_facts", lambda _: pc.ModelFacts("lasttoken", True, 256))
    engine.chunked_ran = False
    checks = ParityChecks(texts=8, batch_invariance=False, dtypes=["float32"], tensor_parallel=True)
    rows = _rows(pc.run_matrix(checks, EMBEDDED_DEFAULT, TEXTS, 0.999, []))
    on = rows[("long_context", pc.ENGINE, "chunked prefill on (512 tokens/step)")]
    assert on["reason"]["code"] == "parity_chunked_prefill_refused"
    assert engine.calls[0][2]["enable_chunked_prefill"] is False  # "off" is asked explicitly for a causal model
    assert engine.calls[1][2] == {"max_model_len": 256, "enable_chunked_prefill": True, "max_num_batched_tokens": 512,
                                  "enforce_eager": True}
    tp = [r for r in rows.values() if r["check"] == "tensor_parallel"][0]
    assert tp["passed"] and tp["figures"]["VLLM_CPU_OMP_THREADS_BIND"] == "0|1"
    # chunked prefill off and on share a process; each tensor-parallel size has its own (its own environment)
    assert engine.processes == [["matrix-float32", "matrix-chunked"], ["matrix-tp1"], ["matrix-tp2"]]
    assert engine.calls[-1][2]["tensor_parallel_size"] == 2 and engine.calls[-1][3]["VLLM_CPU_OMP_THREADS_BIND"] == "0|1"


def test_a_failed_or_missing_engine_is_a_reason(engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    engine.fail = True
    checks = ParityChecks(texts=8, dtypes=["float32"])
    rows = pc.run_matrix(checks, EMBEDDED_DEFAULT, TEXTS, 0.999, [])["rows"]
    failed = [r for r in rows if r["backend"] == pc.ENGINE and r["check"] != "tensor_parallel"]
    codes = {r["reason"]["code"] for r in failed}
    assert codes == {"parity_matrix_engine_failed", "parity_matrix_too_few_texts", "parity_chunked_prefill_encoder"}
    assert any("exited with code 1" in r["why"] for r in failed)
    monkeypatch.setattr(pc, "_engine_missing", lambda: "/nowhere/python")
    rows = pc.run_matrix(ParityChecks(texts=8, dtypes=["float32"], batch_invariance=False), EMBEDDED_DEFAULT,
                         TEXTS, 0.999, [])["rows"]
    assert {r["reason"]["code"] for r in rows if r["check"] == "long_context"} == {"parity_matrix_no_engine"}


def test_one_failed_configuration_fails_its_own_rows_only(engine: FakeEngine) -> None:
    """The configurations share a process: bfloat16's failure is bfloat16's rows' reason, float32's rows (batch
    and long context) are still measured."""
    engine.failing = {"matrix-bfloat16"}
    rows = _rows(pc.run_matrix(ParityChecks(texts=8), EMBEDDED_DEFAULT, TEXTS, 0.999, []))
    bf16 = rows[("batch_invariance", pc.ENGINE, "bfloat16 alone vs batch 8")]
    assert bf16["reason"]["code"] == "parity_matrix_engine_failed" and "matrix-bfloat16" in bf16["why"]
    assert rows[("batch_invariance", pc.ENGINE, "float32 alone vs batch 8")]["passed"]
    assert rows[("long_context", pc.ENGINE, "chunked prefill off")]["passed"]


def test_an_engine_row_of_another_shape_is_recorded_and_the_matrix_goes_on(engine: FakeEngine) -> None:
    """An engine that applies a projection the reference does not (or the reverse) gives vectors of another width:
    that row fails with both shapes as its reason, and every other row is still measured."""
    real = engine.backend.embed
    engine.backend.embed = lambda texts: real(texts)[:, :128]  # type: ignore[method-assign]
    matrix = pc.run_matrix(ParityChecks(texts=8, dtypes=["float32"]), EMBEDDED_DEFAULT, TEXTS, 0.999, [])
    rows = _rows(matrix)
    off = rows[("long_context", pc.ENGINE, "chunked prefill off")]
    assert off["passed"] is False and off["reason"]["code"] == "parity_matrix_shape_mismatch"
    assert off["reason"]["params"] == {"got": "3x128", "expected": "3x384"}
    padding = rows[("batch_invariance", pc.LEGACY_PADDING, "float32 alone vs batch 8")]
    assert padding["passed"] and padding["n"] == 8  # the kit's own rows are unaffected
    engine_batch = rows[("batch_invariance", pc.ENGINE, "float32 alone vs batch 8")]
    assert engine_batch["passed"] and engine_batch["n"] == 8  # the engine against itself: same width, compared


def test_the_transformers_reference_runs_the_dense_module(tiny_zoo: dict[str, Path]) -> None:
    """The reference of every matrix row and witness runs modules.json's whole pipeline: a Dense model's vectors
    have the projected width and equal sentence-transformers' own."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    folder = str(tiny_zoo["tiny-bert-dense"])
    ours = TransformersBackend(folder, batch_size=4).embed(TEXTS[:6])
    theirs = SentenceTransformer(folder, device="cpu").encode(TEXTS[:6], convert_to_numpy=True)
    assert ours.shape == theirs.shape == (6, 16)
    assert np.allclose(ours, theirs, atol=1e-5)


def test_cold_start_rows_from_captures() -> None:
    targets = [
        {"name": "legacy", "kind": "legacy", "target": {"start_seconds": 8.71}, "latencies_ms": [30.0, 10.0, 12.0, 11.0]},
        {"name": "ext", "kind": "external", "target": {"start_seconds": None}, "latencies_ms": [5.0, 5.0]},
        {"name": "vllm", "kind": "vllm", "target": {"start_seconds": 44.0, "error": "x"}, "latencies_ms": []},
        {"name": "dynamo", "kind": "dynamo", "target": None, "latencies_ms": []},  # not captured: no row
    ]
    rows = [r.as_dict() for r in pc.cold_start_rows(targets)]
    assert [r["backend"] for r in rows] == ["legacy", "ext", "vllm"]
    assert rows[0]["figures"] == {"start_s": 8.71, "first_ms": 30.0, "steady_median_ms": 11.0,
                                  "first_over_steady": pytest.approx(30 / 11, abs=1e-3), "steady_n": 3}
    assert rows[1]["reason"]["code"] == "parity_cold_start_external"
    assert rows[2]["reason"]["code"] == "parity_cold_start_no_requests" and rows[2]["figures"] == {"start_s": 44.0}


def _matrix_summary(complete: dict[str, Any]) -> dict[str, Any]:
    from embedswap.parity.matrix import MatrixRow, not_run

    rows = [
        MatrixRow("long_context", "vllm-offline", "chunked prefill off, 3 inputs", "cpu", 3, 1 - 3.6e-12,
                  1 - 1.7e-12, 0.999, True),
        not_run("long_context", "vllm-offline", "chunked prefill on", "cpu", 0.999, "parity_chunked_prefill_encoder"),
        MatrixRow("batch_invariance", pc.LEGACY_PADDING, "bfloat16 alone vs batch 8", "cpu", 32, 1 - 1.67e-4,
                  1 - 7.4e-5, 0.999, True, figures={"bit_identical": False}),
        MatrixRow("batch_invariance", "vllm-offline", "bfloat16 alone vs batch 8", "cpu", 32, 1.0, 1.0, 0.999, True,
                  figures={"bit_identical": True}),
        not_run("tensor_parallel", "vllm-offline", "TP=2 vs TP=1", "cpu", 0.999, "parity_tp_opt_in"),
        MatrixRow("cold_start", "vllm", "start to healthy", "cpu", 12, None, None, None, None,
                  figures={"start_s": 44.2, "first_ms": 412.0, "steady_median_ms": 370.0,
                           "first_over_steady": 1.114, "steady_n": 11}),
    ]
    summary = upgrade_summary(copy.deepcopy(complete))
    summary["parity"]["matrix"] = {"measured": True, "source": "captures/parity/matrix.json",
                                   "rows": [r.as_dict() for r in rows], "settings": {"texts": 32, "max_model_len": 8192}}
    summary["decisions"] = decisions_of(summary)
    return summary


def test_findings_and_summary_model(complete: dict[str, Any]) -> None:
    summary = _matrix_summary(complete)
    validate_summary(summary)
    found = {f["check"]: f for f in summary["decisions"]["parity_matrix"]}
    assert list(found) == ["long_context", "batch_invariance", "tensor_parallel", "cold_start"]
    assert found["batch_invariance"]["worst_drift"] == pytest.approx(1.67e-4, rel=1e-6)
    assert found["batch_invariance"]["worst_backend"] == pc.LEGACY_PADDING
    assert found["batch_invariance"]["invariant"] == ["vllm-offline bfloat16"]
    assert found["long_context"]["not_run"] == 1 and found["tensor_parallel"]["measured"] == 0
    assert matrix_findings(summary_body({})) == []  # no parity section
    assert matrix_findings(summary_body({"parity": {"measured": True}})) == []  # one from before the matrix


def _coded_summary(complete: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The matrix summary plus one row whose setting is a code + parameters (round 3)."""
    from embedswap.parity.matrix import MatrixRow, setting

    summary = _matrix_summary(complete)
    row = MatrixRow("batch_invariance", pc.LEGACY_PADDING, setting("batch", dtype="bfloat16", size=32), "cpu", 32,
                    1 - 2.5e-4, 1 - 7e-5, 0.999, True, figures={"bit_identical": False}).as_dict()
    summary["parity"]["matrix"]["rows"].append(row)
    summary["decisions"] = decisions_of(summary)
    return summary, row


_RENDERED: dict[str, str] = {}


def _rendered(lang: str, complete: dict[str, Any]) -> str:
    """The coded summary's report per language, rendered once for the module (issue 61: a render costs ~2 s; the
    two report tests below read the same text, each for its own assertions)."""
    if lang not in _RENDERED:
        _RENDERED[lang] = render_markdown(as_typed(_coded_summary(complete)[0]), lang)
    return _RENDERED[lang]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_report_shows_every_row_and_reason(lang: str, complete: dict[str, Any]) -> None:
    from embedswap.report.catalogue import catalogue

    text = _rendered(lang, complete)  # the settings test's summary: these rows plus one coded row
    words = catalogue(lang)
    matrix = text[text.index(words.prose["parity_matrix"]["heading"]):]
    assert "1.7e-04" in matrix and "3.6e-12" in matrix and "412.0" in matrix and "44.2" in matrix
    for code in ("parity_chunked_prefill_encoder", "parity_tp_opt_in"):
        assert esc(words.reason(code)) in matrix
    assert "vllm-offline bfloat16" in matrix  # the bit-identical finding


def test_report_without_matrix_says_why(complete: dict[str, Any]) -> None:
    text = render_markdown(as_typed(complete), "en")
    assert "the parity matrix is not configured" in text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_settings_are_codes_worded_per_language(lang: str, complete: dict[str, Any]) -> None:
    """Round 3: a row's setting is a code + parameters (rendered through the catalogue); an older summary whose
    rows carry only the English text still renders it."""
    from embedswap.parity.matrix import setting
    from embedswap.report.catalogue import catalogue

    summary, row = _coded_summary(complete)
    assert row["setting"] == "bfloat16 alone vs batch 32" and row["setting_code"] == "batch"
    assert row["setting_params"] == {"dtype": "bfloat16", "size": 32}
    validate_summary(summary)
    found = {f["check"]: f for f in summary["decisions"]["parity_matrix"]}["batch_invariance"]
    assert found["worst_setting_code"] == "batch" and found["worst_setting_params"]["size"] == 32
    text = _rendered(lang, complete)
    worded = fill(catalogue(lang).terms["parity_matrix"]["settings"]["batch"], dtype="bfloat16", size=32)
    assert text.count(esc(worded)) >= 2  # the table row and the finding sentence
    assert "bfloat16 alone vs batch 8" in text or lang == "en"  # the old rows (no code) keep their English text
    assert copy.deepcopy(setting("tp", bind="0|1")).code == "tp"


def test_offline_vllm_backends_ride_in_the_matrix_process(engine: FakeEngine) -> None:
    """Step 05's offline vLLM backends run first in the matrix's engine process: each is handed its own run (its
    vectors, or its failure alone) and embeds without starting vLLM again."""
    from embedswap.parity.backends import measure_backend
    from embedswap.parity.vllm import VllmOfflineBackend

    auto = VllmOfflineBackend(EMBEDDED_DEFAULT, dtype="auto", python="/nowhere/python")  # never started itself
    broken = VllmOfflineBackend(EMBEDDED_DEFAULT, dtype="float16", name="broken", python="/nowhere/python")
    engine.failing = {"broken"}
    matrix = pc.run_matrix(ParityChecks(texts=8, dtypes=["float32"]), EMBEDDED_DEFAULT, TEXTS, 0.999, [],
                           riders=[(TEXTS[:5], auto), (TEXTS[:5], broken)])
    assert engine.processes == [["vllm-offline-auto", "broken", "matrix-float32"]]
    assert engine.calls[0][1] == [8] and engine.calls[0][2] == {"enforce_eager": True}  # its own batch size, kwargs
    measured = measure_backend(auto, TEXTS[:5])
    assert measured.error is None and measured.vectors.shape == (5, 384)
    assert measured.meta["shared_process"] and measured.dtype == "auto"
    failed = measure_backend(broken, TEXTS[:5])
    assert failed.vectors is None and failed.error == "ParityBackendError: broken: vLLM exited with code 1"
    assert _rows(matrix)[("batch_invariance", pc.ENGINE, "float32 alone vs batch 8")]["passed"]


def test_an_offline_backend_may_join_the_matrix_engines_that_embed_its_texts_whole(engine: FakeEngine) -> None:
    """A rider names the matrix configurations it may run inside (the engine process keeps the one whose dtype
    vLLM resolves as its own): not chunked prefill, every argument it sets the same, its longest text within
    max_model_len (MiniLM: 256 tokens); the matrix's own configurations join nothing."""
    from embedswap.parity.vllm import VllmOfflineBackend

    def rider(name: str, **kwargs: Any) -> VllmOfflineBackend:
        return VllmOfflineBackend(EMBEDDED_DEFAULT, dtype="auto", name=name, python="/nowhere/python", **kwargs)

    long_text = " ".join(TEXTS[:10])  # about 1,000 tokens: over MiniLM's 256
    riders = [(TEXTS[:5], rider("fits")), (TEXTS[:4] + [long_text], rider("too-long")),
              (TEXTS[:5], rider("own-limit", max_model_len=128)), (TEXTS[:5], rider("same-limit", max_model_len=256))]
    checks = ParityChecks(texts=8, dtypes=["float32", "bfloat16"], long_context=False)
    pc.run_matrix(checks, EMBEDDED_DEFAULT, TEXTS, 0.999, [], riders=riders)
    assert engine.joins == {"fits": ("matrix-float32", "matrix-bfloat16"), "too-long": (), "own-limit": (),
                            "same-limit": ("matrix-float32", "matrix-bfloat16"), "matrix-float32": (),
                            "matrix-bfloat16": ()}
    chunked = pc.EngineConfig("matrix-chunked", "float32", [], {"max_model_len": 256, "enable_chunked_prefill": True})
    assert pc._joinable(rider("fits").engine_config(TEXTS[:1]), [chunked], 10) == ()
