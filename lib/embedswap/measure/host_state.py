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
from pathlib import Path
from typing import Any

import numpy as np

# One round sorts 1M float64 (~15-60 ms on one core of a small CPU); 4 rounds, ~0.1-0.25 s. A round must span
# several scheduler time slices: a first version sorted 200k values (< 1 ms with numpy's SIMD sort), which ran
# between two slices of a competing job and read a host loaded with a busy loop per core as quiet (measured on
# the shared 2-core host: 0.84 ms in both phases while the legacy server's phase was visibly slowed).
CALIBRATION_SIZE = 1_000_000
CALIBRATION_ROUNDS = 4
PROC = Path("/proc")


def calibration_ms(rounds: int = CALIBRATION_ROUNDS, size: int = CALIBRATION_SIZE) -> float:
    """The mean wall time (ms) of one round of the fixed workload (sort the same seeded array): the mean, not the
    median, since the time lost to other jobs is what it measures."""
    data = np.random.default_rng(0).random(size)
    started = time.perf_counter()
    for _ in range(rounds):
        np.sort(data, kind="quicksort")
    return (time.perf_counter() - started) * 1000 / rounds


def _cpu_counters(proc: Path = PROC) -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat, or None where it cannot be read."""
    try:
        line = (proc / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not line or line[0] != "cpu" or len(line) < 9:
        return None
    values = [int(v) for v in line[1:9]]  # user nice system idle iowait irq softirq steal
    return values[7], sum(values)


def _cpu_mhz(proc: Path = PROC) -> float | None:
    """The mean current frequency (MHz) of the CPUs /proc/cpuinfo lists, or None (many VMs do not say)."""
    try:
        text = (proc / "cpuinfo").read_text()
    except OSError:
        return None
    found = [float(line.split(":", 1)[1]) for line in text.splitlines()
             if line.lower().startswith("cpu mhz") and ":" in line]
    return round(statistics.fmean(found), 1) if found else None


def reading(calibrate: bool = True, proc: Path = PROC) -> dict[str, Any]:
    """One reading of the host: ``{time, load_1m, load_5m, cpus, cpu_mhz, steal, total, calibration_ms}``
    (None where not readable)."""
    try:
        load_1m, load_5m, _ = os.getloadavg()
    except OSError:
        load_1m = load_5m = None
    counters = _cpu_counters(proc)
    return {
        "time": time.time(),
        "load_1m": load_1m, "load_5m": load_5m, "cpus": os.cpu_count(),
        "cpu_mhz": _cpu_mhz(proc),
        "steal_jiffies": counters[0] if counters else None, "total_jiffies": counters[1] if counters else None,
        "calibration_ms": round(calibration_ms(), 4) if calibrate else None,
    }


def phase(before: dict[str, Any], after: dict[str, Any], between: list[float] | None = None) -> dict[str, Any]:
    """A latency phase's host record: the two readings, the share of CPU time stolen by the hypervisor between
    them (None where /proc/stat has no steal counter), the phase's calibration time (mean of before and after)
    and ``readings_ms``: every calibration time of the phase in order (before, ``between`` (taken while the server
    idled between two repeats), after), whose spread is the gauge's own noise in that phase."""
    steal = None
    if before.get("steal_jiffies") is not None and after.get("steal_jiffies") is not None:
        total = after["total_jiffies"] - before["total_jiffies"]
        steal = (after["steal_jiffies"] - before["steal_jiffies"]) / total if total > 0 else None
    times = [r["calibration_ms"] for r in (before, after) if r.get("calibration_ms")]
    readings = [before.get("calibration_ms"), *(between or []), after.get("calibration_ms")]
    return {"before": before, "after": after, "steal_share": steal,
            "calibration_ms": statistics.fmean(times) if times else None,
            "readings_ms": [round(float(r), 4) for r in readings if r]}
