"""How the host-drift calibration workload (embedswap.measure.host_state) reads a quiet and a loaded host.

Run:  PYTHONPATH=lib HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/host_drift_calibration.py [--pairs 40]
(prints figures, exit 0 always; timings depend on the host and on whatever else runs on it: say so with them)

Quiet: ``--pairs`` pairs of phases taken back to back, each ``--readings`` calibration readings (a latency phase
takes one before, one between each of the article points' six repeats and one after). Two rules are read on each
pair: the former switch (the factor between the phases' means above 1.10: ``host_drift``), and the bound
(``analysis.host_drift``: the drift the readings' 95 % Welch interval establishes beyond their own noise, 1 when
the interval covers 1). Nothing changed between the two phases of a quiet pair, so the switch's share above 1.10 is
its rate of false ``host_drift`` and the bound's median and share above 1.10 are the gauge's own noise as the
bound carries it.
Loaded: the same with a busy loop per core running during the second phase of each pair (what
tests/e2e/test_host_drift_e2e.py does to the legacy server's phase).

The second gauge, the CPU other jobs used (``host_state.ForeignCpu``), is read over the same segments: between two
readings, all the host's busy CPU less this process's and a stand-in server's (an idle ``sleep``); its bound is
``analysis.host_drift.foreign_factor`` of the 95 % interval of the second phase's foreign share minus the first's.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from embedswap.analysis.host_drift import established, foreign_factor, foreign_interval, gauge_interval  # noqa: E402
from embedswap.measure.host_state import ForeignCpu, calibration_ms  # noqa: E402
from embedswap.summary.types_latency import HostPhase  # noqa: E402

READINGS = 8


def phase(server: int, readings: int = READINGS) -> tuple[list[float], list[float]]:
    """The calibration readings and the foreign cores of the segments between them."""
    out = []
    foreign = ForeignCpu(lambda: [server])
    foreign.mark()
    for _ in range(readings):
        out.append(calibration_ms())
        time.sleep(0.3)  # a latency repeat lies between two readings: let the host move as it would
        foreign.mark()
    return out, foreign.cores


def _phase(cores: list[float]) -> HostPhase:
    return HostPhase(before={"cpus": os.cpu_count() or 1}, foreign_cores=cores)


def factors(pairs: int, loaded: bool, server: int) -> list[tuple[float, float, float, float, float]]:
    """(second / first phase mean, the calibration bound, first and second foreign cores, the foreign bound)."""
    out = []
    for _ in range(pairs):
        first, first_cores = phase(server)
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)] \
            if loaded else []
        try:
            if busy:
                time.sleep(0.2)  # the loops get going
            second, second_cores = phase(server)
        finally:
            for p in busy:
                p.kill()
                p.wait()
        got = gauge_interval(second, first)
        assert got is not None
        foreign = foreign_interval(_phase(second_cores), _phase(first_cores))
        assert foreign is not None
        out.append((statistics.fmean(second) / statistics.fmean(first), established(got[1], got[2]),
                    statistics.fmean(first_cores), statistics.fmean(second_cores), foreign_factor(*foreign[1:])))
    return out


def describe(name: str, pairs: list[tuple[float, float, float, float, float]]) -> str:
    values = [p[0] for p in pairs]
    bounds = [p[1] for p in pairs]
    foreign = [p[4] for p in pairs]
    as_factor = [math.exp(abs(math.log(v))) for v in values]
    share = sum(f > 1.10 for f in as_factor) / len(values)
    q = statistics.quantiles(values, n=20)
    return (f"| {name} | {len(values)} | {statistics.median(values):.3f} | {q[0]:.3f} | {q[-1]:.3f} | "
            f"{100 * share:.1f} | {statistics.median(bounds):.3f} | {max(bounds):.3f} | "
            f"{100 * sum(b > 1.10 for b in bounds) / len(bounds):.1f} | "
            f"{statistics.median(p[2] for p in pairs):.2f} / {statistics.median(p[3] for p in pairs):.2f} | "
            f"{statistics.median(foreign):.3f} | {max(foreign):.3f} | "
            f"{100 * sum(b > 1.10 for b in foreign) / len(foreign):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"calibration round: {calibration_ms():.2f} ms; cores: {os.cpu_count()}; load: {os.getloadavg()}")
    print("| host | pairs | median second/first | 5 % | 95 % | switch: factor > 1.10 (%) | bound median | bound max "
          "| bound > 1.10 (%) | foreign cores first / second (median) | foreign bound median | foreign bound max "
          "| foreign bound > 1.10 (%) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    server = subprocess.Popen(["sleep", "100000"])  # stands in for a server: its CPU is not foreign
    try:
        print(describe("quiet (both phases as they come)", factors(args.pairs, loaded=False, server=server.pid)))
        print(describe("busy loop per core in the second phase", factors(args.pairs, loaded=True,
                                                                        server=server.pid)))
    finally:
        server.kill()
        server.wait()
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
