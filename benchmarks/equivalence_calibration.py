"""Calibration of embedswap.stats.equivalence by simulation: how often each verdict comes out when the truth
is known.

Run:  PYTHONPATH=lib HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/equivalence_calibration.py [--runs 1000]
(prints figures, exit 0 always: a benchmark prints, it does not gate; seeded, so the same figures every run)

Quality (paired per-query nDCG@10 deltas, margin 0.02). A query's delta is 0 with probability 1/2 (its top 10 did
not move), else normal: the mean over queries is ``mu`` and the per-query sd is ``sd``, clipped to [-1, 1].
Twins: ``mu`` 0 with numeric-noise spread (sd 0.03: near-ties reordered) or a realistic ranking spread
(sd 0.12; the issue's 24 queries had 0.19). Worse: ``mu`` -0.05.

Latency (candidate/legacy, margin 1.10, faster harmless): per-request latencies lognormal (sigma 0.30), n per
side. (a) the analytic Welch t interval on log latencies (ratio of geometric means = of medians here);
(b) the p50 ratio of embedswap.analysis.intervals (stratified bootstrap, 3 repeats, 95 % interval rescaled to
90 %), the interval the report already computes. Candidates: twins (1.00), 10 % slower (exactly at the margin:
TOST calls it equivalent at most alpha = 5 % of the time by construction), 20 % slower.

By language: the same quality deltas in two languages of n/2 queries, decided pooled and per language
(``sliced_verdict``: Holm across the two, equivalent only when both are): what slicing costs twins and what it
finds when one language alone got worse.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from embedswap.analysis import intervals  # noqa: E402
from embedswap.stats.equivalence import paired_verdict, sliced_verdict  # noqa: E402
from embedswap.stats.latency_equivalence import log_ratio_interval, ratio_verdict  # noqa: E402

LABELS = ("equivalent", "non_inferior", "different/worse", "different/slower", "inconclusive")


def label(v) -> str:
    return f"{v.code}/{v.direction}" if v.code == "different" else v.code


def quality_deltas(rng: np.random.Generator, n: int, mu: float, sd: float) -> np.ndarray:
    moved = rng.random(n) < 0.5
    # moved queries: mean 2 mu, spread s with 0.5 (4 mu^2 + s^2) - mu^2 = sd^2
    s = np.sqrt(max(2 * sd ** 2 - 2 * mu ** 2, 1e-12))
    return np.clip(np.where(moved, rng.normal(2 * mu, s, n), 0.0), -1, 1)


def row(name: str, n: int, verdicts: list, extra: str = "") -> str:
    counts = Counter(label(v) for v in verdicts)
    runs = len(verdicts)
    cells = " | ".join(f"{100 * counts.get(k, 0) / runs:5.1f}" for k in ("equivalent", "non_inferior"))
    worse = sum(counts.get(k, 0) for k in ("different/worse", "different/slower"))
    needs = [v.n_needed for v in verdicts if v.code == "inconclusive" and v.n_needed is not None]
    need = f"{int(np.median(needs))}" if needs else "-"
    return (f"| {name} | {n} | {runs} | {cells} | {100 * worse / runs:5.1f} | "
            f"{100 * counts.get('inconclusive', 0) / runs:5.1f} | {need} |{extra}")


HEADER = ("| scenario | n | runs | equivalent % | non_inferior % | different (worse/slower) % | inconclusive % "
          "| median n_needed (inconclusive) |")


def quality(runs: int) -> None:
    print("\nQuality: per-query nDCG@10 deltas, margin 0.02, t interval (90 %)\n")
    print(HEADER + " 90 % interval covers mu % |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, mu, sd in (("twins, numeric noise (sd 0.03)", 0.0, 0.03), ("twins, ranking spread (sd 0.12)", 0.0, 0.12),
                         ("0.05 worse (sd 0.12)", -0.05, 0.12), ("0.05 worse (sd 0.03)", -0.05, 0.03)):
        for n in (24, 50, 100, 200, 400, 800):
            rng = np.random.default_rng(1000 + n)
            verdicts, covered = [], 0
            for _ in range(runs):
                d = quality_deltas(rng, n, mu, sd)
                v = paired_verdict(d, 0.02)
                verdicts.append(v)
                covered += v.low <= np.clip(mu, -1, 1) <= v.high
            print(row(name, n, verdicts, f" {100 * covered / runs:5.1f} |"))


def sliced(runs: int) -> None:
    """Two languages of n/2 queries each, pooled against per-language (analysis.slices: sliced_verdict, Holm)."""
    print("\nQuality by language: nDCG@10 deltas, two languages of n/2 queries, margin 0.02\n")
    print(HEADER + " method |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, mus, sd in (("twins, numeric noise (sd 0.03)", (0.0, 0.0), 0.03),
                          ("twins, ranking spread (sd 0.12)", (0.0, 0.0), 0.12),
                          ("one language 0.08 worse (sd 0.03)", (-0.08, 0.0), 0.03)):
        for n in (24, 100, 400):
            rng = np.random.default_rng(4000 + n)
            pooled, per_language = [], []
            for _ in range(runs):
                parts = {lang: quality_deltas(rng, n // 2, mu, sd) for lang, mu in zip(("en", "ko"), mus)}
                pooled.append(paired_verdict(np.concatenate(list(parts.values())), 0.02))
                per_language.append(sliced_verdict(parts, 0.02)[0])
            print(row(name, n, pooled, " pooled |"))
            print(row(name, n, per_language, " per language, Holm |"))


def latency(runs: int, boot_runs: int) -> None:
    print("\nLatency p50 ratio, margin 1.10, faster harmless\n")
    print(HEADER + " method |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, factor in (("twins", 1.00), ("10 % slower", 1.10), ("20 % slower", 1.20)):
        for n in (30, 120, 400, 1000):
            rng = np.random.default_rng(2000 + n)
            verdicts = []
            for _ in range(runs):
                cand = rng.lognormal(np.log(20 * factor), 0.30, n)
                leg = rng.lognormal(np.log(20), 0.30, n)
                r, low, high, m = log_ratio_interval(cand, leg)
                verdicts.append(ratio_verdict(r, low, high, 1.10, n=m))
            print(row(name, n, verdicts, " Welch t on logs |"))
        for n in (120, 400):
            rng = np.random.default_rng(3000 + n)
            verdicts = []
            for i in range(boot_runs):
                sides = []
                for f in (factor, 1.0):
                    lat = [rng.lognormal(np.log(20 * f), 0.30, n // 3) for _ in range(3)]
                    req = intervals.Requests(lat, [np.ones(n // 3)] * 3, [float(x.sum()) / 1000 for x in lat])
                    sides.append(intervals.estimate(req, seed=i, resamples=1000))
                p50 = intervals.ratio(sides[0], sides[1]).p50
                verdicts.append(ratio_verdict(p50.value, p50.low, p50.high, 1.10, n=n, confidence=0.95))
            print(row(name, n, verdicts, " intervals.py p50 bootstrap |"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--boot-runs", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"equivalence calibration: {args.runs} seeded runs per row ({args.boot_runs} for the bootstrap rows), "
          "alpha 0.05 (90 % intervals), power 0.80 for n_needed")
    quality(args.runs)
    sliced(args.runs)
    latency(args.runs, args.boot_runs)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
