"""End to end: a CPU-bound job loads the host only while the legacy server is measured. The candidate (the same
legacy server, measured after it on a quiet host) then looks faster, but it must not be called faster: the
host's drift is measured and shown, and the headline is inconclusive: the calibration establishes a drift beyond
its own noise, in the direction that makes the candidate look faster, and each figure is refused (host_drift) or,
where the candidate is not worse even across the widened interval, non_inferior; never faster. The busy loops
live as long as the legacy server, so its A-B-A measurement (on by default) is loaded too and cannot see them.

The load comes from a wrapper around the legacy target's interpreter (``python:``): a busy loop per core, started
with the server and torn down with its process group, so the kit is not given a test hook."""

from __future__ import annotations

import json
import os
import stat
import sys
import time

import pytest

import psutil

from embedswap.paths import report_dir

from realkit import legacy_target, make_experiment, run_whole_experiment
from ports import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.quiet_host]  # decides latency verdicts: run alone


def _loaded_python(folder) -> str:
    """An interpreter wrapper that keeps every core busy for as long as the server it starts lives.

    Each busy loop runs in a session of its own (``setsid``), as another user's job would: Linux groups CPU time by
    session (``kernel.sched_autogroup_enabled``, on here and on most desktops and CI hosts), so loops left in the
    server's session load that server, not the host: a first version did so, and the kit then rightly charged the
    slowdown to the legacy server (its calibration, in the kit's own session, read 15-18 ms in both phases). The
    subshell around each exits at once, so the loops are nobody's children: not the server's processes, whose CPU
    the kit charges to the server. Each loop ends when the server's process (the wrapper's pid, which ``exec``
    hands to the server) is gone."""
    path = folder / "loaded-python.sh"
    path.write_text("#!/bin/bash\n"
                    f"for i in $(seq {os.cpu_count() or 2}); do\n"
                    f"  ( setsid bash -c 'while kill -0 \"$1\" 2>/dev/null; do :; done' '{folder}/host-load' $$ & )\n"
                    "done\n"
                    f'exec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _left(folder) -> list[str]:
    """Processes still running from the wrapper script (its busy loops), after a short grace."""
    for _ in range(40):
        left = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            if any(str(folder) in part for part in proc.info["cmdline"] or []):
                left.append(f"{proc.info['pid']}: {' '.join(proc.info['cmdline'])}")
        if not left:
            return []
        time.sleep(0.5)
    return left


def test_a_host_loaded_only_during_legacy_does_not_make_the_candidate_faster(tmp_path) -> None:
    legacy_port, candidate_port = free_ports(2)
    folder = make_experiment(tmp_path, "host-drift",
                             legacy_target(legacy_port, capture=["latency"], python=_loaded_python(tmp_path)),
                             {"candidate": legacy_target(candidate_port, capture=["latency"])}, restore=True)
    # issue 61, the quiet pass: steps 01 and 02 (the loaded and the quiet captures, the A-B-A's restore) and 04 (the
    # latency notebook); the summary and the report are built all the same. Nothing here reads step 03 (the vectors:
    # latency is all these targets capture) or 05 (the parity gate, skipped without document vectors): ~6 s of two
    # notebook kernels. 04 stays until `01,02` passes twice on a quiet host (docs/testing.md: its runs beside other
    # work failed on the host's load, as the unchanged test did).
    done = run_whole_experiment(folder, timeout_s=900, steps="01,02,04")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _left(tmp_path) == []  # the busy loops went with the legacy server's process group
    attempt = sorted((folder / "attempts").iterdir())[-1]
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    host = {name: summary["latency"]["by_target"][name]["host"] for name in ("legacy", "candidate")}
    decided = summary["decisions"]["latency"]["ratios"]["candidate"]
    drift = decided["drift"]
    print("calibration ms:", {n: h["calibration_ms"] for n, h in host.items()}, "foreign cores:",
          drift["foreign_cores"], "drift:", drift["factor"], "bound:", drift["bound"], drift["bound_source"],
          "seq p50 ratio:", decided["intervals"]["sequential"]["p50"]["value"])
    # the host changed by more than the margin, beyond the gauges' own noise: the CPU the loops used is read
    # whether or not the wall-time calibration shared a core with them (it read 12-29 ms in one loaded phase)
    assert drift["factor"] > 1.10
    assert drift["bound"] > 1.10
    assert drift["foreign_cores"]["legacy"] > drift["foreign_cores"]["candidate"] + 0.5
    refused = []
    for run, point in decided["verdicts"].items():
        for figure in ("p50", "docs_per_s"):
            verdict = point[figure]
            assert verdict["direction"] != "faster", (run, figure, verdict)  # never called faster
            # where the drift decides, the verdict is refused; where the candidate is not worse even across the
            # interval widened by the drift bound, non_inferior holds (it is the same server: not a false claim;
            # measured 2026-12-04: the concurrent point's ratio 0.3-0.4 under a 1.73x bound)
            assert verdict["code"] in ("inconclusive", "non_inferior", "failed"), (run, figure, verdict)
            if verdict["code"] == "inconclusive":
                assert verdict["reason"] == "host_drift", (run, figure, verdict)
                refused.append((run, figure))
    assert refused, decided["verdicts"]  # the drift decided somewhere
    assert decided["verdict"]["code"] == "inconclusive"
    # the report shows the drift beside the ratio
    report = (report_dir(folder) / "report.en.md").read_text(encoding="utf-8")
    assert "| Host drift |" in report
    assert "inconclusive: widened by the host drift bound" in report
