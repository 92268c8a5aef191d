"""The `embedswap` command.

Exit codes: 0 success; 1 a step failed, a server failed, or the parity gate failed; 2 bad usage or a bad
experiment.yaml (nothing was started); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date
from pathlib import Path

from embedswap import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _cmd_new(args: argparse.Namespace) -> int:
    from embedswap.paths import project_root
    from embedswap.scaffold import new_experiment

    root = Path(args.experiments) if args.experiments else project_root() / "experiments"
    day = date.fromisoformat(args.date) if args.date else None
    folder = new_experiment(args.slug, root, day=day, preset=args.preset)
    print(folder)
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from embedswap.captures import open_attempt
    from embedswap.runner import NOTEBOOKS, headline, run_experiment
    from embedswap.steps import find_experiment_dir

    only = None
    if args.steps:
        only = [n for n in NOTEBOOKS if any(n.startswith(s) for s in args.steps.split(","))]
    folder = find_experiment_dir(args.experiment_dir)
    result = run_experiment(folder, args.attempt, only=only, render=not args.no_report)
    attempt = open_attempt(folder, result.attempt.name)
    if attempt.summary_path.exists():
        for line in headline(json.loads(attempt.summary_path.read_text())):
            print(f"[embedswap] {line}")
    for name, status in result.notebooks.items():
        print(f"[embedswap] {name}: {status.splitlines()[0]}")
    for kind, path in result.report.items():
        print(f"[embedswap] report {kind}: {path}")
    print(f"[embedswap] {'done' if result.ok else 'FAILED'} in {result.seconds:.0f} s; attempt {attempt.path}")
    return EXIT_OK if result.ok else EXIT_FAILED


def _cmd_report(args: argparse.Namespace) -> int:
    from embedswap.report import render_report
    from embedswap.steps import find_experiment_dir

    folder = find_experiment_dir(args.experiment_dir)
    # render_report also refreshes reports/index.{md,html} when the report lives under reports/
    for kind, path in render_report(folder, args.attempt).items():
        print(f"{kind}: {path}")
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    from embedswap.captures import list_attempts, open_attempt, verify_attempt
    from embedswap.steps import find_experiment_dir

    folder = find_experiment_dir(args.experiment_dir)
    attempts = list_attempts(folder) if args.attempt == "all" else [open_attempt(folder, args.attempt)]
    failed = False
    for attempt in attempts:
        problems = verify_attempt(attempt)
        files = len(attempt.manifest()["files"])
        if problems:
            failed = True
            print(f"{attempt.name}: {len(problems)} problem(s) in {files} files")
            for problem in problems:
                print(f"  {problem}")
        else:
            print(f"{attempt.name}: {files} files intact")
    return EXIT_FAILED if failed else EXIT_OK


def _cmd_parity(args: argparse.Namespace) -> int:
    from embedswap import steps

    ctx = steps.open_step(args.experiment_dir, args.attempt)
    result = steps.run_parity(ctx)
    ctx.summary()
    def cos(value: float | None) -> str:
        return "   n/a  " if value is None else f"{value:.6f}"  # None: a NaN/inf/zero vector

    for row in result["rows"]:
        print(f"{row['backend']:>12} {row['dtype']:>15} {row['modality']:>6} n={row['n']:<4} "
              f"min {cos(row['cos_min'])} median {cos(row['cos_median'])} threshold {row['threshold']} "
              f"{'PASS' if row['pass'] else 'FAIL'}")
    for missing in result["not_run"]:
        print(f"{missing['backend']:>12} not measured: {missing['why']}")
    print("parity gate:", "PASS" if result["pass"] else "FAIL")
    return EXIT_OK if result["pass"] else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="embedswap",
        description="Measure what changes when an embedding service moves from a home-made server to a "
        "batching engine (vLLM, NVIDIA Dynamo). Flow: experiment.yaml -> captures -> summary.json -> report.",
        epilog="Exit codes: 0 ok; 1 a step, a server or the parity gate failed; 2 bad usage or bad "
        "experiment.yaml (nothing started); 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"embedswap {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    new = sub.add_parser("new", help="create experiments/YYYY-MM-DD-SLUG/experiment.yaml for the embedded default")
    new.add_argument("slug", help="short name: lowercase letters, digits, '-'")
    new.add_argument("--date", help="YYYY-MM-DD (default: today)")
    new.add_argument("--experiments", help="folder of experiments (default: <project>/experiments)")
    new.add_argument("--preset", choices=["minilm", "qwen3-tiny"], default="minilm",
                     help="minilm: the embedded all-MiniLM-L6-v2 (default); qwen3-tiny: a tiny random-weight Qwen3 "
                     "embedding model built locally (the article's model family)")
    new.set_defaults(func=_cmd_new)

    run = sub.add_parser("run", help="run the five steps (notebooks via papermill) into a new attempt, then report")
    run.add_argument("experiment_dir", nargs="?", default="", help="experiment folder (default: the newest)")
    run.add_argument("--attempt", default="new", help="'new' (default), 'latest', or an attempt folder name")
    run.add_argument("--steps", help="only these steps, e.g. '03,04' (reusing the attempt's captures)")
    run.add_argument("--no-report", action="store_true", help="skip rendering the report")
    run.set_defaults(func=_cmd_run)

    report = sub.add_parser("report", help="re-render the report from an attempt's captures (no measuring)")
    report.add_argument("experiment_dir", nargs="?", default="")
    report.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    report.set_defaults(func=_cmd_report)

    verify = sub.add_parser("verify", help="re-check the checksums of an attempt's captures")
    verify.add_argument("experiment_dir", nargs="?", default="")
    verify.add_argument("--attempt", default="all", help="'all' (default), 'latest' or a folder name")
    verify.set_defaults(func=_cmd_verify)

    parity = sub.add_parser("parity", help="run the parity gate on an attempt; exit 1 when a backend fails")
    parity.add_argument("experiment_dir", nargs="?", default="")
    parity.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    parity.set_defaults(func=_cmd_parity)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    from embedswap.config import ConfigError
    from embedswap.models import ModelNotFoundError
    from embedswap.steps import StepError
    from embedswap.workload import WorkloadError

    try:
        return int(args.func(args))
    except (ConfigError, ModelNotFoundError, WorkloadError, StepError, FileExistsError, FileNotFoundError) as exc:
        print(f"embedswap: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("embedswap: interrupted; servers stopped, captures so far kept", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
