"""`embedswap run`: execute the five notebooks with papermill into a new attempt, then render the report.

Before anything starts, a preflight checks the model, the workload, the ports of the servers to start and the
external URLs (PreflightError: exit code 2). Notebooks run in order; a failed one is recorded and the rest still
run (the later analysis steps label what is missing as not measured). ``--attempt latest`` resumes: targets
whose captures are complete are not measured again, the rest is. Servers a failed notebook left behind are swept
after every notebook and on Ctrl-C, so no process outlives the run.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from embedswap.captures import Attempt, AttemptNotFoundError, capture_complete, open_attempt
from embedswap.config.base import ConfigError
from embedswap.config.experiment import Experiment, load_experiment
from embedswap.config.targets import ExternalTarget
from embedswap.paths import notebook_folder, packaged_notebooks, project_root
from embedswap.redact import redact, redact_tree
from embedswap.targets.base import port_in_use, sweep_process_groups

if TYPE_CHECKING:  # the model imports pydantic; the console reads it only after a run
    from embedswap.summary.model import Summary

NOTEBOOKS = [
    "01_legacy_capture",
    "02_swap_deploy",
    "03_vector_contract_diff",
    "04_latency",
    "05_parity",
]
KERNEL_NAME = "embedswap"
CAPTURE_NOTEBOOKS = ("01_legacy_capture", "02_swap_deploy")
PREFLIGHT_TIMEOUT_S = 5.0


class PreflightError(ConfigError):
    """Something the run needs is wrong before anything starts: the model, the workload, a port, an external URL.

    A ConfigError, so `embedswap run` reports it like a bad experiment.yaml: one message, exit code 2."""


@dataclass
class RunResult:
    attempt: Attempt
    notebooks: dict[str, str] = field(default_factory=dict)  # name -> "ok" | "failed: ..."
    seconds: float = 0.0
    report: dict[str, Path] = field(default_factory=dict)
    parity_pass: bool | None = None
    report_error: str | None = None  # why no report was rendered (e.g. every step failed: no summary.json)

    @property
    def ok(self) -> bool:
        failed_capture = any(
            s.get("status") == "failed" for k, s in self.attempt.steps().items() if k.startswith("capture:")
        )
        return (all(v == "ok" or v.startswith("skipped") for v in self.notebooks.values()) and not failed_capture
                and self.parity_pass is not False and self.report_error is None)


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def notebook_dir(experiment_dir: Path | None = None) -> Path:
    """The experiment's notebooks (`notebooks:` in experiment.yaml), or the packaged ones."""
    if experiment_dir is None:
        return packaged_notebooks()
    return notebook_folder(Path(experiment_dir), load_experiment(experiment_dir).notebooks)


def import_papermill() -> Any:
    """papermill, imported without ``rfc3987_syntax``: jsonschema (under nbformat) imports that optional package
    to check the "iri" string format, and it compiles 38 Lark grammars on import, 1.0 s of CPU of papermill's
    1.35 s (``import papermill`` on the shared 2-core host: 1.34-1.62 s of CPU, 0.34-0.37 s without it), once
    per `embedswap run`. Nothing here checks formats: nbformat validates notebooks without a format checker."""
    import sys

    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "import" raises ImportError
    import papermill

    return papermill


def run_notebook(name: str, experiment_dir: Path, attempt: Attempt, kernel: str = KERNEL_NAME,
                 log_output: bool = True) -> None:
    """Execute one notebook into the attempt in a fresh kernel.

    The kernel is killed once the last cell's outputs are in (nbclient's ``shutdown_kernel="immediate"``), not
    asked to shut down: the graceful way waited for the interpreter to tear down torch, scipy and the rest,
    1.1-2.4 s a notebook (04_latency on the shared 2-core host: 1.23 and 2.41 s from the last cell's end to
    papermill's, against 0.13 and 0.14 s killed), five times a run. Nothing is left for the kernel to do by
    then: every cell has returned and its outputs arrived, servers and temporary folders are closed by the
    cells' ``with`` blocks, and the servers' process groups are swept after each notebook anyway.
    """
    papermill = import_papermill()

    from embedswap.kernel import KitKernelManager

    attempt.notebooks.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(
        str(notebook_dir(experiment_dir) / f"{name}.ipynb"),
        str(attempt.notebooks / f"{name}.ipynb"),
        parameters={"experiment_dir": str(experiment_dir), "attempt": attempt.name},
        kernel_name=kernel,
        kernel_manager_class=KitKernelManager,  # this interpreter: no kernel has to be registered
        cwd=str(project_root()),
        log_output=log_output,
        progress_bar=False,
        shutdown_kernel="immediate",
    )


def _capture_targets(experiment: Experiment, notebook: str) -> list[str]:
    """The targets a capture notebook measures (none for the analysis notebooks)."""
    if notebook == "01_legacy_capture":  # with the ablation variants measured right after it, where configured
        return [experiment.legacy, *getattr(experiment, "ablations", [])]
    if notebook == "02_swap_deploy":
        return list(experiment.candidates)
    return []


def _model_problem(spec: str) -> str | None:
    from embedswap.models import ModelNotFoundError, resolve_model_path

    try:
        path = resolve_model_path(spec)
    except ModelNotFoundError as exc:
        return str(exc)
    if Path(path).exists():
        return None
    try:  # an HF id: it must be in the local cache (HF_HUB_OFFLINE=1 is always set)
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(path, "config.json")
    except Exception as exc:  # an id HF cannot even parse
        return f"model '{spec}': not a folder and not a valid Hugging Face id ({type(exc).__name__}: {exc})"
    if not isinstance(cached, str):
        return (f"model '{spec}' does not exist: it is not a folder, and not in the local Hugging Face cache "
                "(downloads are off: HF_HUB_OFFLINE=1)")
    return None


def _external_problem(name: str, config: ExternalTarget) -> str | None:
    import httpx

    from embedswap.wire.client import auth_headers

    from embedswap.wire.api_shapes import HEALTH_PATHS

    try:
        headers = auth_headers(config.api_key_env, config.headers)
    except RuntimeError as exc:
        return f"target '{name}': {exc}"
    if not config.health_check:  # no route to ask: the first request tells
        return None
    url = config.url.rstrip("/").removesuffix("/v1") + (config.health_path or HEALTH_PATHS[config.api_shape])
    try:
        response = httpx.get(url, headers=headers, timeout=PREFLIGHT_TIMEOUT_S, verify=config.verify_tls)
    except httpx.HTTPError as exc:
        return redact(f"target '{name}': {url} does not answer ({type(exc).__name__}: {exc})")
    if response.status_code in (401, 403):
        fix = f"check the key in ${config.api_key_env}" if config.api_key_env else f"set targets.{name}.api_key_env"
        return redact(f"target '{name}': {url} refused the request (HTTP {response.status_code}); {fix}")
    if response.status_code == 404:
        return redact(f"target '{name}': {url} answered HTTP 404: set targets.{name}.health_path to a route this "
                      f"server answers (e.g. /models, /health), or targets.{name}.health_check: false")
    if response.status_code != 200:
        return redact(f"target '{name}': {url} answered HTTP {response.status_code}, not 200")
    return None


def preflight(experiment: Experiment, experiment_dir: Path, targets: list[str]) -> None:
    """What can be checked before anything starts: the model can be found, the workload reads, the ports of the
    servers to start are free, the external servers answer. Raises one PreflightError listing every problem."""
    from embedswap.measure.contract import select_probes
    from embedswap.measure.workload import WorkloadError, load_workload

    problems = [p for p in [_model_problem(experiment.model.path)] if p]
    folder = notebook_folder(experiment_dir, experiment.notebooks)
    missing = [n for n in NOTEBOOKS if not (folder / f"{n}.ipynb").exists()]
    if missing:
        problems.append(f"notebooks: {folder} has no {missing[0]}.ipynb; set `notebooks: packaged` or copy them "
                        "with `embedswap new SLUG --copy-notebooks`")
    try:
        load_workload(experiment, experiment_dir)
    except WorkloadError as exc:
        problems.append(str(exc))
    try:
        select_probes(experiment.contract.probes, experiment.contract.custom)
    except ValueError as exc:
        problems.append(str(exc))
    checked: set[tuple[str, int]] = set()
    for name in targets:
        config = experiment.targets[name]
        if isinstance(config, ExternalTarget):
            problem = _external_problem(name, config)
            if problem:
                problems.append(problem)
        elif (config.host, config.port) not in checked:
            checked.add((config.host, config.port))  # legacy and candidates may share a port: they run in turn
            if port_in_use(config.host, config.port):
                problems.append(f"target '{name}': port {config.host}:{config.port} is already in use; stop what "
                                f"listens there or change targets.{name}.port")
    if problems:
        detail = problems[0] if len(problems) == 1 else "".join(f"\n  - {p}" for p in problems)
        raise PreflightError(f"{experiment_dir / 'experiment.yaml'}: nothing was started: {detail}")


def _existing_attempt(experiment_dir: Path, attempt_name: str) -> Attempt | None:
    if attempt_name == "new":
        return None
    try:
        return open_attempt(experiment_dir, attempt_name)
    except AttemptNotFoundError:
        if attempt_name in ("", "latest"):
            return None  # no attempt yet: the run makes the first one
        raise


def run_experiment(experiment_dir: Path, attempt_name: str = "new", only: list[str] | None = None,
                   render: bool = True, log_output: bool = True) -> RunResult:
    """Run the notebooks into an attempt. ``attempt_name`` 'new' makes a fresh attempt; 'latest' (or a name)
    resumes one: capture notebooks whose targets are complete are skipped (02 measures only the candidates that
    are not), and the analysis notebooks rerun when a capture was redone or when they did not complete."""
    experiment = load_experiment(experiment_dir)  # a bad config stops here, before any server starts
    if experiment.index.dsn_env:  # the user's PostgreSQL DSN: kept out of every log and notebook this run writes
        from embedswap.vectorstore.connect import register_dsn_env

        register_dsn_env(experiment.index.dsn_env)
    existing = _existing_attempt(experiment_dir, attempt_name)
    resuming = existing is not None and bool(existing.steps())
    notebooks = only or NOTEBOOKS
    to_start = [
        target for name in notebooks for target in _capture_targets(experiment, name)
        if not (resuming and capture_complete(existing, target))  # type: ignore[arg-type]
    ]
    preflight(experiment, Path(experiment_dir), to_start)  # and so does a missing model or a taken port
    attempt = existing or open_attempt(experiment_dir, attempt_name, create=True)
    result = RunResult(attempt)
    started = time.monotonic()
    if resuming and "run" in attempt.steps():  # e.g. "interrupted": keep it as the history of this run
        attempt.reset_step("run", "resumed", previous=attempt.steps()["run"])
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    recaptured = False
    try:
        for name in notebooks:
            skip = _resume_skip(attempt, experiment, name, resuming, explicit=only is not None,
                                recaptured=recaptured)
            if skip:
                result.notebooks[name] = f"skipped: {skip}"
                print(f"[embedswap] {name} skipped: {skip}", flush=True)
                continue
            if name in CAPTURE_NOTEBOOKS:
                recaptured = True
            elif name == "05_parity" and recaptured and attempt.has("parity/rows.json"):
                moved = attempt.retire("parity")  # its rows were computed from captures that changed
                attempt.reset_step("parity", "pending", superseded={"captures": moved})
            print(f"[embedswap] {name} -> {attempt.notebooks / (name + '.ipynb')}", flush=True)
            began = time.monotonic()  # the report's time table: seconds per notebook, from steps.json
            try:
                run_notebook(name, experiment_dir, attempt, log_output=log_output)
                result.notebooks[name] = "ok"
                attempt.mark_step(f"notebook:{name}", "complete", seconds=round(time.monotonic() - began, 1))
            except Exception as exc:  # papermill's PapermillExecutionError carries the cell's error
                message = redact(f"{type(exc).__name__}: {exc}")
                attempt.mark_step(f"notebook:{name}", "failed", error=message[:2000],
                                  seconds=round(time.monotonic() - began, 1))
                # one line: the cell's exception (papermill's message carries the whole traceback)
                cause = redact(f"{exc.ename}: {exc.evalue}") if hasattr(exc, "ename") else message
                result.notebooks[name] = f"failed: {' '.join(cause.split())[:500]}"
                print(f"[embedswap] {name} {result.notebooks[name]}", flush=True)
            finally:
                swept = sweep_process_groups(attempt.logs)
                if swept:
                    print(f"[embedswap] stopped leftover server process groups {swept}", flush=True)
                redact_tree(attempt.notebooks)  # a traceback or a printed header may carry an API key
                redact_tree(attempt.logs)
    except KeyboardInterrupt:
        attempt.mark_step("run", "failed", error="interrupted")
        raise
    finally:
        sweep_process_groups(attempt.logs)
        redact_tree(attempt.notebooks)
        redact_tree(attempt.logs)
        signal.signal(signal.SIGTERM, previous)
        result.seconds = time.monotonic() - started
    if attempt.summary_path.exists():  # once more, so the summary carries the last notebook's duration too
        _refresh_summary(experiment_dir, attempt)
    if attempt.has("parity/rows.json"):
        gate = attempt.read_json("parity/rows.json").get("pass")
        result.parity_pass = None if gate is None else bool(gate)  # None: nothing was gated (no document vectors asked)
    if render:
        from embedswap.report.errors import ReportError
        from embedswap.report.publish import render_report

        try:
            result.report = render_report(experiment_dir, attempt.name)
        except ReportError as exc:  # e.g. no step got far enough to write summary.json
            result.report_error = redact(str(exc))
    return result


def _refresh_summary(experiment_dir: Path, attempt: Attempt) -> None:
    """Recompute summary.json from the captures after the notebooks (a failure keeps the notebooks' summary)."""
    from embedswap.steps.context import open_step

    try:
        open_step(experiment_dir, attempt.name).summary()
    except Exception as exc:  # the report of what the notebooks wrote is still rendered
        print(f"[embedswap] summary not refreshed: {type(exc).__name__}: {exc}"[:500], flush=True)


def _resume_skip(attempt: Attempt, experiment: Experiment, notebook: str, resuming: bool, explicit: bool,
                 recaptured: bool) -> str | None:
    """Why a resumed run skips this notebook (None: run it)."""
    if not resuming:
        return None
    targets = _capture_targets(experiment, notebook)
    if targets:
        if all(capture_complete(attempt, t) for t in targets):
            return f"captures of {', '.join(targets)} complete in attempt {attempt.name}"
        return None
    # analysis notebooks only read captures: rerun when asked for, when a capture changed, or when not complete
    if explicit or recaptured or attempt.step_status(f"notebook:{notebook}") != "complete":
        return None
    return f"complete in attempt {attempt.name}, and no capture changed"


def _ms(value: Any) -> str:
    return "—" if value is None else f"{value:.1f}"


def headline(summary: Summary) -> list[str]:
    """A few lines for the console: the same headline figures the report index shows (report.headline)."""
    from embedswap.report.format import fmt
    from embedswap.report.publish import headline as headline_figures

    figures = headline_figures(summary)
    lines = [f"attempt {summary.experiment.attempt}"]
    pair = f"{figures.candidate} vs {figures.legacy}"
    if figures.cosine_min is not None:
        lines.append(f"cosine {pair}: min {figures.cosine_min:.6f}")
    else:
        lines.append(f"cosine {pair}: not measured")
    if figures.candidate_seq_p50_ms is not None or figures.candidate_conc_docs_per_s is not None:
        lines.append(f"{figures.candidate}: sequential p50 {_ms(figures.candidate_seq_p50_ms)} ms, "
                     f"{_ms(figures.candidate_conc_docs_per_s)} docs/s at concurrency {figures.concurrency}")
    else:
        lines.append(f"{figures.candidate}: latency not measured")
    if figures.candidate_seq_p50_ratio is not None or figures.candidate_conc_docs_per_s_ratio is not None:
        # the one stored ratio, formatted as the report and the post print it
        lines.append(f"latency ratio {pair}: sequential p50 {fmt(figures.candidate_seq_p50_ratio, 'ratio')}, "
                     f"throughput at concurrency {figures.concurrency} "
                     f"{fmt(figures.candidate_conc_docs_per_s_ratio, 'ratio')}")
    decided = summary.decisions.latency.ratio(figures.candidate) if figures.candidate else None
    if decided is not None and decided.verdict is not None:  # against decisions.margins, never "no difference"
        found = decided.verdict
        lines.append(f"latency verdict {pair}: {found.code}{f' ({found.direction})' if found.direction else ''}"
                     f"{f', {found.reason}' if found.reason else ''}"
                     f"{f' at {found.slices[0]}' if found.slices and found.code != 'equivalent' else ''}")
    if figures.parity_pass is not None:
        lines.append(f"parity gate: {'PASS' if figures.parity_pass else 'FAIL'}")
    return lines
