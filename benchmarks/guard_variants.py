"""A guard made from an attempt, checked against that attempt's vLLM target started again as configured, and with
one setting changed: CLS pooling (``--pooler-config``) and bf16 (``--dtype bfloat16``); and the unchanged one behind
a proxy that scales its vectors by 1.05 (the tests' ``tests/support/vector_proxy.py``).

Run:  HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/guard_variants.py EXPERIMENT GUARD [--target vllm]
(the three servers start side by side, about 2-3 minutes on the shared 2-core machine). Prints each check's one
line and exit code; exit 0 when the unchanged server passed and the three changed ones drifted, else 1.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from embedswap.config.experiment import load_experiment
from embedswap.targets import build_target

EMBEDSWAP = str(Path(sys.executable).parent / "embedswap")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("guard")
    parser.add_argument("--target", default="vllm")
    args = parser.parse_args()
    experiment = load_experiment(args.experiment)
    config = experiment.targets[args.target]
    if config.kind != "vllm":
        parser.error(f"target {args.target} is of kind {config.kind}; this script restarts vLLM targets")
    extra = list(config.extra_args)
    variants = {"as configured": {},
                "CLS pooling": {"extra_args": [*extra, "--pooler-config", json.dumps({"pooling_type": "CLS"})]},
                "bf16": {"dtype": "bfloat16"}}
    logs = Path(tempfile.mkdtemp(prefix="guard-variants-"))
    targets = {}
    for name, change in variants.items():
        changed = experiment.model_copy(update={"targets": {
            **experiment.targets, args.target: config.model_copy(update={"port": _free_port(), **change})}})
        targets[name] = build_target(changed, args.target, logs / name.replace(" ", "-"))
        (logs / name.replace(" ", "-")).mkdir()
    outcome = {}
    try:
        for target in targets.values():
            target.launch()
        for target in targets.values():
            target.wait_healthy(target.config.startup_timeout_s)
        from vector_proxy import vector_proxy

        with vector_proxy(targets["as configured"].base_url, lambda v: [x * 1.05 for x in v]) as proxied:
            urls = {**{name: t.base_url for name, t in targets.items()}, "scaled by 1.05": proxied}
            for name, url in urls.items():
                done = subprocess.run([EMBEDSWAP, "guard", "check", args.guard, "--url", url], check=False,
                                      capture_output=True, text=True)
                outcome[name] = done.returncode
                print(f"{name}: exit {done.returncode}: {(done.stdout or done.stderr).strip()[:400]}", flush=True)
    finally:
        for target in targets.values():
            target.stop()
    expected = {"as configured": 0, "CLS pooling": 1, "bf16": 1, "scaled by 1.05": 1}
    return 0 if outcome == expected else 1


if __name__ == "__main__":
    sys.exit(main())
