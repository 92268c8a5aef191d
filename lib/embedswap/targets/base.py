"""What every target does: start, wait until healthy, describe, stop. Started servers run in their own process
group with their log in the attempt folder, and are torn down on success, error or Ctrl-C."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import psutil

from embedswap.config.sections import ModelConfig
from embedswap.redact import redact, redact_file, register_secret_env
from embedswap.targets.log_lines import with_error_line
from embedswap.wire.api_shapes import ApiShape

LOG_TAIL_LINES = 40
# Seconds between two readiness checks while a server starts. Was 1 s: the legacy server is up after ~4 s and the
# wait overshot that by 0.5 s on average (up to 1 s) per server start, twice in the smallest run, and the overshoot
# entered the recorded start_seconds. Each check is one GET on wait_healthy's open client (~0.15 ms of CPU).
HEALTH_POLL_S = 0.2


class TargetStartError(RuntimeError):
    """A server did not become healthy: exited, or timed out. The message carries the tail of its log."""


def die_with_parent(command: list[str]) -> list[str]:
    """``command`` prefixed so that it gets SIGTERM when the process that started it dies (a Jupyter kernel
    killed by papermill must not leave a server behind): ``setpriv --pdeathsig TERM`` (util-linux) sets the
    parent-death signal and execs the command, so the server keeps the pid that Popen returned.

    Not a ``preexec_fn``: Python documents it as unsafe in a threaded program (a Jupyter kernel is one), since the
    child may deadlock on a lock another thread held at fork. The process group comes from
    ``start_new_session=True``, which Popen does in C. Where setpriv is missing the command runs as it is, and the
    servers a dead kernel left are swept by their pid files (``sweep_process_groups``) at the next run.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *command] if setpriv else list(command)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    if not path.exists():
        return "(no log)"
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(text[-lines:])


def port_in_use(host: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


class ManagedProcess:
    """A server process in its own process group, logging to a file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path, cwd: Path | None = None):
        self.name = name
        self.command = command
        self.env = env
        self.log_path = log_path
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"$ {redact(' '.join(self.command))}\n".encode())
        log.flush()
        self.process = subprocess.Popen(
            die_with_parent(self.command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,  # its own session and process group, torn down as one
        )
        log.close()
        self.pid_file.write_text(f"{self.process.pid}\n")

    @property
    def pid_file(self) -> Path:
        # A record of the process group, so `embedswap run` can sweep servers a crashed notebook left behind.
        return self.log_path.with_suffix(".pid")

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def rss_bytes(self) -> int | None:
        """Resident memory of the server and all its children (vLLM runs its engine in a child process)."""
        if self.process is None or self.process.poll() is not None:
            return None
        try:
            root = psutil.Process(self.process.pid)
            return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            return None

    def stop(self, grace_s: float = 20.0) -> int | None:
        """SIGTERM to the whole group, then SIGKILL after the grace period. Idempotent."""
        if self.process is None:
            return None
        pgid = self.process.pid  # start_new_session: the group id is the leader's pid
        if self.process.poll() is None:
            _signal_group(pgid, signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(pgid, signal.SIGKILL)
                self.process.wait(timeout=10)
        # children that outlived the leader (e.g. an engine process) go too
        _signal_group(pgid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return self.process.returncode


def sweep_process_groups(folder: Path) -> list[int]:
    """Kill the process groups recorded in ``folder/*.pid`` that are still alive; returns the group ids killed."""
    killed = []
    for pid_file in folder.glob("*.pid"):
        try:
            pgid = int(pid_file.read_text().strip())
        except ValueError:
            pid_file.unlink(missing_ok=True)
            continue
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            pid_file.unlink(missing_ok=True)
            continue
        except PermissionError:
            continue
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        _signal_group(pgid, signal.SIGKILL)
        pid_file.unlink(missing_ok=True)
        killed.append(pgid)
    return killed


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Target(ABC):
    """One server under test. Use as a context manager: ``with target: ...`` starts it and always stops it."""

    kind: str = "abstract"
    _health_client: httpx.Client | None = None  # open while wait_healthy polls (health_get)

    def __init__(self, name: str, config: Any, model: ModelConfig, model_path: str, log_dir: Path):
        self.name = name
        self.config = config
        self.model = model
        self.model_path = model_path
        self.served_name = model.served_name
        self.log_dir = log_dir
        self.processes: list[ManagedProcess] = []
        self.start_seconds: float | None = None
        self.memory_before: int | None = None
        self.memory_after_start: int | None = None

    # --- what each kind defines ------------------------------------------------------------------------------
    @property
    @abstractmethod
    def base_url(self) -> str: ...

    @abstractmethod
    def launch(self) -> None:
        """Start the processes (nothing for an external server)."""

    def health_url(self) -> str:
        return f"{self.base_url}/health"

    def version(self) -> str | None:
        return None

    def headers(self) -> dict[str, str]:
        return {}

    def verify_tls(self) -> bool:
        return True

    # the routes and request shape of the server (embedswap.wire.api_shapes); an external target may have others
    def api_shape(self) -> ApiShape:
        return "openai"

    def embeddings_path(self) -> str:
        return "/v1/embeddings"

    def models_path(self) -> str | None:
        return "/v1/models"

    # --- shared behaviour --------------------------------------------------------------------------------------
    def preflight(self) -> None:
        """Problems that can be known before anything starts: a port already taken."""
        port = getattr(self.config, "port", None)
        if self.processes == [] and port and self.kind != "external" and port_in_use(self.config.host, port):
            raise TargetStartError(f"target '{self.name}': port {self.config.host}:{port} is already in use")

    def start(self) -> None:
        self.preflight()
        self.memory_before = psutil.virtual_memory().available
        started = time.monotonic()
        try:
            self.launch()
            self.wait_healthy(self.config.startup_timeout_s)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        self.memory_after_start = psutil.virtual_memory().available

    def wait_healthy(self, timeout_s: float, poll_s: float = HEALTH_POLL_S) -> None:
        with httpx.Client(verify=self.verify_tls()) as client:
            self._health_client = client
            try:
                self._poll_healthy(timeout_s, poll_s)
            finally:
                self._health_client = None

    def health_get(self, url: str, timeout: float, headers: dict[str, str] | None = None) -> httpx.Response:
        """GET for a readiness check: on wait_healthy's one client while it polls. ``httpx.get`` builds a client
        and its TLS context every call: 22 ms of CPU a check against 0.15 ms on an open client (measured on the
        shared 2-core host), taken from the server that is loading beside it."""
        if self._health_client is None:
            return httpx.get(url, timeout=timeout, headers=headers, verify=self.verify_tls())
        return self._health_client.get(url, timeout=timeout, headers=headers)

    def _poll_healthy(self, timeout_s: float, poll_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last_error = ""
        while time.monotonic() < deadline:
            for proc in self.processes:
                code = proc.exit_code()
                if code is not None:
                    what = f"target '{self.name}': {proc.name} exited with code {code} during start-up"
                    raise TargetStartError(  # the engine's own error line first: the report shows one line
                        f"{with_error_line(what, proc.log_path)}.\n"
                        f"--- last lines of {proc.log_path} ---\n{log_tail(proc.log_path)}"
                    )
            try:
                if self.is_ready():
                    return
            except httpx.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(poll_s)
        tails = "\n".join(f"--- last lines of {p.log_path} ---\n{log_tail(p.log_path)}" for p in self.processes)
        raise TargetStartError(
            f"target '{self.name}' not healthy after {timeout_s:.0f} s at {self.health_url()} ({last_error})\n{tails}"
        )

    def is_ready(self) -> bool:
        response = self.health_get(self.health_url(), timeout=5, headers=self.headers())
        return response.status_code == 200

    def alive(self) -> bool:
        return all(p.exit_code() is None for p in self.processes)

    def pids(self) -> list[int]:
        """The process ids of the server's running processes (none for a server the kit did not start)."""
        return [p.process.pid for p in self.processes if p.process is not None and p.process.poll() is None]

    def rss_bytes(self) -> int | None:
        sizes = [p.rss_bytes() for p in self.processes]
        return sum(s for s in sizes if s) or None

    def stop(self) -> dict[str, int | None]:
        codes = {p.name: p.stop() for p in reversed(self.processes)}
        for process in self.processes:  # a server may print its arguments (vLLM: api_key) or a request header
            redact_file(process.log_path)
        return codes

    def __enter__(self) -> Target:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def commands(self) -> list[str]:
        # shell-quoted, so a reader can copy the command from the report and run it (secrets redacted)
        return [redact(shlex.join(p.command)) for p in self.processes]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "base_url": redact(self.base_url),
            "version": self.version(),
            "commands": self.commands(),
            "start_seconds": None if self.start_seconds is None else round(self.start_seconds, 2),
            "rss_bytes": self.rss_bytes(),
            "host_available_bytes_before_start": self.memory_before,
            "host_available_bytes_after_start": self.memory_after_start,
            "logs": [str(p.log_path) for p in self.processes],
        }


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for servers: offline hub, and no leakage of the kit's virtualenv into the engine's."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    register_secret_env(extra or {})  # a target's env: HF_TOKEN and the like never reach a written file
    env.update(extra or {})
    return env
