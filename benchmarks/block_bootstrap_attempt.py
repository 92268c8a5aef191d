"""The circular block bootstrap against the plain one on an attempt's own latency requests (e.g. the demo's).

Run:  PYTHONPATH=lib HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/block_bootstrap_attempt.py ATTEMPT_DIR
(ATTEMPT_DIR: experiments/<folder>/attempts/<attempt>, holding summary.json)

For every candidate and each of the article's two points, the 95 % interval of the candidate/legacy ratio of p50 and
docs/s as the kit computes it (``analysis.intervals``: block length ``n ** (1/3)`` within each repeat) and with
blocks of one request (the plain bootstrap), as high / low: where consecutive requests are correlated (queueing,
a slow minute) the block interval is the wider one. Prints a markdown table; the figures are this attempt's.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from embedswap.analysis.intervals import Requests, estimate, ratio, seed_for  # noqa: E402
from embedswap.analysis.upgrade import load_summary  # noqa: E402


def main() -> None:
    attempt = Path(sys.argv[1])
    summary = load_summary(attempt / "summary.json")
    legacy_name = summary.roles.legacy
    print("| candidate | point | figure | ratio | block: high/low | plain: high/low | block / plain width |")
    print("|---|---|---|---|---|---|---|")
    for name in summary.roles.candidates:
        reference = summary.latency.reference_for(name, legacy_name)
        candidate = summary.latency.of(name)
        for run in ("sequential", "concurrent"):
            sides = [getattr(entry, run) if entry is not None else None for entry in (candidate, reference)]
            data = [Requests.of(point.requests) if point is not None else None for point in sides]
            if any(d is None for d in data):
                continue
            got = {}
            for label, block in (("block", None), ("plain", 1)):
                ests = [estimate(d, seed_for(side, run), block=block)  # type: ignore[arg-type]
                        for d, side in zip(data, (name, legacy_name))]
                got[label] = ratio(ests[0], ests[1])
            for figure in ("p50", "docs_per_s"):
                b, p = getattr(got["block"], figure), getattr(got["plain"], figure)
                if None in (b.low, b.high, p.low, p.high):
                    continue
                wb, wp = b.high / b.low, p.high / p.low
                print(f"| {name} | {run} | {figure} | {b.value:.3f} | {wb:.3f} | {wp:.3f} | "
                      f"{(wb - 1) / (wp - 1):.2f} |")


if __name__ == "__main__":
    main()
