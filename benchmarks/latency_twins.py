"""Latency verdicts of twin servers and of a server 30 % slower than its twin, measured A-B-A as the kit does.

Run:  PYTHONPATH=lib HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/latency_twins.py [--runs 10] [--slower 1.3]
      [--design phased|interleaved]
(prints one line per run and a table; timings depend on the host and on whatever else runs on it: say so with them)

Each run starts the same fake server (benchmarks/fake_embedding_server.py) with a seeded service time: legacy at
``--service-ms``, the candidate at ``--service-ms`` (twins) or ``--slower`` times it. As with a local legacy server
on one card, only one server runs at a time: legacy is measured, stopped, the candidate measured and stopped, and
legacy started and measured again (A-B-A, ``sequencing.restore_latency``). With ``--design interleaved`` both
run at once and the candidate's runs alternate with legacy's in one phase (``sequencing.interleave``). Each phase is the kit's own
``measure.latency.capture_latency`` (the article's points, 3 repeats, calibration readings between them); the
verdicts are the kit's ``decide`` on the resulting summary. Per run: the headline verdict, the drift bound and its
source, the switch rule's factor (the largest gauge reading, what decided before the bound), and the sequential p50
ratio's 95 % interval width with the block bootstrap and with the plain one.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from embedswap.analysis import decide  # noqa: E402
from embedswap.analysis.intervals import Requests, estimate, ratio, seed_for  # noqa: E402
from embedswap.config.sections import LatencyConfig  # noqa: E402
from embedswap.measure.latency import capture_latency  # noqa: E402
from embedswap.summary.sections.latency import latency_stats_with_requests  # noqa: E402
from embedswap.summary.types_latency import LatencyTarget  # noqa: E402
from typed_summary import summary_body  # noqa: E402

SERVER = ROOT / "benchmarks" / "fake_embedding_server.py"


class Memory:
    """The part of an Attempt that capture_latency writes and the summary reads, in memory."""

    def __init__(self) -> None:
        self.files: dict[str, Any] = {}

    def write_json(self, path: str, data: Any) -> None:
        self.files[path] = data

    write_jsonl = write_json

    def has(self, path: str) -> bool:
        return path in self.files

    def read_json(self, path: str) -> Any:
        return self.files[path]

    read_jsonl = read_json


class Fake:
    """A fake server as a target: started in its own process, stopped before the next one starts."""

    def __init__(self, service_ms: float, seed: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "--port", str(self.port), "--service-ms",
                                      str(service_ms), "--seed", str(seed), "--bank", "256"],
                                     stdout=subprocess.DEVNULL)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{self.base_url}/v1/models", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the fake server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def headers(self) -> dict[str, str]:
        return {}

    def verify_tls(self) -> bool:
        return True

    def embeddings_path(self) -> str:
        return "/v1/embeddings"

    def api_shape(self) -> str:
        return "openai"

    def rss_bytes(self) -> None:
        return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pids(self) -> list[int]:  # its CPU is the server's, not another job's (host_state.ForeignCpu)
        return [self.proc.pid] if self.alive() else []


def phase(service_ms: float, seed: int, experiment: Any, workload: Any, name: str) -> dict[str, Any]:
    server = Fake(service_ms, seed)
    try:
        attempt = Memory()
        capture_latency(server, experiment, workload, attempt, name)  # type: ignore[arg-type]
        return {"measured": True, **latency_stats_with_requests(attempt, name)}  # type: ignore[arg-type]
    finally:
        server.stop()


def width(candidate: dict[str, Any], legacy: dict[str, Any], block: int | None) -> float:
    """The sequential p50 ratio's 95 % interval, high / low, with this bootstrap (1: plain)."""
    ests = []
    for name, entry in (("cand", candidate), ("legacy", legacy)):
        requests = Requests.of(LatencyTarget.model_validate(entry).sequential.requests)
        ests.append(estimate(requests, seed_for(name, "sequential"), block=block))
    got = ratio(ests[0], ests[1]).p50
    return got.high / got.low


def interleaved(service_ms: float, factor: float, seed: int, experiment: Any,
                workload: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(legacy, candidate) measured at once in alternating blocks (``sequencing.interleave``)."""
    legacy, candidate = Fake(service_ms, 2 * seed), Fake(service_ms * factor, 2 * seed + 1)
    try:
        attempt = Memory()
        capture_latency(candidate, experiment, workload, attempt, "cand", paired=legacy)  # type: ignore[arg-type]
        return ({"measured": True, **latency_stats_with_requests(attempt, "cand/paired_legacy")},  # type: ignore
                {"measured": True, **latency_stats_with_requests(attempt, "cand")})  # type: ignore[arg-type]
    finally:
        legacy.stop()
        candidate.stop()


def run(seed: int, factor: float, args: argparse.Namespace, experiment: Any, workload: Any) -> dict[str, Any]:
    roles = {"legacy": "legacy", "candidate": "cand", "candidates": ["cand"]}
    if args.design == "interleaved":
        legacy, candidate = interleaved(args.service_ms, factor, seed, experiment, workload)
        body = summary_body({"roles": roles, "latency": {"by_target": {"legacy": legacy, "cand": candidate},
                                                         "paired_legacy": {"cand": legacy}}})
    else:
        legacy = phase(args.service_ms, 2 * seed, experiment, workload, "legacy")
        candidate = phase(args.service_ms * factor, 2 * seed + 1, experiment, workload, "cand")
        again = phase(args.service_ms, 2 * seed + 100, experiment, workload, "legacy/restore")
        body = summary_body({"roles": roles, "latency": {"by_target": {"legacy": legacy, "cand": candidate}},
                             "restore": {"measured": True, "latency": again}})
    decided = decide(body).latency.ratio("cand")
    drift = decided.drift
    verdict = decided.verdict
    return {"code": verdict.code, "direction": verdict.direction, "reason": verdict.reason,
            "bound": drift.bound if drift else None, "source": drift.bound_source if drift else None,
            "factor": drift.factor if drift else None,
            "seq_p50": (p50.value if (p50 := decided.figure("sequential", "p50")) else None),
            "block": width(candidate, legacy, None), "plain": width(candidate, legacy, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--slower", type=float, default=1.3)
    parser.add_argument("--service-ms", type=float, default=20.0)
    parser.add_argument("--design", choices=("phased", "interleaved"), default="phased",
                        help="phased: one server up at a time, A-B-A; interleaved: both up, alternating blocks")
    args = parser.parse_args()
    experiment = SimpleNamespace(latency=LatencyConfig(sweep=[]), model=SimpleNamespace(served_name="fake"))
    texts = [f"document {i} about the latency of embedding servers" for i in range(64)]
    workload = SimpleNamespace(latency_batches=lambda _sample: [[SimpleNamespace(text=t) for t in texts[i:i + 8]]
                                                                 for i in range(0, 64, 8)])
    started = time.perf_counter()
    table = []
    for label, factor in ((f"{args.slower:.2f}x slower", args.slower), ("twins", 1.0)):
        rows = []
        for seed in range(args.runs):
            row = run(seed, factor, args, experiment, workload)
            rows.append(row)
            print(label, seed, row, flush=True)
        different = sum(r["code"] == "different" for r in rows)
        slower = sum(r["code"] == "different" and r["direction"] == "slower" for r in rows)
        switch = sum((r["factor"] or 1) > 1.10 for r in rows)
        bounds = sorted(r["bound"] or 1 for r in rows)
        widths = [(r["block"], r["plain"]) for r in rows]
        table.append(f"| {label} | {len(rows)} | {different} | {slower} | "
                     f"{sum(r['code'] == 'inconclusive' for r in rows)} | {switch} | "
                     f"{bounds[len(bounds) // 2]:.3f} (max {bounds[-1]:.3f}) | "
                     f"{sum(b for b, _ in widths) / len(widths):.3f} / {sum(p for _, p in widths) / len(widths):.3f} |")
    print("| servers | runs | different | of which slower | inconclusive | switch rule would refuse (factor > 1.10) "
          "| drift bound median (max) | seq p50 ratio interval high/low: block / plain |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(table))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
