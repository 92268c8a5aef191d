"""Open-loop senders on Ray (``latency.open_loop.workers > 1``): a local Ray the kit starts and stops, or a cluster.

Ray is optional (``pip install 'embedswap[scale]'``). With no ``ray_address`` the kit starts a head node of its
own (``ray start --head --block`` in a new session, so the whole of Ray is one process group the kit owns), joins
it, and at the end leaves it and ends that process group: nothing is left running. With ``auto`` (the cluster this
process runs in, e.g. a KubeRay RayJob's entrypoint) or ``ray://host:port`` the kit only joins.

Each worker is a Ray actor, placed one per CPU-slot and spread over nodes, that holds the request bodies and the
legacy vectors once and sends one part per run (:func:`embedswap.measure.open_loop_workers.send_part`). An actor
that dies mid-run (its process killed, its node lost) is never restarted: the run is recorded with that worker
lost, and the pool starts a fresh actor for the next run.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from embedswap.measure.errors import StepFailed
from embedswap.measure.open_loop_workers import Part, PartResult, SendSettings, send_part

EXTRA_MESSAGE = "latency.open_loop.workers > 1 needs Ray, which is not installed: pip install 'embedswap[scale]'"
START_TIMEOUT_S = 180.0  # a cold head node on a loaded 2-core host takes tens of seconds
STOP_TIMEOUT_S = 30.0
READY_LINE = b"Ray runtime started"


def import_ray() -> Any:
    """Ray, or :class:`StepFailed` with one line naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise StepFailed(EXTRA_MESSAGE) from None
    return ray


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRay:
    """A head node in its own process group: ``start()`` returns its address, ``stop()`` ends the group."""

    def __init__(self, num_cpus: int, log: Path | None = None) -> None:
        self.num_cpus = num_cpus
        self.process: subprocess.Popen[bytes] | None = None
        self.temp_dir = tempfile.mkdtemp(prefix="embedswap-ray-")
        self.log = log or Path(self.temp_dir) / "ray-start.log"
        self.address = ""

    def start(self) -> str:
        """Start the head node; its address once ``wait_ready`` has returned."""
        port = _free_port()
        command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}",
                   f"--num-cpus={self.num_cpus}", "--include-dashboard=false", "--disable-usage-stats",
                   f"--temp-dir={self.temp_dir}"]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        # a worker process that has not registered within Ray's 60 s default is killed as hung; on a loaded 2-core
        # host a worker's Python start-up alone can take that long (measured at load 16), so it gets longer
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_register_timeout_seconds": "600"}
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                            env=env)
        self.address = f"127.0.0.1:{port}"
        return self.address

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until ``ray start`` says the head node is up (joining earlier can leave the driver hanging)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with open(self.log, "rb") as text:
                text.seek(self._offset)
                if READY_LINE in text.read():
                    return
            if not self.running():
                raise StepFailed(f"latency.open_loop: the local Ray head node exited at start; see {self.log}")
            time.sleep(0.5)
        raise StepFailed(f"latency.open_loop: the local Ray head node did not start in {timeout_s:g} s; "
                         f"see {self.log}")

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _group_alive(self, group: int) -> bool:
        """Whether a process of the group is left, the head reaped first: the head is this process's child, and
        until reaped it is a zombie that ``killpg(group, 0)`` still finds, so every stop waited out the whole
        SIGTERM wait and the SIGKILL one (35 s measured; the group had gone in well under one)."""
        if self.process is not None:
            self.process.poll()
        return _group_alive(group)

    def stop(self) -> None:
        """SIGTERM to the whole group (``ray start --block`` stops its processes on it), SIGKILL what is left."""
        if self.process is None:
            return
        group = self.process.pid
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self._group_alive(group):
                time.sleep(0.2)
            if not self._group_alive(group):
                break
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _connect(ray: Any, address: str) -> None:
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except Exception as exc:  # ConnectionError: no cluster there
        raise StepFailed(f"latency.open_loop: could not join Ray at {address}: {exc}"[:500]) from None


class RayPool:
    """``workers`` actors on Ray; ``run`` sends one part on each and collects what comes back."""

    def __init__(self, ray: Any, workers: int, settings: SendSettings) -> None:
        self.ray = ray
        self.workers = workers
        self.settings_ref = ray.put(settings)
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Sender)
        self.actors: list[Any] = [self._new_actor() for _ in range(workers)]
        ray.get([actor.ready.remote() for actor in self.actors])

    def _new_actor(self) -> Any:
        return self._actor_class.options(scheduling_strategy="SPREAD").remote(self.settings_ref)

    def pids(self) -> list[int]:
        """The process of each worker (a test kills one to check a lost worker voids its run)."""
        return [int(pid) for pid in self.ray.get([actor.pid.remote() for actor in self.actors])]

    def run(self, parts: list[Part], start_at: float) -> list[PartResult]:
        refs = [self.actors[part.worker].send.remote(part, start_at) for part in parts]
        results = []
        for part, ref in zip(parts, refs, strict=True):
            try:
                results.append(self.ray.get(ref))
            except self.ray.exceptions.RayError as exc:
                reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
                results.append(PartResult(part.worker, None, None, reason))
                self.actors[part.worker] = self._new_actor()  # the next run gets a fresh sender
        return results


class _Sender:
    """One worker: the settings arrive once; each run is one part."""

    def __init__(self, settings: SendSettings) -> None:
        self.settings = settings

    def ready(self) -> bool:
        return True

    def pid(self) -> int:
        return os.getpid()

    def send(self, part: Part, start_at: float) -> PartResult:
        return send_part(self.settings, part, start_at)


@contextmanager
def ray_pool(workers: int, address: str | None, settings: SendSettings, log: Path | None = None,
             num_cpus: int | None = None) -> Iterator[RayPool]:
    """A pool of ``workers`` senders on Ray at ``address`` (None: a local head node started here, stopped after)."""
    ray = import_ray()
    local = LocalRay(num_cpus or max(2, workers), log) if address is None else None
    try:
        if local is not None:
            local.start()
            local.wait_ready()
        _connect(ray, local.address if local is not None else address)  # type: ignore[arg-type]
        try:
            yield RayPool(ray, workers, settings)
        finally:
            ray.shutdown()
    finally:
        if local is not None:
            local.stop()
