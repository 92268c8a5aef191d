"""Parity: the gate (identical, perturbed, NaN, per-modality thresholds), the backends (transformers in fp32 and
bf16 against the golden reference, an OpenAI-compatible server, vLLM offline as an e2e test), step 05 with extra
offline backends and image records, and scripts/gpu_parity.py on the CPU.

No vLLM server runs here; the real model is the embedded default (all-MiniLM-L6-v2) on a few texts.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import yaml

from embedswap.parity.backends import measure_backend
from embedswap.parity.gate import thresholds_from
from embedswap.config import ConfigError, ParityBackendSpec, parse_experiment
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path
from embedswap.parity.backends import OpenAIBackend, ParityBackend, TransformersBackend
from embedswap.parity.gate import (
    ParityBackendError, gate, gate_by_modality, golden_reference, record_modalities, threshold_for,
)
from embedswap.parity.vllm import VllmOfflineBackend
from realkit import JsonHandler
from typed_summary import as_typed

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Embedding servers turn text into dense vectors for semantic search.",
    "vLLM's pooling runner batches embedding requests on the same hardware.",
    "배치 크기를 절반으로 줄이면 메모리 부족 오류가 대부분 해결된다.",
    "A short one.",
]
IDS = [f"t{i}" for i in range(len(TEXTS))]
THRESHOLDS = {"text": 0.999, "text+image": 0.995}


def unit_rows(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def at_cosine(reference: np.ndarray, cosines: list[float], seed: int = 1) -> np.ndarray:
    """Vectors whose cosine to each reference row is exactly the given value (up to float32 rounding)."""
    out = []
    rng = np.random.default_rng(seed)
    for ref, c in zip(reference.astype(np.float64), cosines):
        noise = rng.normal(size=ref.shape)
        orthogonal = noise - noise.dot(ref) * ref
        orthogonal /= np.linalg.norm(orthogonal)
        out.append(c * ref + math.sqrt(1 - c * c) * orthogonal)
    return np.asarray(out, dtype=np.float64)


@pytest.fixture(scope="module")
def model_path() -> str:
    return resolve_model_path(EMBEDDED_DEFAULT)


@pytest.fixture(scope="module")
def reference(model_path: str) -> np.ndarray:
    return golden_reference(model_path, TEXTS)


# --- the gate -------------------------------------------------------------------------------------------------------
def test_gate_passes_identical_and_fails_perturbed() -> None:
    ref = unit_rows(10)
    same = gate("same", "float32", "cpu", "text", ref, ref.copy(), [str(i) for i in range(10)], 0.999)
    assert same.passed and same.cos_min == pytest.approx(1.0, abs=1e-6) and same.n == 10

    perturbed = ref.copy()
    perturbed[3] += np.random.default_rng(5).normal(scale=0.2, size=ref.shape[1]).astype(np.float32)
    row = gate("noisy", "float32", "cpu", "text", ref, perturbed, [str(i) for i in range(10)], 0.999)
    assert not row.passed
    assert row.cos_min < 0.999 and row.cos_max == pytest.approx(1.0, abs=1e-6)
    assert row.worst[0]["id"] == "3"  # the perturbed vector is named first
    as_dict = row.as_dict()
    assert as_dict["pass"] is False and "passed" not in as_dict
    for key in ("backend", "dtype", "device", "modality", "n", "cos_min", "cos_median", "cos_max", "threshold",
                "pass", "worst"):
        assert key in as_dict


def test_gate_fails_on_nan_vector_and_stays_json_safe() -> None:
    ref = unit_rows(6)
    broken = ref.copy()
    broken[2, 5] = np.nan
    row = gate("nan", "float16", "cpu", "text", ref, broken, list("abcdef"), 0.5)
    assert not row.passed
    assert row.non_finite == 1
    assert row.cos_min is None and row.cos_median is None  # no made-up number for a broken set
    assert row.worst[0] == {"id": "c", "cosine": None}  # the broken vector is listed first
    json.dumps(row.as_dict(), allow_nan=False)  # captures are written with allow_nan=False

    zero = ref.copy()
    zero[0] = 0.0  # a zero vector has no direction: it fails too
    assert not gate("zero", "float32", "cpu", "text", ref, zero, list("abcdef"), 0.5).passed


def test_gate_fails_another_dimension_with_its_cause() -> None:
    """Issue 24: a server ignoring a 2_Dense layer gives another dimension: a gate failure naming it, not 'not run'."""
    ref = unit_rows(3, dim=8)
    row = gate("b", "float32", "cpu", "text", ref, unit_rows(3, dim=4), ["a", "b", "c"], 0.999)
    assert not row.passed and row.cos_min is None
    assert row.reason == {"code": "parity_dimension_mismatch", "params": {"name": "b", "dim": 4, "reference": 8}}
    assert "4-dimensional" in row.why and "Dense" in row.why
    json.dumps(row.as_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="shapes"):  # another number of vectors is still a caller's error
        gate("b", "float32", "cpu", "text", ref, unit_rows(2, dim=8), ["a", "b", "c"], 0.999)


def test_gate_fails_another_norm_with_its_cause() -> None:
    """Cosine cannot see a missing (or extra) Normalize; the gate compares norms too, within rounding."""
    ref = unit_rows(4, dim=8)
    scaled = ref * 3.0
    row = gate("b", "float32", "cpu", "text", ref, scaled, list("abcd"), 0.999)
    assert row.cos_min is not None and row.cos_min > 0.9999  # same directions ...
    assert not row.passed and row.reason["code"] == "parity_norm_mismatch"  # ... but not the model's vectors
    assert row.reason["params"]["norm"] == "3"
    rounded = ref * (1 + 5e-4)  # fp16-size norm drift passes
    assert gate("b", "float16", "cpu", "text", ref, rounded, list("abcd"), 0.999).passed


def test_gate_refuses_unknown_modalities() -> None:
    ref = unit_rows(3, dim=8)
    with pytest.raises(ValueError, match="modality"):
        gate("b", "float32", "cpu", "audio", ref, ref, ["a", "b", "c"], 0.999)
    with pytest.raises(ValueError, match="threshold"):
        gate("b", "float32", "cpu", "text", ref, ref, ["a", "b", "c"])


def test_thresholds_per_modality() -> None:
    assert threshold_for("text") == 0.999 and threshold_for("text+image") == 0.995
    experiment = parse_experiment({
        "name": "t", "date": "2026-11-30", "workload": {"documents": "d.jsonl"},
        "targets": {"legacy": {"kind": "legacy", "port": 18701}, "vllm": {"kind": "vllm", "port": 18702}},
        "candidates": ["vllm"], "parity": {"text_threshold": 0.99, "multimodal_threshold": 0.98},
    })
    assert thresholds_from(experiment.parity) == {"text": 0.99, "text+image": 0.98}
    row = gate("b", "float32", "cpu", "text+image", unit_rows(2), unit_rows(2), ["a", "b"],
               thresholds=thresholds_from(experiment.parity))
    assert row.threshold == 0.98


def test_multimodal_threshold_applies_to_text_image_rows() -> None:
    """Recorded vectors at cosine 0.997 to their reference: between the two thresholds. As text+image they pass
    (>= 0.995); the same cosines on text rows fail (< 0.999). Each modality gets its own row and threshold."""
    ref = unit_rows(8, dim=384, seed=3)
    cosines = [0.9999, 0.9995, 0.9992, 0.9991, 0.997, 0.9965, 0.9985, 0.9999]
    vectors = at_cosine(ref, cosines)
    modalities = ["text"] * 4 + ["text+image"] * 4
    ids = [f"d{i}" for i in range(8)]
    rows = {r.modality: r for r in gate_by_modality("mm", "bfloat16", "tpu", ref, vectors, ids, modalities,
                                                    THRESHOLDS)}
    assert set(rows) == {"text", "text+image"}
    assert rows["text"].passed and rows["text"].threshold == 0.999 and rows["text"].n == 4
    assert rows["text+image"].passed and rows["text+image"].threshold == 0.995 and rows["text+image"].n == 4
    assert rows["text+image"].cos_min == pytest.approx(0.9965, abs=1e-6)
    assert rows["text+image"].worst[0]["id"] == "d5"

    as_text = gate("mm", "bfloat16", "tpu", "text", ref[4:], vectors[4:], ids[4:], thresholds=THRESHOLDS)
    assert not as_text.passed  # the same recorded vectors fail the text threshold

    below = at_cosine(ref[4:], [0.9949, 0.999, 0.999, 0.999])
    row = gate("mm", "bfloat16", "tpu", "text+image", ref[4:], below, ids[4:], thresholds=THRESHOLDS)
    assert not row.passed and row.worst[0]["id"] == "d4"


def test_record_modalities_reads_the_image_field(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "plain"}\n\n{"id": "b", "text": "caption", "image": "img/b.png"}\n'
                    '{"id": "c", "text": "empty image", "image": ""}\n', encoding="utf-8")
    assert record_modalities(docs) == {"a": "text", "b": "text+image", "c": "text"}
    with pytest.raises(ValueError, match="modalities"):
        gate_by_modality("b", "float32", "cpu", unit_rows(2), unit_rows(2), ["a", "b"], ["text"], THRESHOLDS)


# --- configuration ------------------------------------------------------------------------------------------------
def _experiment(backends: list[dict]) -> dict:
    return {"name": "t", "date": "2026-11-30", "workload": {"documents": "d.jsonl"},
            "targets": {"legacy": {"kind": "legacy", "port": 18701}, "vllm": {"kind": "vllm", "port": 18702}},
            "candidates": ["vllm"], "parity": {"backends": backends}}


def test_parity_backend_specs() -> None:
    experiment = parse_experiment(_experiment([
        {"kind": "vllm-offline", "dtype": "float32"},
        {"kind": "vllm-offline", "dtype": "auto"},
        {"kind": "transformers", "dtype": "bfloat16", "device": "cuda"},
    ]))
    assert [s.label for s in experiment.parity.backends] == [
        "vllm-offline-float32", "vllm-offline-auto", "transformers-bfloat16-cuda"]
    assert parse_experiment(_experiment([])).parity.backends == []
    assert ParityBackendSpec(kind="transformers", dtype="float16", name="fp16").label == "fp16"
    with pytest.raises(ConfigError, match="auto"):
        parse_experiment(_experiment([{"kind": "transformers", "dtype": "auto"}]))
    with pytest.raises(ConfigError, match="twice"):
        parse_experiment(_experiment([{"kind": "vllm-offline", "dtype": "float32"}] * 2))
    with pytest.raises(ConfigError, match="parity.backends.0.kind"):
        parse_experiment(_experiment([{"kind": "onnx", "dtype": "float32"}]))
    with pytest.raises(ConfigError, match=r"parity\.backends\.0\.dtype"):
        parse_experiment(_experiment([{"kind": "vllm-offline", "dtyp": "float32"}]))


# --- backends -------------------------------------------------------------------------------------------------------
def test_transformers_fp32_matches_golden_reference(model_path: str, reference: np.ndarray) -> None:
    backend = TransformersBackend(model_path, device="cpu", dtype="float32")
    assert isinstance(backend, ParityBackend)
    vectors = backend.embed(TEXTS)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    row = gate(backend.name, backend.dtype, backend.device, backend.modality, reference, vectors, IDS, 0.999)
    assert row.cos_min >= 0.9999 and row.passed


def test_transformers_bf16_row_is_present_and_below_one(model_path: str, reference: np.ndarray) -> None:
    backend = TransformersBackend(model_path, device="cpu", dtype="bfloat16", name="transformers-bf16")
    result = measure_backend(backend, TEXTS)
    assert result.error is None and result.vectors is not None
    row = gate(result.name, result.dtype, result.device, "text", reference, result.vectors, IDS, 0.999).as_dict()
    assert row["backend"] == "transformers-bf16" and row["dtype"] == "bfloat16" and row["n"] == len(TEXTS)
    assert 0.99 < row["cos_min"] <= row["cos_max"] < 1.0  # bf16 rounding shows, but the vectors agree


def test_transformers_backend_without_cuda_is_an_error_not_a_crash(model_path: str) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = measure_backend(TransformersBackend(model_path, device="cuda", dtype="bfloat16"), TEXTS)
    assert result.vectors is None and "CUDA" in (result.error or "")
    with pytest.raises(ValueError, match="dtype"):
        TransformersBackend(model_path, dtype="int8")


class _FakeEmbeddings(JsonHandler):
    """/v1/embeddings answering a fixed vector per text (its length and first letter), or 500 for "fail"."""

    batches: list[int] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.batches.append(len(body["input"]))
        if "fail" in body["input"]:
            payload, status = {"error": {"message": "boom"}}, 500
        else:
            data = [{"index": i, "embedding": [float(len(t)), float(ord(t[0])), 1.0]}
                    for i, t in enumerate(body["input"])]
            payload, status = {"data": data, "usage": {"prompt_tokens": 1}}, 200
        self.answer(status, payload)


@pytest.fixture()
def fake_server():
    server = None
    for port in range(18790, 18800):
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), _FakeEmbeddings)
            break
        except OSError:
            continue
    if server is None:
        pytest.skip("no free port in 18790-18799")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeEmbeddings.batches = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_openai_backend_batches_of_eight(fake_server: str) -> None:
    texts = [f"text number {i}" for i in range(11)]
    backend = OpenAIBackend("fake", fake_server, "m", dtype="float32", device="cpu")
    vectors = backend.embed(texts)
    assert _FakeEmbeddings.batches == [8, 3]
    assert vectors.shape == (11, 3) and vectors[0, 0] == len(texts[0])
    with pytest.raises(ParityBackendError, match="batch 0 failed.*500"):
        backend.embed(["fail"])


def test_vllm_offline_backend_reports_a_missing_engine(model_path: str, tmp_path: Path) -> None:
    backend = VllmOfflineBackend(model_path, dtype="float32", python=str(tmp_path / "no-python"))
    result = measure_backend(backend, TEXTS)
    assert result.vectors is None and "does not exist" in (result.error or "")


@pytest.mark.e2e
def test_vllm_offline_float32_matches_reference(model_path: str, reference: np.ndarray, tmp_path: Path) -> None:
    from embedswap.paths import engine_python

    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine`")
    backend = VllmOfflineBackend(model_path, dtype="float32", log_path=tmp_path / "vllm.log")
    vectors = backend.embed(TEXTS)
    assert backend.meta["dtype"] == "float32" and backend.device == "cpu"
    row = gate(backend.name, backend.dtype, backend.device, "text", reference, vectors, IDS, 0.999)
    assert row.passed and row.cos_min >= 0.9999
    assert not (tmp_path / "vllm.pid").exists()  # the engine process group is gone


# --- step 05 with extra backends and an image record ----------------------------------------------------------------
def test_run_parity_with_offline_backends_and_image_records(tmp_path: Path, reference: np.ndarray) -> None:
    from embedswap import steps

    folder = tmp_path / "exp"
    folder.mkdir()
    docs = [{"id": i, "text": t} for i, t in zip(IDS, TEXTS)]
    docs.append({"id": "img-1", "text": "A red bicycle leaning on a wall.", "image": "images/bike.png"})
    (folder / "documents.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                            encoding="utf-8")
    config = _experiment([{"kind": "transformers", "dtype": "float32"},
                          {"kind": "transformers", "dtype": "bfloat16", "name": "bf16"},
                          {"kind": "transformers", "dtype": "float16", "device": "cuda:7", "name": "gpu"}])
    config["workload"]["documents"] = "documents.jsonl"
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    ctx = steps.open_step(folder, create=True)
    attempt = ctx.attempt
    full_reference = np.vstack([reference, golden_reference(resolve_model_path(EMBEDDED_DEFAULT), [docs[-1]["text"]])])
    attempt.write_array("reference/doc_vectors.npy", full_reference)
    attempt.write_array("legacy/doc_vectors.npy", full_reference[None])  # repeats x docs x dim
    broken = full_reference.copy()
    broken[1] *= -1
    attempt.write_array("vllm/doc_vectors.npy", broken[None])

    result = steps.run_parity(ctx)
    rows = {r["backend"]: r for r in result["rows"]}
    assert set(rows) == {"legacy", "vllm", "transformers-float32", "bf16"}
    assert all(r["modality"] == "text" and r["n"] == len(TEXTS) for r in rows.values())  # the image record is apart
    assert rows["legacy"]["pass"] and not rows["vllm"]["pass"] and rows["vllm"]["worst"][0]["id"] == "t1"
    assert rows["transformers-float32"]["cos_min"] >= 0.9999
    assert rows["bf16"]["dtype"] == "bfloat16" and rows["bf16"]["cos_max"] < 1.0
    assert rows["bf16"]["source"] == "captures/parity/backends/bf16/doc_vectors.npy"
    import torch

    if not torch.cuda.is_available():
        assert [m["backend"] for m in result["not_run"]] == ["gpu"] and "CUDA" in result["not_run"][0]["why"]
    assert result["pass"] is False
    assert result["multimodal"]["measured"] is False and result["multimodal"]["records"] == 1
    assert "img-1" in result["multimodal"]["why"] and "no multimodal model" in result["multimodal"]["why"]
    assert attempt.has("parity/backends/bf16/doc_vectors.npy") and attempt.has("parity/backends/gpu/meta.json")

    table = steps.parity_table(as_typed(ctx.summary()))  # notebook 05's call: the typed summary of this attempt
    assert "worst" not in table.columns and "note" in table.columns
    assert table.loc["(text+image)", "threshold"] == 0.995
    assert "not measured" in table.loc["(text+image)", "note"]

    # a rerun on the same attempt reads the captured backend vectors and finds the same rows
    assert steps.run_parity(ctx) == result


# --- the GPU script -------------------------------------------------------------------------------------------------
def test_gpu_parity_script_runs_on_cpu(model_path: str, tmp_path: Path) -> None:
    texts = tmp_path / "texts.jsonl"
    many = [(f"{i}-{k}", t) for k in range(-(-32 // len(TEXTS))) for i, t in zip(IDS, TEXTS)]  # 32+: batch 32
    texts.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in many),
                     encoding="utf-8")
    out = tmp_path / "gpu.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_parity.py"), model_path, "--texts", str(texts),
                          "--out", str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    rows = {(r["device"], r["dtype"]): r for r in result["rows"]}
    assert ("cpu", "bfloat16") in rows
    cpu_bf16 = rows[("cpu", "bfloat16")]
    assert cpu_bf16["n"] == len(many) and 0.99 < cpu_bf16["cos_min"] < 1.0 and cpu_bf16["threshold"] == 0.999
    assert "cos min" in run.stdout
    # each printed row carries its figures and the gate word that follows from them (cos min against 0.999)
    printed = {(f[2], f[1]): f for f in (line.split() for line in run.stdout.splitlines()) if len(f) == 9}
    for key, row in rows.items():
        fields = printed[key]
        assert float(fields[4]) == pytest.approx(row["cos_min"], abs=1e-6), fields
        assert fields[8] == ("PASS" if row["cos_min"] >= 0.999 else "FAIL"), fields
    import torch

    if not torch.cuda.is_available():
        assert "no CUDA device: GPU rows not measured" in run.stdout
        assert result["gpu_measured"] is False and len(result["not_measured"]) == 3
    # issue 18: the script joins the kit's matrix instead of repeating its pooling code
    source = (REPO / "scripts" / "gpu_parity.py").read_text()
    assert "from embedswap.parity.checks import run_matrix" in source and "def pool(" not in source
    matrix = result["matrix"]
    assert matrix["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    batch = {(r["setting_params"]["dtype"], r["setting_params"]["size"]): r for r in matrix["rows"]
             if r["check"] == "batch_invariance"}
    assert sorted(batch) == [("bfloat16", 8), ("bfloat16", 32), ("float32", 8), ("float32", 32)]
    assert all(r["platform"] == matrix["device"] and r["n"] == 32 for r in batch.values())
    # the legacy padding's bf16 drift (issue 18: ~2e-5 for MiniLM) is far above fp32's (~1e-13)
    assert 1 - batch[("bfloat16", 8)]["cos_min"] > 100 * (1 - batch[("float32", 8)]["cos_min"])
    engine_rows = [r for r in matrix["rows"] if r["backend"] == "vllm-offline"]
    assert engine_rows and {r["reason"]["code"] for r in engine_rows} <= {"parity_matrix_off", "parity_tp_opt_in"}
    assert "matrix batch_invariance" in run.stdout


def test_a_cosine_failure_is_never_explained_by_a_norm() -> None:
    """A llama.cpp server gave unnormalised vectors (median norm 2.14) that also pointed elsewhere on Korean texts:
    the row's cause is the cosine, not the norm (a length cannot move a cosine)."""
    ref = unit_rows(4, dim=8)
    turned = ref.copy()
    turned[2] = -ref[2]
    row = gate("b", "float32", "cpu", "text", ref, turned * 2.14, list("abcd"), 0.999)
    assert not row.passed and row.reason["code"] == "parity_cosine_below"
    assert row.reason["params"]["worst"] == "c" and row.reason["params"]["below"] == 1
    assert "norm" not in row.why and "2.14" not in row.why
    # the same lengths with the directions kept: the norm is the cause
    assert gate("b", "float32", "cpu", "text", ref, ref * 2.14, list("abcd"), 0.999).reason["code"] == \
        "parity_norm_mismatch"


def test_step_05_runs_its_offline_vllm_backend_in_the_matrix_process(tmp_path: Path, reference: np.ndarray,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With a parity matrix to run, step 05's vllm-offline backend rides in the matrix's engine process (one vLLM
    import for both): one engine run holds the backend's configuration and the matrix's; the row is gated."""
    from embedswap import steps
    from embedswap.parity import checks as pc
    from embedswap.parity.vllm_configs import ConfigRun

    processes: list[list[str]] = []

    def engine(model: str, configs: list, **_: object) -> list[ConfigRun]:
        processes.append([c.label for c in configs])
        return [ConfigRun([reference if c.label == "vllm-offline-auto" else reference[:1] for _ in c.jobs],
                          {"dtype": "bfloat16", "device": "cpu", "job_s": [0.1]}) for c in configs]

    monkeypatch.setattr(pc, "run_vllm_configs", engine)
    monkeypatch.setattr(pc, "_engine_missing", lambda: None)
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "documents.jsonl").write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                                                    for i, t in zip(IDS, TEXTS)), encoding="utf-8")
    config = _experiment([{"kind": "vllm-offline", "dtype": "auto"}])
    config["workload"]["documents"] = "documents.jsonl"
    config["parity"]["checks"] = {"texts": 1, "dtypes": ["float32"], "long_context": False, "cold_start": False}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    ctx = steps.open_step(folder, create=True)
    ctx.attempt.write_array("reference/doc_vectors.npy", reference)
    result = steps.run_parity(ctx)
    assert processes == [["vllm-offline-auto", "matrix-float32"]]
    row = {r["backend"]: r for r in result["rows"]}["vllm-offline-auto"]
    assert row["pass"] and row["dtype"] == "auto -> bfloat16"
    meta = ctx.attempt.read_json("parity/backends/vllm-offline-auto/meta.json")
    assert meta["error"] is None and meta["engine"]["shared_process"] is True and "ran_in" not in meta["engine"]
    assert result["matrix"]["measured"] is True
