"""Where does one open-loop sender stop keeping its schedule on this machine, and what do two Ray workers reach?

Run:  PYTHONPATH=lib:<ray site> HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/open_loop_worker_limit.py \
          [--workers 1 2] [--seconds 3] [--rates 250 500 1000 2000 4000]     (exit 0 always)

Set-up. The tests' M/G/1 fake server (tests/support/mg1server.py) in a process of its own, with a service time of 0
(it answers each request as soon as its turn comes: the server is not what is measured). For each rate, a Poisson
schedule of ``rate x seconds`` one-document requests is sent as ``latency.open_loop`` sends it: by this process
(``--workers 1``, the in-process sender) or split across N Ray workers on a local Ray the kit starts and stops
(``embedswap.measure.ray_pool``). Per rate: each worker's send lag p90 against its own schedule, the merged lag
p90, the rate actually sent and answered. The limit is the first rate whose merged lag p90 exceeds ``max_lag_ms``'s
default (50 ms): past it the kit marks the run invalid.

The machine is shared (2 cores, other engineers' jobs): the load average is printed before and after; the server,
the sender(s) and Ray's own processes share the same two cores, so two workers here cannot double one worker's
rate. The figure says what one sender process can do on this host, not what a fleet of hosts can.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from embedswap.config.open_loop import OpenLoopConfig  # noqa: E402
from embedswap.measure.load import LoadSpec, run_sync  # noqa: E402
from embedswap.measure.open_loop import build_requests, plan, records_json, send_planned  # noqa: E402
from embedswap.measure.open_loop_stats import run_figures  # noqa: E402
from embedswap.measure.open_loop_workers import SendSettings, run_split  # noqa: E402
from mg1server import mg1_process  # noqa: E402
from ports import free_ports  # noqa: E402

MAX_LAG_MS = OpenLoopConfig.model_fields["max_lag_ms"].default


def _one_rate(settings: SendSettings, pool: object, rate: float, seconds: float, seed: int) -> dict:
    planned = plan(settings.requests, rate, 0, max(2, round(rate * seconds)), seed=seed)
    if pool is None:
        run_sync(send_planned(settings.spec, settings.requests, planned, max_in_flight=settings.max_in_flight))
        records = [r for r, _ in planned]
    else:
        records = run_split(pool, planned).records  # type: ignore[arg-type]
    return run_figures(records_json(records), rate, slo_p99_ms=1e9, gate=0.0, max_lag_ms=MAX_LAG_MS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rates", type=float, nargs="+", default=[250, 500, 1000, 2000, 4000])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    docs = [[(f"d{i}", f"document number {i}") for i in range(64)]]
    requests = build_requests(docs, "m", "openai", 1)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}  (2 cores, shared)")
    (port,) = free_ports(1)
    with mg1_process(port, mean_service_s=0.0) as url:
        spec = LoadSpec(base_url=url, model="m", batches=[], timeout_s=30)
        settings = SendSettings(spec, requests, None, "count", 256)
        for workers in args.workers:
            limit = None
            if workers == 1:
                pool_cm = None
            else:
                from embedswap.measure.ray_pool import ray_pool

                pool_cm = ray_pool(workers, None, settings)
            pool = pool_cm.__enter__() if pool_cm is not None else None
            try:
                for k, rate in enumerate(sorted(args.rates)):
                    f = _one_rate(settings, pool, rate, args.seconds, seed=k)
                    per = " ".join(f"w{w}={v:.1f}" for w, v in f["worker_lag_p90_ms"].items())
                    print(f"workers={workers} rate={rate:g}/s: lag p90 {f['lag_p90_ms']:.1f} ms [{per or 'in-process'}]"
                          f", sent {f['sent_rate'] or 0:.0f}/s, answered {f['throughput'] or 0:.0f}/s"
                          f", {'kept' if f['valid'] else 'BEHIND'}", flush=True)
                    if not f["valid"] and limit is None:
                        limit = rate
                        break
            finally:
                if pool_cm is not None:
                    pool_cm.__exit__(None, None, None)
            print(f"workers={workers}: first rate past {MAX_LAG_MS:g} ms lag p90: {limit or 'none of those tried'}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
