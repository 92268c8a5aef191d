"""The ``embedswap guard`` subcommands: ``init``, ``check``, ``index`` and ``cronjob``.

Exit codes as the rest of the kit: 0 pass; 1 drift (a canary or a sampled row no longer agrees); 2 bad usage, a
guard file that does not load, or a server or database that cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from embedswap.exits import EXIT_COULD_NOT_TELL, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from embedswap.exits import one_line as error_line
from embedswap.wire.api_shapes import SHAPES


def _usage(message: str) -> Exception:
    return UsageError(message)


def _cmd_init(args: argparse.Namespace) -> int:
    from embedswap.guard.build import GuardBuildError, build_guard
    from embedswap.guard.guard_file import load_guard, write_guard
    from embedswap.paths import find_experiment_dir

    folder = find_experiment_dir(args.experiment)
    try:
        guard = build_guard(folder, args.attempt, args.target, documents=args.documents, queries=args.queries)
    except GuardBuildError as exc:
        raise _usage(str(exc)) from None
    out = Path(args.out) if args.out else Path(f"guard-{guard.source.target}.json")
    write_guard(guard, out, overwrite=args.force)
    load_guard(out)  # what was written loads: the digest is over what a reader reads
    print(f"{out}: {len(guard.canaries)} canaries, {len(guard.contract)} probes from attempt {guard.source.attempt} "
          f"(target {guard.source.target}); {out.stat().st_size:,} bytes; direction tolerance "
          f"{guard.tolerances.direction.value:.1e}")
    return 0


def _headers(api_key_env: str | None) -> dict[str, str]:
    from embedswap.wire.client import auth_headers

    try:
        return auth_headers(api_key_env)
    except RuntimeError as exc:
        raise _usage(str(exc)) from None


def _cmd_check(args: argparse.Namespace) -> int:
    from embedswap.guard.check import ServerUnreachable, run_check
    from embedswap.guard.guard_file import GuardFileError, load_guard
    from embedswap.guard.output import as_json, one_line, write_junit

    try:
        guard = load_guard(Path(args.guard))
    except GuardFileError as exc:
        raise _usage(str(exc)) from None
    try:
        result = run_check(guard, args.url, api_shape=args.api_shape, embeddings_path=args.embeddings_path,
                           headers=_headers(args.api_key_env), timeout_s=args.timeout, guard_name=args.guard)
    except ServerUnreachable as exc:  # not a drift and not a usage error: the check could not tell
        print(f"embedswap: could not tell: {exc}", file=sys.stderr)
        return EXIT_COULD_NOT_TELL
    if args.junit:
        write_junit(result, Path(args.junit))
    print(json.dumps(as_json(result), ensure_ascii=False, indent=1) if args.json else one_line(result))
    return result.exit_code


def _cmd_index(args: argparse.Namespace) -> int:
    from embedswap.guard.index import IndexCheckError, run_index_check

    try:
        return run_index_check(args)
    except IndexCheckError as exc:
        raise _usage(str(exc)) from None


def _cmd_cronjob(args: argparse.Namespace) -> int:
    from embedswap.guard.cronjob import render_cronjob

    try:
        text = render_cronjob(Path(args.guard), url=args.url, schedule=args.schedule, name=args.name,
                              namespace=args.namespace, image=args.image, api_key_secret=args.api_key_secret)
    except ValueError as exc:
        raise _usage(str(exc)) from None
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(args.out)
    else:
        print(text, end="")
    return 0


def run_guard(args: argparse.Namespace) -> int:
    """Run a guard subcommand with the kit's exit codes and one-line errors, without importing the report's modules
    (``embedswap.cli.main`` imports them for its own errors: seconds a command, most of a check's time)."""
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001  (as cli.main: anything unexpected is still one line and an exit code)
        from embedswap.config.base import ConfigError
        from embedswap.measure.workload import WorkloadError
        from embedswap.redact import redact
        from embedswap.exits import StepError

        if args.debug:
            import traceback

            traceback.print_exc()
        usage = (UsageError, ConfigError, StepError, WorkloadError, FileExistsError, FileNotFoundError)
        prefix = "" if isinstance(exc, usage) else f"{type(exc).__name__}: "
        print(redact(f"embedswap: {prefix}{error_line(exc)}"), file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, usage) else EXIT_FAILED


def add_guard_commands(add: Callable[..., argparse.ArgumentParser], debug: argparse.ArgumentParser) -> None:
    """``embedswap guard ...``; ``add`` makes a subcommand of the main parser, ``debug`` is its --debug parent."""
    guard = add("guard", help="after the swap: check in seconds that a server (or an index) still matches an "
                "accepted attempt")
    sub = guard.add_subparsers(dest="guard_command", required=True)
    new: Callable[..., Any] = lambda name, **kw: sub.add_parser(name, parents=[debug], **kw)

    init = new("init", help="make a guard file from an accepted attempt's captures (nothing is measured)")
    init.add_argument("experiment", help="experiment folder")
    init.add_argument("--attempt", default="", help="attempt folder name (default: latest)")
    init.add_argument("--target", help="the target whose answers are guarded (default: the first candidate)")
    init.add_argument("--out", help="guard file to write (default: ./guard-TARGET.json)")
    init.add_argument("--documents", type=int, default=64, help="document canaries (default 64)")
    init.add_argument("--queries", type=int, default=32, help="query canaries (default 32)")
    init.add_argument("--force", action="store_true", help="replace the guard file when it is there")
    init.set_defaults(func=_cmd_init)

    check = new("check", help="send the canaries to URL and compare per aspect; exit 0 pass, 1 drift, 2 usage")
    check.add_argument("guard", help="guard file (from `embedswap guard init`)")
    check.add_argument("--url", required=True, help="the server's base URL (e.g. http://10.0.0.5:8000)")
    check.add_argument("--api-shape", choices=SHAPES, help="default: the shape the attempt spoke")
    check.add_argument("--embeddings-path", help="the embeddings route from the server's root (default: the shape's)")
    check.add_argument("--api-key-env", help="environment variable that holds the API key (never the key itself)")
    check.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    check.add_argument("--json", action="store_true", help="print the result as JSON")
    check.add_argument("--junit", help="also write the result as JUnit XML to this file")
    check.set_defaults(func=_cmd_check)

    index = new("index", help="sample an index's rows (PostgreSQL + pgvector, read-only), re-embed their texts and "
                "report the share whose stored vector another server made")
    index.add_argument("guard", help="guard file (its tolerances, model name and API shape)")
    index.add_argument("--url", required=True, help="the server that now answers queries")
    index.add_argument("--dsn-env", required=True, help="environment variable that holds the database DSN")
    index.add_argument("--table", required=True)
    index.add_argument("--id-column", required=True)
    index.add_argument("--vector-column", required=True)
    index.add_argument("--text-column", required=True)
    index.add_argument("--sample", type=int, default=200, help="rows sampled (default 200)")
    index.add_argument("--api-shape", choices=SHAPES)
    index.add_argument("--api-key-env")
    index.add_argument("--json", action="store_true")
    index.set_defaults(func=_cmd_index)

    cron = new("cronjob", help="render a Kubernetes CronJob (+ ConfigMap) that runs `guard check` on a schedule")
    cron.add_argument("guard", help="guard file, carried in the ConfigMap")
    cron.add_argument("--url", required=True, help="the server's URL as seen from inside the cluster")
    cron.add_argument("--schedule", default="*/30 * * * *")
    cron.add_argument("--name", default="embedswap-guard")
    cron.add_argument("--namespace", default="default")
    cron.add_argument("--image", required=True, help="an image with embedswap installed (e.g. built from the wheel)")
    cron.add_argument("--api-key-secret", help="SECRET/KEY of a Secret holding the API key (by reference)")
    cron.add_argument("--out", help="write the manifests here (default: stdout)")
    cron.set_defaults(func=_cmd_cronjob)
