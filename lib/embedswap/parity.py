"""Parity: every backend's vectors against a golden reference, with a pass/fail gate per modality.

The golden reference is the model run in fp32 on the CPU through sentence-transformers, with the model's own
pooling and normalisation: an implementation independent of both the legacy server and the engines.

Backends under test share one small interface (:class:`ParityBackend`): a name, the dtype and device they run
in, the modality they embed, and ``embed(texts) -> (n, dim) float32``. Three kinds exist:

- :class:`OpenAIBackend`: any OpenAI-compatible ``/v1/embeddings`` URL (a running server), batches of 8;
- :class:`TransformersBackend`: plain transformers with the model's own pooling (the legacy server's helpers),
  in any dtype and on any device torch has;
- :class:`VllmOfflineBackend`: vLLM's offline ``LLM(runner="pooling").embed`` in a subprocess of the engine
  environment (vLLM does not live in the kit's environment); texts and vectors travel through temp files.

The gate: the cosine of each vector to its reference vector; a backend passes a modality when its *lowest*
cosine reaches that modality's threshold (the article: text >= 0.999, text+image >= 0.995). A NaN or infinite
vector fails.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from embedswap.reasons import explain
from embedswap.vectors import rowwise_cosine

WORST_LISTED = 5
TEXT = "text"
TEXT_IMAGE = "text+image"
MODALITIES: tuple[str, ...] = (TEXT, TEXT_IMAGE)
DEFAULT_BATCH_SIZE = 8


class ParityBackendError(RuntimeError):
    """A backend could not produce vectors (no CUDA, engine failed, a request failed); the message says why."""


# ---------------------------------------------------------------------------------------------------------------------
# The golden reference


def golden_reference(model_path: str, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """fp32 CPU vectors for ``texts``, normalised as the model's own modules say."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(model_path, device="cpu", model_kwargs={"torch_dtype": torch.float32})
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


# ---------------------------------------------------------------------------------------------------------------------
# The gate


def threshold_for(modality: str, text_threshold: float = 0.999, multimodal_threshold: float = 0.995) -> float:
    """The pass threshold of a modality ("text" or "text+image")."""
    if modality == TEXT:
        return float(text_threshold)
    if modality == TEXT_IMAGE:
        return float(multimodal_threshold)
    raise ValueError(f"unknown modality {modality!r} (expected one of {', '.join(MODALITIES)})")


def thresholds_from(parity_config: Any) -> dict[str, float]:
    """{modality: threshold} from an experiment's ``parity`` section (embedswap.config.ParityConfig)."""
    return {TEXT: float(parity_config.text_threshold), TEXT_IMAGE: float(parity_config.multimodal_threshold)}


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@dataclass
class ParityRow:
    backend: str
    dtype: str
    device: str
    modality: str
    n: int
    cos_min: float | None  # None when some vector was NaN/inf (then the row fails)
    cos_median: float | None
    cos_max: float | None
    threshold: float
    passed: bool
    worst: list[dict[str, Any]]
    non_finite: int = 0  # vectors whose cosine could not be computed (NaN/inf values, zero vector)
    # why the row fails without (or beside) a cosine: another dimension or another norm than the reference
    why: str | None = None
    reason: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["pass"] = row.pop("passed")
        return row


def gate(backend: str, dtype: str, device: str, modality: str, reference: np.ndarray, vectors: np.ndarray,
         ids: list[str], threshold: float | None = None, thresholds: dict[str, float] | None = None) -> ParityRow:
    """Cosine of each vector to its reference; the backend passes when the lowest cosine reaches the threshold.

    Give ``threshold`` directly, or ``thresholds`` ({modality: threshold}, e.g. :func:`thresholds_from`) to take
    the one of ``modality``. A NaN/inf vector (or a zero vector) counts as failing; its cosine is listed as None.
    """
    if threshold is None:
        if thresholds is None:
            raise ValueError("give threshold or thresholds")
        if modality not in thresholds:
            raise ValueError(f"no threshold for modality {modality!r} (have {sorted(thresholds)})")
        threshold = thresholds[modality]
    threshold_for(modality)  # validates the modality name
    reference = np.asarray(reference)
    vectors = np.asarray(vectors)
    if len(ids) != len(reference):
        raise ValueError(f"{len(ids)} ids for {len(reference)} reference vectors")
    if reference.ndim == 2 and vectors.ndim == 2 and len(vectors) == len(reference) \
            and vectors.shape[1] != reference.shape[1]:
        return _shape_failure(backend, dtype, device, modality, len(ids), float(threshold), vectors, reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = rowwise_cosine(reference, vectors)
    finite = np.isfinite(cos)
    bad = int((~finite).sum())
    # broken vectors first, then the lowest cosines
    order = np.argsort(np.where(finite, cos, -np.inf), kind="stable")[:WORST_LISTED]
    return ParityRow(
        backend=backend,
        dtype=dtype,
        device=device,
        modality=modality,
        n=len(cos),
        cos_min=_finite_or_none(cos.min()) if len(cos) else None,
        cos_median=_finite_or_none(np.median(cos)) if len(cos) else None,
        cos_max=_finite_or_none(cos.max()) if len(cos) else None,
        threshold=float(threshold),
        # NaN compares False: a broken vector fails; so does another norm than the reference's
        passed=bool(len(cos)) and bool(np.all(cos >= threshold)) and not _norm_cause(backend, reference, vectors),
        worst=[{"id": ids[i], "cosine": _finite_or_none(cos[i])} for i in order],
        non_finite=bad,
        **_norm_cause(backend, reference, vectors),
    )


# Norms may differ by the rounding of another dtype; a Normalize module on or off changes them by far more.
NORM_RELATIVE_TOLERANCE = 1e-2


def _cause(code: str, **params: Any) -> dict[str, Any]:
    return {"why": explain(code, **params), "reason": {"code": code, "params": params}}


def _norm_cause(backend: str, reference: np.ndarray, vectors: np.ndarray) -> dict[str, Any]:
    """A cause when the median norm differs from the reference's beyond rounding (cosine alone cannot see it)."""
    with np.errstate(invalid="ignore"):
        ref = float(np.median(np.linalg.norm(np.asarray(reference, dtype=np.float64), axis=1)))
        got = float(np.median(np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)))
    if not (math.isfinite(ref) and math.isfinite(got)) or abs(got - ref) <= NORM_RELATIVE_TOLERANCE * max(ref, 1e-12):
        return {}
    return _cause("parity_norm_mismatch", name=backend, norm=f"{got:.4g}", reference=f"{ref:.4g}")


def _shape_failure(backend: str, dtype: str, device: str, modality: str, n: int, threshold: float,
                   vectors: np.ndarray, reference: np.ndarray) -> ParityRow:
    """Vectors of another dimension fail the gate with that cause: they cannot be the model's vectors."""
    return ParityRow(backend=backend, dtype=dtype, device=device, modality=modality, n=n, cos_min=None,
                     cos_median=None, cos_max=None, threshold=threshold, passed=False, worst=[],
                     **_cause("parity_dimension_mismatch", name=backend, dim=int(vectors.shape[1]),
                              reference=int(reference.shape[1])))


def gate_by_modality(backend: str, dtype: str, device: str, reference: np.ndarray, vectors: np.ndarray,
                     ids: list[str], modalities: list[str], thresholds: dict[str, float]) -> list[ParityRow]:
    """One row per modality present in ``modalities`` (one entry per record), each with its own threshold."""
    if len(modalities) != len(ids):
        raise ValueError(f"{len(modalities)} modalities for {len(ids)} records")
    unknown = sorted(set(modalities) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality {unknown[0]!r} (expected one of {', '.join(MODALITIES)})")
    rows = []
    for modality in MODALITIES:
        index = [i for i, m in enumerate(modalities) if m == modality]
        if not index:
            continue
        rows.append(gate(backend, dtype, device, modality, np.asarray(reference)[index], np.asarray(vectors)[index],
                         [ids[i] for i in index], thresholds=thresholds))
    return rows


def record_modalities(documents_path: str | Path) -> dict[str, str]:
    """{record id: "text" or "text+image"} from a workload JSONL; a record with an ``image`` field is text+image.

    embedswap.workload keeps only the text of a record; this reads the same file for the image field.
    """
    out: dict[str, str] = {}
    with Path(documents_path).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            if isinstance(record, dict) and "id" in record:
                out[str(record["id"])] = TEXT_IMAGE if record.get("image") else TEXT
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Backends


@runtime_checkable
class ParityBackend(Protocol):
    """Anything that turns texts into vectors for the gate."""

    name: str
    dtype: str
    device: str
    modality: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, in the order of ``texts``."""
        ...


def _batches(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class OpenAIBackend:
    """A running OpenAI-compatible server (legacy, vLLM, Dynamo, external): ``/v1/embeddings`` in batches of 8."""

    def __init__(self, name: str, base_url: str, model: str, dtype: str = "server default", device: str = "server",
                 modality: str = TEXT, batch_size: int = DEFAULT_BATCH_SIZE, headers: dict[str, str] | None = None,
                 verify_tls: bool = True, timeout_s: float = 120.0) -> None:
        threshold_for(modality)
        self.name, self.dtype, self.device, self.modality = name, dtype, device, modality
        self.base_url, self.model, self.batch_size = base_url, model, batch_size
        self.headers, self.verify_tls, self.timeout_s = headers, verify_tls, timeout_s

    def embed(self, texts: list[str]) -> np.ndarray:
        from embedswap.client import EmbeddingClient

        out: list[np.ndarray] = []
        with EmbeddingClient(self.base_url, self.model, timeout_s=self.timeout_s, headers=self.headers,
                             verify_tls=self.verify_tls) as client:
            for number, batch in enumerate(_batches(texts, self.batch_size)):
                answer = client.embed(batch)
                if not answer.ok or answer.vectors is None or len(answer.vectors) != len(batch):
                    raise ParityBackendError(f"{self.name}: batch {number} failed (status {answer.status}: "
                                             f"{answer.error or 'wrong number of vectors'})")
                out.append(answer.as_array())
        return np.concatenate(out).astype(np.float32)


class TransformersBackend:
    """Plain transformers: AutoModel + the model's own pooling and normalisation (sentence-transformers files).

    The pooling code is the legacy server's (``embedswap.legacy_server.pool``); pooling accumulates in fp32
    whatever the model's dtype. Inputs are truncated at the model's ``max_seq_length`` as sentence-transformers
    does.
    """

    def __init__(self, model_path: str, device: str = "cpu", dtype: str = "float32", name: str = "transformers",
                 modality: str = TEXT, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        from embedswap.legacy_server import DTYPES

        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
        threshold_for(modality)
        self.model_path, self.name, self.dtype, self.device, self.modality = model_path, name, dtype, device, modality
        self.batch_size = batch_size
        self._loaded: tuple[Any, ...] | None = None

    def _load(self) -> tuple[Any, ...]:
        if self._loaded is not None:
            return self._loaded
        import torch
        from transformers import AutoModel, AutoTokenizer

        from embedswap.legacy_server import DTYPES, _model_max_length, read_sentence_transformers_config
        from embedswap.models import local_model_folder, resolve_model_path

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ParityBackendError(f"{self.name}: device {self.device!r} asked for, but torch sees no CUDA device")
        path = resolve_model_path(self.model_path)
        st = read_sentence_transformers_config(local_model_folder(path))
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, dtype=DTYPES[self.dtype]).to(self.device).eval()
        padding_side = "left" if st.pooling == "lasttoken" else "right"
        tokenizer.padding_side = padding_side
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        max_length = _model_max_length(st.max_seq_length, tokenizer, model)
        self._loaded = (tokenizer, model, st, padding_side, max_length)
        return self._loaded

    def embed(self, texts: list[str]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        from embedswap.legacy_server import pool

        tokenizer, model, st, padding_side, max_length = self._load()
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for batch in _batches(texts, self.batch_size):
                encoded = tokenizer(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                encoded = {k: v.to(self.device) for k, v in encoded.items()}
                hidden = model(**encoded).last_hidden_state
                pooled = pool(hidden, encoded["attention_mask"], st.pooling, padding_side)
                if st.normalize:
                    pooled = F.normalize(pooled, p=2, dim=1)
                out.append(pooled.float().cpu().numpy())
        return np.concatenate(out).astype(np.float32)


# Runs in the engine environment's interpreter (which has vLLM but not embedswap): argv = model dtype
# texts.json out.npy meta.json kwargs.json batch_size
_VLLM_SCRIPT = r"""
import json, sys, time


def main():
    started = time.monotonic()
    import numpy as np
    import vllm
    from vllm import LLM

    model, dtype, texts_path, out_path, meta_path, kwargs_path, batch_size = sys.argv[1:8]
    texts = json.load(open(texts_path, encoding="utf-8"))
    kwargs = json.load(open(kwargs_path, encoding="utf-8"))
    llm = LLM(model=model, runner="pooling", dtype=dtype, **kwargs)
    loaded = time.monotonic()
    size = int(batch_size)
    vectors = []
    for start in range(0, len(texts), size):
        for output in llm.embed(texts[start:start + size], use_tqdm=False):
            vectors.append(output.outputs.embedding)
    embedded = time.monotonic()
    np.save(out_path, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
    actual = None
    for getter in (lambda: llm.llm_engine.model_config.dtype, lambda: llm.model_config.dtype,
                   lambda: llm.llm_engine.vllm_config.model_config.dtype):
        try:
            actual = str(getter()).replace("torch.", "")
            break
        except Exception:
            pass
    try:
        from vllm.platforms import current_platform
        device = str(current_platform.device_type)
    except Exception:
        device = None
    meta = {"vllm": vllm.__version__, "dtype": actual, "device": device, "load_s": round(loaded - started, 1),
            "embed_s": round(embedded - loaded, 2), "texts": len(texts), "batch_size": size}
    with open(meta_path, "w") as handle:
        json.dump(meta, handle)


if __name__ == "__main__":  # vLLM may spawn processes, which re-import this file
    main()
"""


class VllmOfflineBackend:
    """vLLM's offline pooling runner, ``LLM(model, runner="pooling", dtype).embed(texts)``, in a subprocess.

    vLLM lives in the engine environment, so the engine's interpreter (``embedswap.paths.engine_python()``) runs
    a small script; texts go in and vectors come back as temp files. ``dtype="auto"`` is vLLM's own default
    (fp16 for an fp32 pooling checkpoint); after ``embed`` the dtype vLLM actually ran is in ``meta["dtype"]``
    and in ``dtype`` ("auto -> float16"). The subprocess runs in its own process group (killed on timeout and
    when this process dies); its log goes to ``log_path`` (default: a temp file, kept in ``last_log``).
    """

    def __init__(self, model_path: str, dtype: str = "float32", name: str | None = None, python: str | None = None,
                 device: str = "cpu", modality: str = TEXT, batch_size: int = DEFAULT_BATCH_SIZE,
                 enforce_eager: bool = True, max_model_len: int | None = None,
                 engine_kwargs: dict[str, Any] | None = None, timeout_s: float = 1800.0,
                 log_path: str | Path | None = None, env: dict[str, str] | None = None) -> None:
        threshold_for(modality)
        self.model_path = model_path
        self.requested_dtype = dtype
        self.name = name or f"vllm-offline-{dtype}"
        self.python = python
        self.device = device
        self.modality = modality
        self.batch_size = batch_size
        self.kwargs: dict[str, Any] = {"enforce_eager": enforce_eager, "seed": 0, **(engine_kwargs or {})}
        if max_model_len:
            self.kwargs["max_model_len"] = max_model_len
        self.timeout_s = timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.env = dict(env or {})
        self.meta: dict[str, Any] = {}
        self.last_log: str = ""

    @property
    def dtype(self) -> str:
        actual = self.meta.get("dtype")
        if actual and actual != self.requested_dtype:
            return f"{self.requested_dtype} -> {actual}"
        return self.requested_dtype

    def command(self, work: Path, model: str) -> list[str]:
        from embedswap.paths import engine_python

        return [self.python or engine_python(), str(work / "vllm_embed.py"), model, self.requested_dtype,
                str(work / "texts.json"), str(work / "vectors.npy"), str(work / "meta.json"),
                str(work / "kwargs.json"), str(self.batch_size)]

    def embed(self, texts: list[str]) -> np.ndarray:
        from embedswap.models import resolve_model_path
        from embedswap.paths import cache_dir, engine_python
        from embedswap.targets.base import ManagedProcess, log_tail

        python = self.python or engine_python()
        if not Path(python).exists():
            raise ParityBackendError(f"{self.name}: the engine interpreter {python} does not exist (build it with "
                                     "`make engine`, or set $EMBEDSWAP_ENGINE_PYTHON)")
        model = resolve_model_path(self.model_path)
        with tempfile.TemporaryDirectory(prefix="embedswap-vllm-offline-") as tmp:
            work = Path(tmp)
            (work / "vllm_embed.py").write_text(_VLLM_SCRIPT, encoding="utf-8")
            (work / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
            (work / "kwargs.json").write_text(json.dumps(self.kwargs), encoding="utf-8")
            cache = cache_dir()
            # the engine core runs in-process: one interpreter less to start (the vectors do not depend on it)
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                   "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
                   "VLLM_CACHE_ROOT": str(cache / "vllm"), "XDG_CACHE_HOME": str(cache / "xdg"),
                   "PYTHONUNBUFFERED": "1", **self.env}
            log_path = self.log_path or work / "engine.log"
            process = ManagedProcess(self.name, self.command(work, model), env, log_path)
            process.start()
            timed_out = False
            try:
                assert process.process is not None
                process.process.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # also on Ctrl-C: the engine (and its EngineCore child) never outlives the call
                code = process.stop(grace_s=5)
                self.last_log = log_path.read_text(encoding="utf-8", errors="replace")
            if timed_out:
                raise ParityBackendError(f"{self.name}: vLLM did not finish in {self.timeout_s:.0f} s; log tail:\n"
                                         f"{log_tail(log_path, 20)}")
            if code != 0 or not (work / "vectors.npy").exists():
                raise ParityBackendError(f"{self.name}: vLLM exited with code {code}; log tail:\n"
                                         f"{log_tail(log_path, 20)}")
            self.meta = json.loads((work / "meta.json").read_text())
            if self.meta.get("device"):
                self.device = str(self.meta["device"])
            vectors = np.load(work / "vectors.npy", allow_pickle=False)
        if vectors.shape[0] != len(texts):
            raise ParityBackendError(f"{self.name}: {vectors.shape[0]} vectors for {len(texts)} texts")
        return vectors.astype(np.float32)


def backend_from_spec(spec: Any, model_path: str, log_dir: Path | None = None) -> ParityBackend:
    """The backend an experiment's ``parity.backends`` entry (embedswap.config.ParityBackendSpec) describes."""
    if spec.kind == "transformers":
        return TransformersBackend(model_path, device=spec.device, dtype=spec.dtype, name=spec.label)
    if spec.kind == "vllm-offline":
        log_path = log_dir / f"parity-{spec.label}.log" if log_dir is not None else None
        return VllmOfflineBackend(model_path, dtype=spec.dtype, name=spec.label, device=spec.device,
                                  timeout_s=spec.timeout_s, log_path=log_path)
    raise ValueError(f"unknown parity backend kind {spec.kind!r}")


@dataclass
class BackendResult:
    """What :func:`measure_backend` returns: the backend's vectors (or why there are none) and its timing."""

    name: str
    dtype: str
    device: str
    modality: str
    vectors: np.ndarray | None = None
    seconds: float | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def measure_backend(backend: ParityBackend, texts: list[str]) -> BackendResult:
    """Run one backend; a failure becomes ``error`` instead of an exception (it is a finding, and fails the gate)."""
    started = time.perf_counter()
    try:
        vectors = np.asarray(backend.embed(texts), dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - recorded, the gate then fails on it
        return BackendResult(backend.name, backend.dtype, backend.device, backend.modality,
                             error=f"{type(exc).__name__}: {exc}", seconds=round(time.perf_counter() - started, 2),
                             meta=dict(getattr(backend, "meta", {}) or {}))
    return BackendResult(backend.name, backend.dtype, backend.device, backend.modality, vectors=vectors,
                         seconds=round(time.perf_counter() - started, 2),
                         meta=dict(getattr(backend, "meta", {}) or {}))
