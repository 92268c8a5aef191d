"""The host's state around a latency phase: load average, CPU steal and frequency (from /proc where readable) and
a short fixed calibration workload timed before and after.

The servers are measured one after the other, so whatever else loads the host while one of them is measured
enters every candidate/legacy ratio, and the ratio's interval (request noise within the run) does not cover it. The
calibration workload is the same fixed CPU work every time (sorting a seeded array with numpy, single-threaded:
no BLAS thread pool whose size could differ between phases); its time is what this process got of one core at
that moment, so the ratio of two phases' calibration times says how much the host itself changed between them
(:mod:`embedswap.analysis.host_drift` decides with it).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

# One round sorts 1M float64 (~15-60 ms on one core of a small CPU); 4 rounds, ~0.1-0.25 s. A round must span
# several scheduler time slices: a first version sorted 200k values (< 1 ms with numpy's SIMD sort), which ran
# between two slices of a competing job and read a host loaded with a busy loop per core as quiet (measured on
# the shared 2-core host: 0.84 ms in both phases while the legacy server's phase was visibly slowed).
CALIBRATION_SIZE = 1_000_000
CALIBRATION_ROUNDS = 4
# Samples a reading (a reading before and after a phase and after each run; the reading is their mean): a sample
# of 4 rounds spans few scheduler slices and read a host loaded by other sessions' jobs anywhere from quiet to 2x
# (12.3-29.5 ms against 11.7-13.4 ms quiet, 2026-12-04). Three samples cost ~0.2 s a reading. Other jobs' load
# itself is read by ForeignCpu, which the scheduler cannot hide.
CALIBRATION_SAMPLES = 3
PROC = Path("/proc")


def calibration_ms(rounds: int = CALIBRATION_ROUNDS, size: int = CALIBRATION_SIZE) -> float:
    """The mean wall time (ms) of one round of the fixed workload (sort the same seeded array): the mean, not the
    median, since the time lost to other jobs is what it measures."""
    data = np.random.default_rng(0).random(size)
    started = time.perf_counter()
    for _ in range(rounds):
        np.sort(data, kind="quicksort")
    return (time.perf_counter() - started) * 1000 / rounds


def calibration_samples(samples: int = CALIBRATION_SAMPLES) -> list[float]:
    """``samples`` calibration times back to back (ms, rounded): one moment of the host, read more than once."""
    return [round(calibration_ms(), 4) for _ in range(samples)]


def calibration_reading(samples: int = CALIBRATION_SAMPLES) -> float:
    """One reading: the mean of ``samples`` calibration times taken back to back."""
    return round(statistics.fmean(calibration_samples(samples)), 4)


def _cpu_jiffies(proc: Path = PROC) -> list[int] | None:
    """The first eight counters of /proc/stat's ``cpu`` line (all CPUs, in jiffies: user nice system idle iowait
    irq softirq steal), or None where it cannot be read."""
    try:
        line = (proc / "stat").read_text().splitlines()[0].split()
        if line[0] != "cpu" or len(line) < 9:
            return None
        return [int(v) for v in line[1:9]]
    except (OSError, IndexError, ValueError):
        return None


def _cpu_counters(proc: Path = PROC) -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat, or None where it cannot be read."""
    values = _cpu_jiffies(proc)
    return (values[7], sum(values)) if values is not None else None


def busy_cpu_seconds(proc: Path = PROC) -> float | None:
    """CPU seconds all CPUs spent on processes and interrupts since boot (user, nice, system, irq, softirq of
    /proc/stat; idle, iowait and the hypervisor's steal are not work of this host's processes), or None."""
    values = _cpu_jiffies(proc)
    if values is None:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, _steal = values
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pids: list[int]) -> float | None:
    """CPU seconds used so far by the processes ``pids`` and all their children (None when none can be read)."""
    total, read = 0.0, False
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
                read = True
        except psutil.Error:
            continue
    return total if read else None


class ForeignCpu:
    """The CPU the host spent on work other than the server under test and this process (the client and the
    calibration), in cores, per segment between two marks: another job's load, read directly.

    A wall-time gauge reads such a load only when the scheduler lets the gauge share a core with it: with a busy
    loop per core in sessions of their own, the calibration read 12-14 ms (no load) or 21-29 ms (half a core) in
    turn within one phase, while the legacy server ran 3x slower throughout (2026-12-04). The CPU those loops
    used is in /proc/stat whoever shares a core with them. The server's own processes (a vLLM engine's idle
    threads too) are charged to the server, not to the host. Without the server's process ids (an external
    target), the server's CPU cannot be told from another job's: no segment is recorded."""

    def __init__(self, server_pids: Callable[[], list[int]], proc: Path = PROC) -> None:
        self.server_pids = server_pids
        self.proc = proc
        self.cores: list[float] = []
        self._last: tuple[float, float, float, float] | None = None

    def _read(self) -> tuple[float, float, float, float] | None:
        pids = self.server_pids()
        busy = busy_cpu_seconds(self.proc)
        server = tree_cpu_seconds(pids) if pids else None
        if busy is None or server is None:
            return None
        own = psutil.Process().cpu_times()
        return time.monotonic(), busy, server, own.user + own.system

    def mark(self) -> None:
        """End the current segment (recording its foreign cores) and start the next."""
        now = self._read()
        if now is not None and self._last is not None:
            wall = now[0] - self._last[0]
            if wall > 0:
                foreign = (now[1] - self._last[1]) - (now[2] - self._last[2]) - (now[3] - self._last[3])
                self.cores.append(round(max(foreign, 0.0) / wall, 4))
        self._last = now


def _cpu_mhz(proc: Path = PROC) -> float | None:
    """The mean current frequency (MHz) of the CPUs /proc/cpuinfo lists, or None (many VMs do not say)."""
    try:
        text = (proc / "cpuinfo").read_text()
    except OSError:
        return None
    found = [float(line.split(":", 1)[1]) for line in text.splitlines()
             if line.lower().startswith("cpu mhz") and ":" in line]
    return round(statistics.fmean(found), 1) if found else None


def reading(calibrate: bool = True, proc: Path = PROC, samples: int = CALIBRATION_SAMPLES) -> dict[str, Any]:
    """One reading of the host: ``{time, load_1m, load_5m, cpus, cpu_mhz, steal, total, calibration_ms,
    calibration_samples_ms}`` (None where not readable): ``samples`` calibration times back to back, and their
    mean."""
    try:
        load_1m, load_5m, _ = os.getloadavg()
    except OSError:
        load_1m = load_5m = None
    counters = _cpu_counters(proc)
    times = calibration_samples(samples) if calibrate else []
    return {
        "time": time.time(),
        "load_1m": load_1m, "load_5m": load_5m, "cpus": os.cpu_count(),
        "cpu_mhz": _cpu_mhz(proc),
        "steal_jiffies": counters[0] if counters else None, "total_jiffies": counters[1] if counters else None,
        "calibration_ms": round(statistics.fmean(times), 4) if times else None,
        "calibration_samples_ms": times,
    }


def phase(before: dict[str, Any], after: dict[str, Any], between: list[float] | None = None,
          foreign_cores: list[float] | None = None) -> dict[str, Any]:
    """A latency phase's host record: the two readings, the share of CPU time stolen by the hypervisor between
    them (None where /proc/stat has no steal counter), the phase's calibration time (mean of before and after)
    and ``readings_ms``: every calibration reading of the phase in order (before, ``between`` (taken while the
    server idled between two runs), after), each the mean of its back-to-back samples, whose spread is the gauge's
    own noise in that phase (a reading, not a sample, is the unit: samples taken back to back are not
    independent, and counting them as such narrowed the interval of a trend within a phase until noise on a quiet
    host was established as drift);
    ``foreign_cores``: per segment of the phase, the cores' worth of CPU other jobs used (:class:`ForeignCpu`)."""
    steal = None
    if before.get("steal_jiffies") is not None and after.get("steal_jiffies") is not None:
        total = after["total_jiffies"] - before["total_jiffies"]
        steal = (after["steal_jiffies"] - before["steal_jiffies"]) / total if total > 0 else None
    times = [r["calibration_ms"] for r in (before, after) if r.get("calibration_ms")]
    readings = [before.get("calibration_ms"), *(between or []), after.get("calibration_ms")]
    return {"before": before, "after": after, "steal_share": steal,
            "calibration_ms": statistics.fmean(times) if times else None,
            "readings_ms": [round(float(r), 4) for r in readings if r],
            "foreign_cores": list(foreign_cores or [])}

