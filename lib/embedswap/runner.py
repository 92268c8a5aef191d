"""`embedswap run`: execute the five notebooks with papermill into a new attempt, then render the report.

Notebooks run in order; a failed one is recorded and the rest still run (the later analysis steps label what
is missing as not measured). Servers a failed notebook left behind are swept after every notebook and on
Ctrl-C, so no process outlives the run.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from embedswap.captures import Attempt, open_attempt
from embedswap.config import load_experiment
from embedswap.paths import project_root
from embedswap.targets.base import sweep_process_groups

NOTEBOOKS = [
    "01_legacy_capture",
    "02_swap_deploy",
    "03_vector_contract_diff",
    "04_latency",
    "05_parity",
]
KERNEL_NAME = "embedswap"


@dataclass
class RunResult:
    attempt: Attempt
    notebooks: dict[str, str] = field(default_factory=dict)  # name -> "ok" | "failed: ..."
    seconds: float = 0.0
    report: dict[str, Path] = field(default_factory=dict)
    parity_pass: bool | None = None

    @property
    def ok(self) -> bool:
        failed_capture = any(
            s.get("status") == "failed" for k, s in self.attempt.steps().items() if k.startswith("capture:")
        )
        return (all(v == "ok" for v in self.notebooks.values()) and not failed_capture
                and self.parity_pass is not False)


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def notebook_dir() -> Path:
    return project_root() / "notebooks"


def run_notebook(name: str, experiment_dir: Path, attempt: Attempt, kernel: str = KERNEL_NAME,
                 log_output: bool = True) -> None:
    import papermill

    attempt.notebooks.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(
        str(notebook_dir() / f"{name}.ipynb"),
        str(attempt.notebooks / f"{name}.ipynb"),
        parameters={"experiment_dir": str(experiment_dir), "attempt": attempt.name},
        kernel_name=kernel,
        cwd=str(project_root()),
        log_output=log_output,
        progress_bar=False,
    )


def run_experiment(experiment_dir: Path, attempt_name: str = "new", only: list[str] | None = None,
                   render: bool = True, log_output: bool = True) -> RunResult:
    load_experiment(experiment_dir)  # a bad config stops here, before any server starts
    attempt = open_attempt(experiment_dir, attempt_name, create=True)
    result = RunResult(attempt)
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        for name in only or NOTEBOOKS:
            print(f"[embedswap] {name} -> {attempt.notebooks / (name + '.ipynb')}", flush=True)
            try:
                run_notebook(name, experiment_dir, attempt, log_output=log_output)
                result.notebooks[name] = "ok"
                attempt.mark_step(f"notebook:{name}", "complete")
            except Exception as exc:  # papermill's PapermillExecutionError carries the cell's error
                message = f"{type(exc).__name__}: {exc}"
                result.notebooks[name] = f"failed: {message[:500]}"
                attempt.mark_step(f"notebook:{name}", "failed", error=message[:2000])
                print(f"[embedswap] {name} failed: {message[:500]}", flush=True)
            finally:
                swept = sweep_process_groups(attempt.logs)
                if swept:
                    print(f"[embedswap] stopped leftover server process groups {swept}", flush=True)
    except KeyboardInterrupt:
        attempt.mark_step("run", "failed", error="interrupted")
        raise
    finally:
        sweep_process_groups(attempt.logs)
        signal.signal(signal.SIGTERM, previous)
        result.seconds = time.monotonic() - started
    if attempt.has("parity/rows.json"):
        result.parity_pass = bool(attempt.read_json("parity/rows.json").get("pass"))
    if render:
        from embedswap.report import render_report

        result.report = render_report(experiment_dir, attempt.name)
    return result


def headline(summary: dict[str, Any]) -> list[str]:
    """A few lines for the console: what the demo measured."""
    vectors, latency = summary["vectors"], summary["latency"]
    lines = [f"attempt {summary['experiment']['attempt']}"]
    dims = vectors["dimension"]
    lines.append(f"dimension legacy={dims['legacy']} candidate={dims['candidate']}")
    cos = vectors["cosine"]
    if cos.get("min") is not None:
        lines.append(f"cosine candidate vs legacy: min {cos['min']:.6f} median {cos['median']:.6f} "
                     f"max {cos['max']:.6f}")
    for role in ("legacy", "candidate"):
        info = latency[role]
        if info.get("measured"):
            lines.append(f"{role}: sequential p50 {info['sequential']['p50_ms']:.1f} ms, concurrent "
                         f"p50 {info['concurrent']['p50_ms']:.1f} ms, {info['concurrent']['docs_per_s']:.1f} docs/s")
        else:
            lines.append(f"{role}: latency not measured ({info.get('why')})")
    parity = summary["parity"]
    if parity.get("measured"):
        lines.append(f"parity gate: {'PASS' if parity['pass'] else 'FAIL'}")
    return lines
