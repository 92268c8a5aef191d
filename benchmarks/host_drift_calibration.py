"""How the host-drift calibration workload (embedswap.measure.host_state) reads a quiet and a loaded host.

Run:  PYTHONPATH=lib HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/host_drift_calibration.py [--pairs 40]
(prints figures, exit 0 always; timings depend on the host and on whatever else runs on it: say so with them)

Quiet: ``--pairs`` pairs of phase readings (each a phase's mean of a before and an after calibration, as
``host_state.phase`` keeps it) taken back to back: the factor between the two phases of a pair is what the drift
rule sees when nothing changed, so the share above 1.10 is the rate of false ``host_drift`` on this host.
Loaded: the same with a busy loop per core running during the second phase of each pair (what
tests/e2e/test_host_drift_e2e.py does to the legacy server's phase).
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

from embedswap.measure.host_state import calibration_ms  # noqa: E402


def phase() -> float:
    return (calibration_ms() + calibration_ms()) / 2


def factors(pairs: int, loaded: bool) -> list[float]:
    out = []
    for _ in range(pairs):
        first = phase()
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)] \
            if loaded else []
        try:
            if busy:
                time.sleep(0.2)  # the loops get going
            second = phase()
        finally:
            for p in busy:
                p.kill()
                p.wait()
        out.append(second / first)
    return out


def describe(name: str, values: list[float]) -> str:
    as_factor = [math.exp(abs(math.log(v))) for v in values]
    share = sum(f > 1.10 for f in as_factor) / len(values)
    q = statistics.quantiles(values, n=20)
    return (f"| {name} | {len(values)} | {statistics.median(values):.3f} | {q[0]:.3f} | {q[-1]:.3f} | "
            f"{100 * share:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"calibration round: {calibration_ms():.2f} ms; cores: {os.cpu_count()}; load: {os.getloadavg()}")
    print("| host | pairs | median second/first | 5 % | 95 % | drift factor > 1.10 (%) |")
    print("|---|---|---|---|---|---|")
    print(describe("quiet (both phases as they come)", factors(args.pairs, loaded=False)))
    print(describe("busy loop per core in the second phase", factors(args.pairs, loaded=True)))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
