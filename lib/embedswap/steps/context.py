"""What every step shares: the step context (experiment, attempt, workload), opening it, and the step error.

``embedswap.steps`` is the face the notebooks import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from embedswap.captures import Attempt, open_attempt
from embedswap.config.experiment import Experiment, load_experiment
from embedswap.paths import project_root
from embedswap.reasons import not_measured
from embedswap.pipeline.build import summarise
from embedswap.summary.model import Summary
from embedswap.measure.workload import Workload, load_workload


class StepError(RuntimeError):
    """A step could not run (e.g. the captures it reads are missing). The message says which step to run first."""


@dataclass
class StepContext:
    experiment: Experiment
    experiment_dir: Path
    attempt: Attempt
    workload: Workload

    def summary(self) -> Summary:
        """The attempt's summary, built now and written to summary.json; returned typed, as the report reads it."""
        return summarise(self.experiment, self.experiment_dir, self.attempt, self.workload)


def why_fields(code: str, **params: object) -> dict[str, object]:
    """``why`` and ``reason`` of a not-measured entry (for entries that carry no ``measured`` flag)."""
    return {k: v for k, v in not_measured(code, **params).items() if k != "measured"}


def find_experiment_dir(experiment_dir: str | Path = "") -> Path:
    """As given (relative to the cwd, else to the project root); "" means the newest folder in experiments/."""
    if not str(experiment_dir):
        root = project_root() / "experiments"
        folders = sorted(p for p in root.glob("*/experiment.yaml")) if root.exists() else []
        if not folders:
            raise StepError(f"no experiment in {root}: create one with `embedswap new SLUG`")
        return folders[-1].parent
    for base in (Path.cwd(), project_root()):
        candidate = (base / experiment_dir).resolve()
        if (candidate / "experiment.yaml").exists():
            return candidate
    raise StepError(f"experiment folder '{experiment_dir}' has no experiment.yaml")


def open_step(experiment_dir: str | Path = "", attempt: str = "", create: bool = False) -> StepContext:
    folder = find_experiment_dir(experiment_dir)
    experiment = load_experiment(folder)
    chosen = open_attempt(folder, attempt, create=create)
    return StepContext(experiment, folder, chosen, load_workload(experiment, folder))
