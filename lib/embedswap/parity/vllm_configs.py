"""Several vLLM engine configurations in ONE engine-interpreter process, each built, used and torn down in turn.

The parity matrix runs vLLM's offline pooling runner in a few configurations (float32, bfloat16, chunked prefill).
One process per configuration paid Python's start and ``import vllm`` each time. Measured on a 2-core host with
the tiny Qwen3 (CPU-seconds, the host shared): one process with one configuration took 16.8 CPU-s, of which the
imports 7.0 and ``LLM(...)`` 6.1; a 2nd and 3rd ``LLM(...)`` in the same process took about 3.7 each. The
matrix's three configurations took 51 CPU-s (80 s wall) in three processes and 32 CPU-s (49 s wall) in one. So
:func:`run_vllm_configs` imports vLLM once and builds each configuration's ``LLM`` in turn; after each it calls the
engine core's ``shutdown()`` (vLLM V1 freezes the garbage collector when an engine starts and undoes it there, with
its process groups) and drops the ``LLM`` before the next one. The vectors are bitwise the same as from a process
per configuration (measured on the matrix's three configurations, every job).

A configuration that raises is recorded for that configuration only (``error``: the exception's own line) and the
next one runs. A process that dies or stops making progress for ``timeout_s`` (a crash, an out-of-memory kill, a
hang) fails the configuration it was running; the ones after it run in a new process. Every process appends to
the same log. :func:`run_vllm_jobs` is the one-configuration form that raises on failure.

A configuration may name others it can run inside (``join``: step 05's offline backend and the matrix's setting
of the same dtype). The engine process asks vLLM which dtype each would run (``EngineArgs.create_model_config``,
no engine started: ``auto`` depends on the checkpoint and the platform) and, where they match, embeds the
joiner's jobs in the other's engine: one ``LLM(...)`` less (about 3.7 CPU-s and 5 s wall for the tiny Qwen3 on
2 cores, measured above). Its result says where it ran (``ran_in``, and that engine's settings in ``meta``).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.parity.gate import ParityBackendError

# Runs in the engine environment's interpreter (which has vLLM but not embedswap): argv = spec.json out_dir.
# spec = {model, configs: [{index, label, dtype, kwargs, jobs: [{texts, batch_size}], join: [label]}]}.
# Configuration i leaves out_dir/<i>.npz (the vectors of job j as "job<j>") and <i>.json (what the engine ran), or
# <i>.error (the traceback); the .json / .error file is renamed into place last, so its presence means the
# configuration is done. One that joins another (same resolved dtype) is done when that one is.
_CONFIGS_SCRIPT = r"""
import gc, json, os, sys, time, traceback


def _get(obj, *names):
    for name in names:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def _publish(path, text):
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def _shutdown(llm):
    # vLLM V1 freezes the gc when an engine starts; EngineCore.shutdown unfreezes it and destroys its process groups
    core = _get(llm, "llm_engine", "engine_core")
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()


def _resolved_dtype(model, dtype):
    # what LLM(...) would run, without starting an engine: "auto" depends on the checkpoint and the platform
    from vllm.engine.arg_utils import EngineArgs

    return str(EngineArgs(model=model, runner="pooling", dtype=dtype).create_model_config().dtype)


def _joins(model, configs):
    # {index of a configuration: the configuration it runs inside}, where vLLM resolves both to the same dtype
    by_label, resolved, out = {c["label"]: c for c in configs}, {}, {}

    def dtype(config):
        if config["dtype"] not in resolved:
            resolved[config["dtype"]] = _resolved_dtype(model, config["dtype"])
        return resolved[config["dtype"]]

    for config in configs:
        for label in config.get("join", ()):
            host = by_label.get(label)
            try:
                same = host is not None and host["index"] not in out and dtype(config) == dtype(host)
            except Exception:  # not resolvable here: it runs on its own, as without join
                traceback.print_exc()
                same = False
            if same:
                print(f"=== embedswap: {config['label']} joins {label} ({dtype(host)}) ===", flush=True)
                out[config["index"]] = host
                break
    return out


def _run(LLM, np, vllm, model, config, import_s):
    t0 = time.monotonic()
    llm = LLM(model=model, runner="pooling", dtype=config["dtype"], **config["kwargs"])
    try:
        loaded = time.monotonic()
        arrays, seconds = {}, []
        for number, job in enumerate(config["jobs"]):
            t1 = time.monotonic()
            texts, size, vectors = job["texts"], int(job["batch_size"]), []
            for start in range(0, len(texts), size):
                for output in llm.embed(texts[start:start + size], use_tqdm=False):
                    vectors.append(output.outputs.embedding)
            arrays[f"job{number}"] = np.asarray(vectors, dtype=np.float32)
            seconds.append(round(time.monotonic() - t1, 3))
        engine = _get(llm, "llm_engine", "vllm_config")
        try:
            from vllm.platforms import current_platform
            device = str(current_platform.device_type)
        except Exception:
            device = None
        return arrays, {"vllm": vllm.__version__, "device": device, "import_s": import_s,
                        "load_s": round(loaded - t0, 2), "job_s": seconds,
                        "dtype": str(_get(engine, "model_config", "dtype")).replace("torch.", ""),
                        "chunked_prefill": _get(engine, "scheduler_config", "enable_chunked_prefill"),
                        "max_num_batched_tokens": _get(engine, "scheduler_config", "max_num_batched_tokens"),
                        "max_model_len": _get(engine, "model_config", "max_model_len"),
                        "tensor_parallel_size": _get(engine, "parallel_config", "tensor_parallel_size")}
    finally:
        _shutdown(llm)
        del llm
        gc.collect()


def main():
    started = time.monotonic()
    import numpy as np
    import vllm
    from vllm import LLM

    import_s = round(time.monotonic() - started, 2)
    spec_path, out = sys.argv[1:3]
    spec = json.load(open(spec_path, encoding="utf-8"))
    joins = _joins(spec["model"], spec["configs"])
    for config in spec["configs"]:
        if config["index"] in joins:
            continue  # run inside its host, below
        guests = [c for c in spec["configs"] if joins.get(c["index"]) is config]
        print(f"=== embedswap: configuration {config['label']} ===", flush=True)
        jobs = config["jobs"] + [job for guest in guests for job in guest["jobs"]]
        try:
            arrays, meta = _run(LLM, np, vllm, spec["model"], {**config, "jobs": jobs}, import_s)
        except Exception:
            text = traceback.format_exc()
            print(text, file=sys.stderr, flush=True)
            for done in guests + [config]:
                _publish(os.path.join(out, str(done["index"])) + ".error", text)
        else:
            start = 0
            for done in [config] + guests:  # each its own jobs' vectors and times; the host's own meta unchanged
                count, path = len(done["jobs"]), os.path.join(out, str(done["index"]))
                np.savez(path + ".npz", **{f"job{j}": arrays[f"job{start + j}"] for j in range(count)})
                own = {**meta, "job_s": meta["job_s"][start:start + count]}
                if done is not config:
                    own["ran_in"] = config["label"]
                _publish(path + ".json", json.dumps(own, default=str))
                start += count
        gc.collect()


if __name__ == "__main__":  # vLLM may spawn processes (tensor parallel), which re-import this file
    main()
"""


@dataclass
class EngineConfig:
    """One ``LLM(model, runner="pooling", dtype, **kwargs)`` and the jobs (texts, batch size) it embeds.
    ``label`` names it in errors and in the log (``matrix-float32``). ``join``: labels of configurations of the
    same call it may run inside, taking their engine arguments (the first whose dtype vLLM resolves as its own);
    the caller names only those whose arguments give its texts the vectors its own would."""

    label: str
    dtype: str
    jobs: list[tuple[list[str], int]]
    kwargs: dict[str, Any] = field(default_factory=dict)
    join: tuple[str, ...] = ()


@dataclass
class ConfigRun:
    """A configuration's vectors per job and what the engine ran, or ``error`` (one line) and no vectors."""

    vectors: list[np.ndarray] | None
    meta: dict[str, Any]
    error: str | None = None


def _engine_env(env: dict[str, str] | None) -> dict[str, str]:
    from embedswap.paths import cache_dir

    cache = cache_dir()
    # the engine core runs in-process: one interpreter less to start (the vectors do not depend on it)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
            "VLLM_CACHE_ROOT": str(cache / "vllm"), "XDG_CACHE_HOME": str(cache / "xdg"), "PYTHONUNBUFFERED": "1",
            **(env or {})}


def _collect(work: Path, config: EngineConfig, index: int) -> ConfigRun | None:
    """The configuration's result as the process left it; None when it has not finished."""
    from embedswap.targets.log_lines import error_line

    out = work / "out"
    if (out / f"{index}.error").exists():
        text = (out / f"{index}.error").read_text(encoding="utf-8", errors="replace")
        last = text.strip().splitlines()[-1] if text.strip() else "no traceback"
        return ConfigRun(None, {}, f"{config.label}: vLLM failed: {error_line(text) or last}"[:500])
    if not (out / f"{index}.json").exists():
        return None
    meta = json.loads((out / f"{index}.json").read_text(encoding="utf-8"))
    with np.load(out / f"{index}.npz", allow_pickle=False) as data:
        vectors = [np.asarray(data[f"job{j}"], dtype=np.float32) for j in range(len(config.jobs))]
    for (texts, _), got in zip(config.jobs, vectors):
        if len(got) != len(texts):
            return ConfigRun(None, meta, f"{config.label}: {len(got)} vectors for {len(texts)} texts")
    return ConfigRun(vectors, meta)


def run_vllm_configs(model_path: str, configs: list[EngineConfig], name: str = "vllm-configs",
                     python: str | None = None, env: dict[str, str] | None = None, timeout_s: float = 1800.0,
                     log_path: str | Path | None = None) -> list[ConfigRun]:
    """Every configuration in one engine process (a new one only after a process died or hung), in order; one
    :class:`ConfigRun` per configuration. ``timeout_s`` is per configuration (since the previous one finished).

    Runs in the engine interpreter (``embedswap.paths.engine_python()``) in its own process group, stopped on
    return, on timeout and on Ctrl-C; ``env`` adds to the engine's environment.
    """
    from embedswap.models import resolve_model_path
    from embedswap.paths import engine_python
    from embedswap.targets.base import ManagedProcess
    from embedswap.targets.log_lines import with_error_line

    python = python or engine_python()
    if not Path(python).exists():
        raise ParityBackendError(f"{name}: the engine interpreter {python} does not exist (build it with "
                                 "`make engine`, or set $EMBEDSWAP_ENGINE_PYTHON)")
    model = resolve_model_path(model_path)
    results: dict[int, ConfigRun] = {}
    with tempfile.TemporaryDirectory(prefix="embedswap-vllm-configs-") as tmp:
        work = Path(tmp)
        (work / "out").mkdir()
        (work / "vllm_configs.py").write_text(_CONFIGS_SCRIPT, encoding="utf-8")
        log = Path(log_path) if log_path else work / "engine.log"
        pending = list(range(len(configs)))
        while pending:
            spec = {"model": model, "configs": [
                {"index": i, "label": configs[i].label, "dtype": configs[i].dtype, "kwargs": configs[i].kwargs,
                 "jobs": [{"texts": list(texts), "batch_size": int(size)} for texts, size in configs[i].jobs],
                 "join": list(configs[i].join)}
                for i in pending]}
            (work / "spec.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
            process = ManagedProcess(name, [python, str(work / "vllm_configs.py"), str(work / "spec.json"),
                                            str(work / "out")], _engine_env(env), log)
            process.start()
            try:
                timed_out = _wait(process, lambda: sum(any((work / "out" / f"{i}{end}").exists()
                                                           for end in (".json", ".error")) for i in pending),
                                  timeout_s)
            finally:  # also on Ctrl-C: the engine never outlives the call
                code = process.stop(grace_s=5)
            for i in pending:
                done = _collect(work, configs[i], i)
                if done is not None:
                    results[i] = done
            stuck = next((i for i in pending if i not in results), None)
            if stuck is not None:  # the configuration the process was running when it died or hung
                label = configs[stuck].label
                why = (f"{label}: vLLM did not finish in {timeout_s:.0f} s" if timed_out else
                       with_error_line(f"{label}: vLLM exited with code {code}", log))
                results[stuck] = ConfigRun(None, {}, why.splitlines()[0][:500])
            pending = [i for i in pending if i not in results]
    return [results[i] for i in range(len(configs))]


def _wait(process: Any, finished: Any, timeout_s: float) -> bool:
    """Wait for the process to exit; True when no configuration finished for ``timeout_s`` (then it is stopped)."""
    assert process.process is not None
    seen, deadline = 0, time.monotonic() + timeout_s
    while True:
        try:
            process.process.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            return False
        except subprocess.TimeoutExpired:
            pass
        now_done = finished()
        if now_done > seen:
            seen, deadline = now_done, time.monotonic() + timeout_s
        elif time.monotonic() >= deadline:
            return True


def run_vllm_jobs(model_path: str, dtype: str, jobs: list[tuple[list[str], int]], engine_kwargs: dict[str, Any],
                  name: str = "vllm-matrix", python: str | None = None, env: dict[str, str] | None = None,
                  timeout_s: float = 1800.0, log_path: str | Path | None = None) -> tuple[list[np.ndarray],
                                                                                          dict[str, Any]]:
    """One engine configuration (``LLM(model, runner="pooling", dtype, **engine_kwargs)``) embedding each job's
    texts in batches of the job's size: the vectors per job and what the engine ran (``meta``). A failure raises
    :class:`ParityBackendError` whose first line carries the engine's own error line, then the log's tail."""
    from embedswap.targets.base import log_tail

    with tempfile.TemporaryDirectory(prefix="embedswap-vllm-jobs-") as tmp:
        log = Path(log_path) if log_path else Path(tmp) / "engine.log"
        run = run_vllm_configs(model_path, [EngineConfig(name, dtype, jobs, {"seed": 0, **engine_kwargs})],
                               name=name, python=python, env=env, timeout_s=timeout_s, log_path=log)[0]
        if run.vectors is None:
            raise ParityBackendError(f"{run.error}; log tail:\n{log_tail(log, 20)}")
    return run.vectors, run.meta
