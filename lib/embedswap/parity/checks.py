"""Step 05's parity matrix: article 003's engineering points, measured on whatever this run has.

- **batch invariance** per dtype: each text alone vs inside batches of 8 and 32, for the legacy server's way
  (plain transformers padding a batch to its longest text, :class:`~embedswap.parity.backends.TransformersBackend`)
  and for the engine (vLLM's offline pooling runner, which schedules each sequence on its own);
- **long context**: inputs near ``max_model_len`` through the engine with chunked prefill off and on, each against
  plain transformers fp32. vLLM keeps chunked prefill only for causal models pooled on the last token: for
  mean/CLS pooling and encoders the row says so (a finding, not a failure);
- **tensor parallel** 2 vs 1 (opt-in): vLLM's CPU workers need ``VLLM_CPU_OMP_THREADS_BIND`` set on a one-NUMA-node
  host; the kit sets ``0|1`` and records it in the row;
- **cold start**: start to healthy and the first workload request against the steady median, from the captures
  of every server the run started.

One engine start per setting, all of them in one engine process (:func:`embedswap.parity.vllm_configs.
run_vllm_configs`: vLLM is imported once; tensor parallel, which needs its own environment, runs apart). The rows are
captured once per attempt (``parity/matrix.json``); cold start is read from captures and needs no engine. Step 05's
offline backends ride in that process, inside the matrix's engine of their dtype where :func:`_joinable`.
"""

from __future__ import annotations

import functools
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.parity.backends import TransformersBackend
from embedswap.parity.gate import ParityBackendError
from embedswap.parity.matrix import setting as matrix_setting
from embedswap.parity.matrix import (
    BATCH_INVARIANCE,
    COLD_START,
    DEFAULT_BATCH_SIZES,
    LONG_CONTEXT,
    TENSOR_PARALLEL,
    MatrixRow,
    batch_invariance,
    chunked_prefill_refusal,
    compare,
    not_run,
)
from embedswap.parity.vllm_configs import ConfigRun, EngineConfig, run_vllm_configs

LEGACY_PADDING = "transformers (legacy padding)"
ENGINE = "vllm-offline"
# the article's long inputs were 4K+ tokens; three lengths up to near the limit (1k/3k/7k of 8192)
LONG_FRACTIONS: tuple[float, ...] = (0.125, 0.375, 0.85)
LONG_CONTEXT_CAP = 8192
Run = tuple[list[np.ndarray] | None, dict[str, Any], str | None]  # an engine configuration's vectors, meta, error
TP_BIND = "0|1"  # one OpenMP thread group per CPU worker (vLLM finds one NUMA node here and refuses two workers)
ENGINE_DEFAULTS: dict[str, Any] = {"enforce_eager": True, "seed": 0}  # every matrix configuration's


@dataclass
class ModelFacts:
    pooling: str
    causal: bool
    limit: int


def model_facts(model_path: str) -> ModelFacts:
    """Pooling (from the sentence-transformers files), whether the model is causal, and its token limit."""
    from transformers import AutoConfig

    from embedswap.legacy.pipeline import read_sentence_transformers_config
    from embedswap.model_limits import model_limits
    from embedswap.models import local_model_folder, resolve_model_path

    path = resolve_model_path(model_path)
    st = read_sentence_transformers_config(local_model_folder(path))
    config = AutoConfig.from_pretrained(path)
    causal = bool(getattr(config, "is_decoder", False)) or any(
        a.endswith("ForCausalLM") for a in getattr(config, "architectures", None) or [])
    # the smallest of positions, tokenizer and sentence-transformers limits: what vLLM derives and enforces
    limit = model_limits(path).tokens or int(getattr(config, "max_position_embeddings", 0) or LONG_CONTEXT_CAP)
    return ModelFacts(st.pooling, causal, limit)


def long_inputs(model_path: str, texts: list[str], max_model_len: int,
                fractions: tuple[float, ...] = LONG_FRACTIONS) -> tuple[list[str], list[int]]:
    """Texts of about ``fraction * max_model_len`` tokens each (the workload's texts joined and cut on tokens),
    and their token counts with the tokenizer's special tokens. Every one fits ``max_model_len``."""
    tokenizer = _tokenizer(model_path)
    special = len(tokenizer("")["input_ids"])
    ids: list[int] = []
    while len(ids) < max_model_len:
        ids += tokenizer(" ".join(texts), add_special_tokens=False)["input_ids"]
    out, counts = [], []
    for fraction in fractions:
        want = max(1, int(fraction * max_model_len) - special)
        text = tokenizer.decode(ids[:want])
        count = len(tokenizer(text)["input_ids"])
        while count > max_model_len and want > 1:  # decode/encode may merge or split a few tokens
            want -= count - max_model_len
            text = tokenizer.decode(ids[:want])
            count = len(tokenizer(text)["input_ids"])
        out.append(text)
        counts.append(count)
    return out, counts


@functools.lru_cache(maxsize=2)
def _tokenizer(model_path: str) -> Any:
    from transformers import AutoTokenizer

    from embedswap.models import resolve_model_path

    return AutoTokenizer.from_pretrained(resolve_model_path(model_path))


def _joinable(rider: EngineConfig, plan: list[EngineConfig], longest: int) -> tuple[str, ...]:
    """The matrix configurations an offline backend's configuration may run inside (the engine process then
    keeps the first whose dtype vLLM resolves as the backend's): every engine argument the backend sets is the
    same there, chunked prefill is not asked for, and its longest text (``longest`` tokens) fits max_model_len.
    There each text is prefilled whole, as the backend's own engine does for a text its step budget holds; vLLM
    embeds a text alike in any batch (the matrix's bit-identical batch rows), so its vectors are the same."""
    hosts = []
    for config in plan:
        kwargs = {**ENGINE_DEFAULTS, **config.kwargs}
        if (not kwargs.get("enable_chunked_prefill") and longest <= int(kwargs.get("max_model_len") or 0)
                and all(kwargs.get(key) == value for key, value in rider.kwargs.items())):
            hosts.append(config.label)
    return tuple(hosts)


def _rider_configs(model_path: str, riders: Sequence[tuple[list[str], Any]],
                   plan: list[EngineConfig]) -> list[EngineConfig]:
    configs = []  # each rider's configuration, with the matrix configurations it may join (one engine start)
    for texts, backend in riders:
        config = backend.engine_config(texts)
        if plan and texts:
            longest = max(len(ids) for ids in _tokenizer(model_path)(list(texts))["input_ids"])
            config.join = _joinable(config, plan, longest)
        configs.append(config)
    return configs


def _engine_setting(meta: dict[str, Any]) -> dict[str, Any]:
    keys = ("vllm", "dtype", "chunked_prefill", "max_num_batched_tokens", "max_model_len", "tensor_parallel_size",
            "load_s", "job_s")
    return {k: meta.get(k) for k in keys if k in meta}


class _Engine:
    """The engine runs of one matrix: every configuration once, in one process where they share an environment
    (:func:`run_vllm_configs`); a configuration's failure becomes its rows' reason."""

    def __init__(self, model_path: str, timeout_s: float, log_dir: Path | None) -> None:
        self.model_path, self.timeout_s, self.log_dir = model_path, timeout_s, log_dir

    def run_all(self, log: str | None, configs: list[EngineConfig], env: dict[str, str] | None = None
                ) -> dict[str, Run]:
        """``(vectors, meta, error)`` per configuration label, from one engine process whose log is
        ``parity-matrix.log`` (``parity-matrix-<log>.log`` with ``log``)."""
        if not configs:
            return {}
        path = (self.log_dir / (f"parity-matrix-{log}.log" if log else "parity-matrix.log")
                if self.log_dir is not None else None)
        configs = [EngineConfig(c.label, c.dtype, c.jobs, {**ENGINE_DEFAULTS, **c.kwargs}, c.join) for c in configs]
        try:
            runs = run_vllm_configs(self.model_path, configs, name=f"matrix-{log}" if log else "matrix", env=env,
                                    timeout_s=self.timeout_s, log_path=path)
        except ParityBackendError as exc:  # the engine interpreter is missing
            return {c.label: (None, {}, str(exc).splitlines()[0][:500]) for c in configs}
        return {c.label: (r.vectors, r.meta, r.error) for c, r in zip(configs, runs)}

    def run(self, label: str, dtype: str, jobs: list[tuple[list[str], int]], kwargs: dict[str, Any],
            env: dict[str, str] | None = None) -> Run:
        """One configuration in a process of its own (tensor parallel: its own environment)."""
        return self.run_all(label, [EngineConfig(f"matrix-{label}", dtype, jobs, kwargs)], env)[f"matrix-{label}"]


def _engine_missing() -> str | None:
    from embedswap.paths import engine_python

    python = engine_python()
    return None if Path(python).exists() else python


def _batch_rows_engine(vectors: list[np.ndarray] | None, meta: dict[str, Any], error: str | None, dtype: str,
                       texts: list[str], gate: float) -> list[MatrixRow]:
    rows = []
    for number, size in enumerate(DEFAULT_BATCH_SIZES, start=1):
        setting = matrix_setting("batch", dtype=dtype, size=size)
        if len(texts) < size:
            rows.append(not_run(BATCH_INVARIANCE, ENGINE, setting, "cpu", gate, "parity_matrix_too_few_texts"))
        elif vectors is None:
            rows.append(not_run(BATCH_INVARIANCE, ENGINE, setting, "cpu", gate, "parity_matrix_engine_failed",
                                error=error))
        else:
            row = compare(BATCH_INVARIANCE, ENGINE, setting, str(meta.get("device") or "cpu"), vectors[0],
                          vectors[number], gate)
            row.figures.update(_engine_setting(meta))
            rows.append(row)
    return rows


def _engine_plan(checks: Any, facts: ModelFacts, sample: list[str], long_texts: list[str],
                 max_model_len: int) -> list[EngineConfig]:
    """The engine configurations of the batch and long-context rows: one per dtype (each text alone, then in
    batches; float32 also the long inputs with chunked prefill off), and chunked prefill on where vLLM keeps it."""
    plan = []
    for dtype in checks.dtypes:
        jobs = [(sample, 1)] + [(sample, size) for size in DEFAULT_BATCH_SIZES if len(sample) >= size] \
            if checks.batch_invariance else []
        if dtype == "float32" and checks.long_context:  # chunked prefill off: the whole input in one step
            jobs = jobs + [(long_texts, 1)]
        if not jobs:
            continue
        kwargs: dict[str, Any] = {"max_model_len": max_model_len}
        if facts.causal and facts.pooling == "lasttoken":
            kwargs.update(enable_chunked_prefill=False, max_num_batched_tokens=max(max_model_len, 8192))
        plan.append(EngineConfig(f"matrix-{dtype}", dtype, jobs, kwargs))
    if checks.long_context and not chunked_prefill_refusal(facts.pooling, facts.causal):
        plan.append(EngineConfig("matrix-chunked", "float32", [(long_texts, 1)],
                                 {"max_model_len": max_model_len, "enable_chunked_prefill": True,
                                  "max_num_batched_tokens": checks.chunk_tokens}))
    return plan


def run_matrix(checks: Any, model_path: str, texts: list[str], gate: float, targets: list[dict[str, Any]],
               log_dir: Path | None = None, device: str = "cpu", riders: Sequence[tuple[list[str], Any]] = ()
               ) -> dict[str, Any]:
    """Every row of the matrix ``checks`` (embedswap.config.ParityChecks) asks for. ``texts`` are the workload's
    documents (the first ``checks.texts`` are used); ``targets`` are the cold-start inputs of
    :func:`cold_start_inputs`. ``device`` is where the legacy-padding rows run (``scripts/gpu_parity.py``: cuda);
    the engine rows record the platform vLLM picked. Returns ``{"rows": [...], "settings": {...}}``.

    ``riders``: (texts, backend) of step 05's offline vLLM backends (:class:`~embedswap.parity.vllm.
    VllmOfflineBackend`), run in the matrix's engine process (inside a matrix engine where :func:`_joinable`);
    each backend is handed its run (``use_run``) and embeds nothing itself."""
    sample = list(texts[: checks.texts])
    facts = model_facts(model_path)
    max_model_len = min(checks.max_model_len or min(facts.limit, LONG_CONTEXT_CAP), facts.limit)
    rows: list[MatrixRow] = []
    engine = _Engine(model_path, checks.timeout_s, log_dir)
    missing = _engine_missing() if checks.engine else None
    long_texts, long_counts = (long_inputs(model_path, texts, max_model_len) if checks.long_context
                               else ([], []))
    long_setting = {"inputs": len(long_counts), "tokens": "/".join(map(str, long_counts)),
                    "max_model_len": max_model_len}
    use_engine = checks.engine and not missing
    plan = _engine_plan(checks, facts, sample, long_texts, max_model_len) if use_engine else []
    extra = _rider_configs(model_path, riders, plan)
    runs = engine.run_all(None, extra + plan)  # every configuration in one engine process
    for (texts_, backend), config in zip(riders, extra):
        backend.use_run(texts_, ConfigRun(*runs[config.label]))
    for dtype in checks.dtypes:
        if checks.batch_invariance:
            rows += batch_invariance(TransformersBackend(model_path, device=device, dtype=dtype, name=LEGACY_PADDING),
                                     sample, gate, platform=device)
        run = runs.get(f"matrix-{dtype}")
        if run is not None and checks.batch_invariance:
            vectors = run[0][: 1 + len(DEFAULT_BATCH_SIZES)] if run[0] is not None else None
            rows += _batch_rows_engine(vectors, run[1], run[2], dtype, sample, gate)

    if checks.long_context:
        rows += _long_rows(checks, facts, model_path, long_texts, long_setting, gate, runs, missing)
    rows += _tensor_parallel_rows(checks, engine, sample, max_model_len, gate, missing)
    if checks.cold_start:
        rows += cold_start_rows(targets)
    return {"rows": [r.as_dict() for r in rows],
            "settings": {"texts": len(sample), "dtypes": list(checks.dtypes), "max_model_len": max_model_len,
                         "long_tokens": long_counts, "pooling": facts.pooling, "causal": facts.causal,
                         "chunk_tokens": checks.chunk_tokens, "tp_bind": TP_BIND if checks.tensor_parallel else None}}


def _long_rows(checks: Any, facts: ModelFacts, model_path: str, long_texts: list[str], setting: dict[str, Any],
               gate: float, runs: dict[str, Run], missing: str | None) -> list[MatrixRow]:
    off = matrix_setting("chunked_off", **setting)
    on = matrix_setting("chunked_on", chunk_tokens=checks.chunk_tokens, **setting)
    if not checks.engine:
        return [not_run(LONG_CONTEXT, ENGINE, s, "cpu", gate, "parity_matrix_off", key="engine") for s in (off, on)]
    if missing:
        return [not_run(LONG_CONTEXT, ENGINE, s, "cpu", gate, "parity_matrix_no_engine", python=missing)
                for s in (off, on)]
    reference = TransformersBackend(model_path, dtype="float32", batch_size=1).embed(long_texts)
    rows = []
    vectors, meta, error = runs.get("matrix-float32", (None, {}, None))
    if vectors is None:
        rows.append(not_run(LONG_CONTEXT, ENGINE, off, "cpu", gate, "parity_matrix_engine_failed",
                            error=error or "no float32 run"))
    else:
        row = compare(LONG_CONTEXT, ENGINE, off, str(meta.get("device") or "cpu"), reference, vectors[-1], gate)
        row.figures.update(_engine_setting(meta))
        rows.append(row)
    refusal = chunked_prefill_refusal(facts.pooling, facts.causal)
    if refusal:
        rows.append(not_run(LONG_CONTEXT, ENGINE, on, "cpu", gate, refusal))
        return rows
    got, meta, error = runs["matrix-chunked"]
    if got is None:
        rows.append(not_run(LONG_CONTEXT, ENGINE, on, "cpu", gate, "parity_matrix_engine_failed", error=error))
    elif meta.get("chunked_prefill") is False:  # vLLM turned it off itself: what ran is not what was asked
        rows.append(not_run(LONG_CONTEXT, ENGINE, on, "cpu", gate, "parity_chunked_prefill_refused"))
    else:
        row = compare(LONG_CONTEXT, ENGINE, on, str(meta.get("device") or "cpu"), reference, got[0], gate)
        row.figures.update(_engine_setting(meta))
        rows.append(row)
    return rows


def _tensor_parallel_rows(checks: Any, engine: _Engine, texts: list[str], max_model_len: int, gate: float,
                          missing: str | None) -> list[MatrixRow]:
    setting = matrix_setting("tp", bind=TP_BIND)
    if not checks.tensor_parallel:
        return [not_run(TENSOR_PARALLEL, ENGINE, setting, "cpu", gate, "parity_tp_opt_in")]
    if not checks.engine:
        return [not_run(TENSOR_PARALLEL, ENGINE, setting, "cpu", gate, "parity_matrix_off", key="engine")]
    if missing:
        return [not_run(TENSOR_PARALLEL, ENGINE, setting, "cpu", gate, "parity_matrix_no_engine", python=missing)]
    cpus = os.cpu_count() or 1
    if cpus < 2:
        return [not_run(TENSOR_PARALLEL, ENGINE, setting, "cpu", gate, "parity_tp_cpus", n=cpus)]
    kwargs = {"max_model_len": max_model_len}
    one, meta_one, error = engine.run("tp1", "float32", [(texts, 8)], kwargs)
    two, meta, error_two = (None, {}, error) if one is None else engine.run(
        "tp2", "float32", [(texts, 8)], {**kwargs, "tensor_parallel_size": 2},
        env={"VLLM_CPU_OMP_THREADS_BIND": TP_BIND, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    if one is None or two is None:
        return [not_run(TENSOR_PARALLEL, ENGINE, setting, "cpu", gate, "parity_matrix_engine_failed",
                        error=error_two or error)]
    row = compare(TENSOR_PARALLEL, ENGINE, setting, str(meta.get("device") or "cpu"), one[0], two[0], gate)
    row.figures.update({**_engine_setting(meta), "VLLM_CPU_OMP_THREADS_BIND": TP_BIND,
                        "tp1_load_s": meta_one.get("load_s")})
    return [row]


# --- cold start, from the captures of the servers this run started ----------------------------------------------
def cold_start_inputs(experiment: Any, attempt: Any) -> list[dict[str, Any]]:
    """Per target: its kind, target.json (start_seconds) and the latencies of its workload requests in order."""
    out = []
    # every server the run started: the roles first, then variants measured for one aspect (matryoshka, ...)
    names = list(dict.fromkeys([*experiment.target_order(), *experiment.targets]))
    for name in names:
        info = attempt.read_json(f"{name}/target.json") if attempt.has(f"{name}/target.json") else None
        requests = attempt.read_jsonl(f"{name}/workload_requests.jsonl") \
            if attempt.has(f"{name}/workload_requests.jsonl") else []
        out.append({"name": name, "kind": experiment.targets[name].kind, "target": info,
                    "latencies_ms": [r.get("latency_ms") for r in requests if r.get("status") == 200]})
    return out


def cold_start_rows(targets: list[dict[str, Any]]) -> list[MatrixRow]:
    """Start to healthy, the first workload request, and the median of the later ones (same batch size)."""
    rows = []
    for target in targets:
        name, info = target["name"], target.get("target") or {}
        if not info:
            continue  # not captured in this attempt: the status section says so
        if target.get("kind") == "external":
            rows.append(not_run(COLD_START, name, matrix_setting("cold_start_first"), "cpu", None,
                                "parity_cold_start_external", name=name))
            continue
        latencies = [float(v) for v in target.get("latencies_ms") or [] if v is not None]
        if len(latencies) < 2 or info.get("start_seconds") is None:
            row = not_run(COLD_START, name, matrix_setting("cold_start_first"), "cpu", None,
                          "parity_cold_start_no_requests", name=name)
            if info.get("start_seconds") is not None:  # started (e.g. probes only): its start is still measured
                row.figures = {"start_s": round(float(info["start_seconds"]), 2)}
            rows.append(row)
            continue
        steady = statistics.median(latencies[1:])
        rows.append(MatrixRow(COLD_START, name, matrix_setting("cold_start"), "cpu",
                              len(latencies), None, None, None, None,
                              figures={"start_s": round(float(info["start_seconds"]), 2),
                                       "first_ms": round(latencies[0], 1), "steady_median_ms": round(steady, 1),
                                       "first_over_steady": round(latencies[0] / steady, 3) if steady else None,
                                       "steady_n": len(latencies) - 1}))
    return rows


MATRIX_FILE = "parity/matrix.json"


def captured_matrix(experiment: Any, attempt: Any, texts: list[str],
                    riders: Sequence[tuple[list[str], Any]] = ()) -> dict[str, Any]:
    """The attempt's matrix: read when captured, else run and captured (never overwritten), with ``riders`` in
    its engine process (:func:`run_matrix`). Not configured (no ``parity.checks``): a not-measured entry with its
    reason, nothing run."""
    from embedswap.models import resolve_model_path
    from embedswap.reasons import not_measured

    checks = experiment.parity.checks
    if checks is None:
        return not_measured("parity_matrix_not_configured")
    if attempt.has(MATRIX_FILE):
        return attempt.read_json(MATRIX_FILE)
    matrix = run_matrix(checks, resolve_model_path(experiment.model.path), texts,
                        float(experiment.parity.text_threshold), cold_start_inputs(experiment, attempt),
                        log_dir=attempt.logs, riders=riders)
    result = {"measured": True, "source": f"captures/{MATRIX_FILE}", **matrix}
    attempt.write_json(MATRIX_FILE, result)
    return result
