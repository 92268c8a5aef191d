"""How long `embedswap guard check` takes, and how large a guard file is, for MiniLM on vLLM on this CPU.

Run:  HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/guard_check.py [--repeats 5]
(about 3 minutes on the shared 2-core machine; exit 0 always: a benchmark prints, it does not gate).

Set-up, as the guard's end-to-end test: vLLM (fp32, ``--enforce-eager``) started once through the kit's own target
class and measured as a ``kind: external`` candidate beside the reference legacy server (the sample workload,
2 repeats, five probes, the small latency runs), ``embedswap guard init`` on that attempt, then ``embedswap guard
check`` against the same server ``--repeats`` times as a user runs it (a new process each time, so start-up and
imports count). Printed: each check's wall seconds and the seconds its requests took (``seconds`` in its JSON),
the guard file's size, the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from embedswap.captures import new_attempt
from embedswap.config.experiment import load_experiment
from embedswap.measure.capture import measure_target
from embedswap.scaffold import new_experiment
from embedswap.targets import build_target

REPO = Path(__file__).resolve().parents[1]
EMBEDSWAP = str(Path(sys.executable).parent / "embedswap")
LATENCY = {"sequential_requests": 6, "sweep": [], "concurrent_requests": 4, "concurrency": 4, "repeats": 1,
           "warmup_requests": 0, "timeout_s": 60}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ports", default="19250,19251", help="legacy,vllm")
    args = parser.parse_args()
    legacy_port, vllm_port = (int(p) for p in args.ports.split(","))
    root = Path(tempfile.mkdtemp(prefix="guard-bench-"))
    folder = new_experiment("guardbench", root / "experiments", data_dir=REPO / "data")
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    capture = ["workload", "queries", "probes", "latency"]
    config["targets"] = {
        "legacy": {"kind": "legacy", "port": legacy_port, "capture": capture},
        "vllm": {"kind": "external", "url": f"http://127.0.0.1:{vllm_port}", "capture": capture},
        "vllm-server": {"kind": "vllm", "port": vllm_port, "dtype": "float32", "extra_args": ["--enforce-eager"]}}
    config["candidates"] = ["vllm"]
    for key in ("ablations", "matryoshka"):
        config.pop(key, None)
    config.get("sequencing", {}).pop("restore_legacy", None)
    config["workload"]["repeats"] = 2
    config["latency"] = LATENCY
    config["contract"]["probes"] = ["plain", "input_type_query", "dimensions_reduced", "over_long_input",
                                    "batch8_member"]
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    experiment = load_experiment(folder)
    server = build_target(experiment, "vllm-server", root)
    print(f"load average before: {os.getloadavg()}", flush=True)
    with server:
        attempt = new_attempt(folder)
        for name in ("legacy", "vllm"):
            measure_target(experiment, folder, attempt, name, f"capture:{name}")
        guard = root / "guard-vllm.json"
        made = subprocess.run([EMBEDSWAP, "guard", "init", str(folder), "--out", str(guard)], check=False,
                              capture_output=True, text=True)
        print(made.stdout.strip() or made.stderr.strip(), flush=True)
        for _ in range(args.repeats):
            began = time.monotonic()
            done = subprocess.run([EMBEDSWAP, "guard", "check", str(guard), "--url", server.base_url, "--json"],
                                  check=False, capture_output=True, text=True)
            wall = time.monotonic() - began
            result = json.loads(done.stdout) if done.stdout.startswith("{") else {}
            print(f"check: exit {done.returncode}, {wall:.2f} s wall, {result.get('seconds')} s of requests "
                  f"({result.get('requests')} requests); {result.get('summary', done.stderr.strip())[:160]}",
                  flush=True)
        print(f"guard file: {guard.stat().st_size:,} bytes")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
