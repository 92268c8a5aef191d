"""vLLM's offline pooling runner in the engine environment (vLLM does not live in the kit's environment).

:class:`VllmOfflineBackend` embeds texts with ``LLM(model, runner="pooling", dtype).embed`` in a subprocess of the
engine's interpreter; texts and vectors travel through temp files. :func:`run_vllm_jobs` (defined in
:mod:`embedswap.parity.vllm_configs`) does the same for several named jobs (texts + batch size) in one engine
configuration; the parity matrix runs all its configurations in one process with
:func:`~embedswap.parity.vllm_configs.run_vllm_configs`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.parity.gate import DEFAULT_BATCH_SIZE, TEXT, ParityBackendError, threshold_for
from embedswap.parity.vllm_configs import ConfigRun, EngineConfig, run_vllm_jobs

__all__ = ["VllmOfflineBackend", "run_vllm_jobs"]  # run_vllm_jobs lives in vllm_configs (one process, many configs)

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
        self._given: tuple[list[str], ConfigRun] | None = None  # a run made in a shared engine process

    def shares_engine(self) -> bool:
        """True when its configuration can run in another caller's engine process (the parity matrix's): the
        default engine interpreter and no environment of its own."""
        return self.python is None and not self.env

    def engine_config(self, texts: list[str]) -> EngineConfig:
        """Its ``LLM(...)`` and job as a configuration of :func:`~embedswap.parity.vllm_configs.run_vllm_configs`."""
        return EngineConfig(self.name, self.requested_dtype, [(list(texts), self.batch_size)], dict(self.kwargs))

    def use_run(self, texts: list[str], run: ConfigRun) -> None:
        """The result of :meth:`engine_config` run elsewhere: ``embed(texts)`` returns it instead of starting vLLM."""
        self._given = (list(texts), run)

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
        if self._given is not None and self._given[0] == list(texts):
            return self._from_run(self._given[1], len(texts))
        from embedswap.models import resolve_model_path
        from embedswap.paths import cache_dir, engine_python
        from embedswap.targets.base import ManagedProcess, log_tail
        from embedswap.targets.log_lines import with_error_line

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
                raise ParityBackendError(f"{with_error_line(f'{self.name}: vLLM exited with code {code}', log_path)}"
                                         "; log tail:\n"
                                         f"{log_tail(log_path, 20)}")
            self.meta = json.loads((work / "meta.json").read_text())
            if self.meta.get("device"):
                self.device = str(self.meta["device"])
            vectors = np.load(work / "vectors.npy", allow_pickle=False)
        if vectors.shape[0] != len(texts):
            raise ParityBackendError(f"{self.name}: {vectors.shape[0]} vectors for {len(texts)} texts")
        return vectors.astype(np.float32)

    def _from_run(self, run: ConfigRun, count: int) -> np.ndarray:
        if run.vectors is None:
            raise ParityBackendError(run.error or f"{self.name}: no vectors")
        meta = run.meta
        self.meta = {"vllm": meta.get("vllm"), "dtype": meta.get("dtype"), "device": meta.get("device"),
                     "load_s": meta.get("load_s"), "embed_s": round(sum(meta.get("job_s") or []), 2),
                     "texts": count, "batch_size": self.batch_size, "shared_process": True}
        if meta.get("ran_in"):  # inside another configuration's engine (same dtype): which, and its settings
            self.meta.update({key: meta.get(key) for key in ("ran_in", "max_model_len", "chunked_prefill",
                                                              "max_num_batched_tokens")})
        if self.meta.get("device"):
            self.device = str(self.meta["device"])
        return run.vectors[0].astype(np.float32)
