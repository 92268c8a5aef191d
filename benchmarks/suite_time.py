"""Where the test suite's and the demo's time goes, as a table to compare the next change against (issue 61).

Reads what `make test` and `make demo` leave behind, measures nothing itself:
- `.test-reports/{unit,e2e,quiet}.xml`: the junit XML of make test's three passes (each pass's wall time is the
  testsuite's `time`; each test's time is its setup + call + teardown). `make test-fast` writes unit.xml too.
- an experiment folder's latest attempt (default: the newest `experiments/*-minilm-cpu`, what `make demo` runs):
  steps.json's seconds per notebook, and each started server's start seconds from its target.json.

    .venvs/kit/bin/python benchmarks/suite_time.py                  # both tables, the 30 slowest tests of each pass
    .venvs/kit/bin/python benchmarks/suite_time.py --slowest 10 --experiment experiments/2026-12-06-minilm-cpu
    make suite-time                                                 # the same, after make test / make demo
    .venvs/kit/bin/python benchmarks/suite_time.py --write-durations  # seconds per file, for the scheduler

`--write-durations` rewrites tests/support/durations.json (each file's seconds in make test's second pass, from
e2e.xml) and tests/support/unit_durations.json (the unit pass's, from unit.xml), which tests/conftest.py's
scheduler reads to hand out the longest files first.

The figures are one run's on a shared host: docs/testing.md puts them beside the host's load.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASSES = ("unit", "e2e", "quiet")


@dataclass(frozen=True)
class PassTime:
    name: str
    wall_s: float
    tests: int
    failed: int
    skipped: int
    slowest: list[tuple[float, str]]


def read_pass(path: Path, slowest: int) -> PassTime:
    """One pass's junit XML: its wall time, counts and slowest tests."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        raise SystemExit(f"{path}: no <testsuite> element (not pytest's junit XML?)")
    times = []
    for case in suite.iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/")
        times.append((float(case.get("time") or 0.0), f"{module}::{case.get('name')}"))
    times.sort(reverse=True)
    return PassTime(path.stem, float(suite.get("time") or 0.0), int(suite.get("tests") or 0),
                    int(suite.get("failures") or 0) + int(suite.get("errors") or 0), int(suite.get("skipped") or 0),
                    times[:slowest])


def file_seconds(path: Path) -> dict[str, float]:
    """Each test file's seconds in one pass's junit XML (its tests' setup + call + teardown), longest first."""
    seconds: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        while len(parts) > 1 and parts[-1][:1].isupper():  # a test class's name after its module's
            parts.pop()
        module = "/".join(parts) + ".py"
        seconds[module] = seconds.get(module, 0.0) + float(case.get("time") or 0.0)
    return {m: round(s, 1) for m, s in sorted(seconds.items(), key=lambda item: -item[1])}


def latest_attempt(experiment: Path) -> Path | None:
    attempts = sorted(p for p in (experiment / "attempts").glob("*") if (p / "steps.json").exists())
    return attempts[-1] if attempts else None


def demo_rows(attempt: Path) -> list[tuple[str, float | None, str]]:
    """(step, seconds, note): each notebook's seconds, then each server's start seconds."""
    steps = json.loads((attempt / "steps.json").read_text(encoding="utf-8"))
    rows: list[tuple[str, float | None, str]] = []
    for name, step in steps.items():
        if name.startswith("notebook:"):
            rows.append((name.split(":", 1)[1], step.get("seconds"), step.get("status", "")))
    for target in sorted((attempt / "captures").glob("*/target.json")):
        info = json.loads(target.read_text(encoding="utf-8"))
        if info.get("start_seconds") is not None:
            rows.append((f"start {target.parent.name}", info["start_seconds"], "server start, inside its notebook"))
    restore = attempt / "captures" / "legacy" / "restore.json"
    if restore.exists():
        rows.append(("start legacy (restore)", json.loads(restore.read_text()).get("start_seconds"), "inside 02"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=Path, default=REPO / ".test-reports",
                        help="folder of make test's junit XML (default .test-reports)")
    parser.add_argument("--experiment", type=Path, default=None,
                        help="experiment folder of a demo run (default: the newest experiments/*-minilm-cpu)")
    parser.add_argument("--slowest", type=int, default=30, help="slowest tests listed per pass (default 30)")
    parser.add_argument("--write-durations", action="store_true",
                        help="rewrite tests/support/durations.json and unit_durations.json from e2e.xml and unit.xml")
    args = parser.parse_args(argv)
    if args.write_durations:
        for report, table_name in (("e2e.xml", "durations.json"), ("unit.xml", "unit_durations.json")):
            if not (args.reports / report).exists():
                print(f"{args.reports / report}: not there, tests/support/{table_name} left as it is")
                continue
            table = file_seconds(args.reports / report)
            (REPO / "tests" / "support" / table_name).write_text(json.dumps(table, indent=1) + "\n")
            print(f"tests/support/{table_name}: {len(table)} files, {sum(table.values()):.0f} s")
        return 0

    found = [read_pass(args.reports / f"{name}.xml", args.slowest) for name in PASSES
             if (args.reports / f"{name}.xml").exists()]
    if found:
        print("| pass | tests | failed | skipped | wall s |\n|---|---:|---:|---:|---:|")
        for p in found:
            print(f"| {p.name} | {p.tests} | {p.failed} | {p.skipped} | {p.wall_s:.0f} |")
        print(f"| all | {sum(p.tests for p in found)} | {sum(p.failed for p in found)} | "
              f"{sum(p.skipped for p in found)} | {sum(p.wall_s for p in found):.0f} |")
        for p in found:
            print(f"\n{p.name}: the {len(p.slowest)} slowest tests (setup + call + teardown, s)")
            for seconds, name in p.slowest:
                print(f"  {seconds:8.1f}  {name}")
    else:
        print(f"no junit XML in {args.reports}: run make test (or make test-fast) first", file=sys.stderr)

    experiment = args.experiment
    if experiment is None:
        demos = sorted((REPO / "experiments").glob("*-minilm-cpu"))
        experiment = demos[-1] if demos else None
    attempt = latest_attempt(experiment) if experiment is not None else None
    if attempt is None:
        print("\nno demo attempt found: run make demo first (or name --experiment)", file=sys.stderr)
        return 0 if found else 1
    rows = demo_rows(attempt)
    notebooks = sum(s for name, s, _ in rows if s is not None and not name.startswith("start "))
    print(f"\ndemo: {attempt.relative_to(REPO) if attempt.is_relative_to(REPO) else attempt}")
    print("| step | seconds | note |\n|---|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {'—' if seconds is None else f'{seconds:.1f}'} | {note} |")
    print(f"| the five notebooks | {notebooks:.1f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
