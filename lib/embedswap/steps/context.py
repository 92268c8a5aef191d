"""What every step shares: the step context (experiment, attempt, workload), opening it, and the step error.

``embedswap.steps`` is the face the notebooks import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from embedswap.captures import Attempt, open_attempt
from embedswap.config.experiment import Experiment, load_experiment
from embedswap.exits import StepError  # noqa: F401  (re-exported: the steps import it from here)
from embedswap.paths import find_experiment_dir
from embedswap.reasons import not_measured
from embedswap.pipeline.build import summarise
from embedswap.summary.model import Summary
from embedswap.measure.workload import Workload, load_workload


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


def open_step(experiment_dir: str | Path = "", attempt: str = "", create: bool = False) -> StepContext:
    folder = find_experiment_dir(experiment_dir)
    experiment = load_experiment(folder)
    chosen = open_attempt(folder, attempt, create=create)
    return StepContext(experiment, folder, chosen, load_workload(experiment, folder))
