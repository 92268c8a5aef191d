"""Where things live: the project root, the engine interpreter, the report folder of an experiment."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The checkout embedswap runs from: $EMBEDSWAP_ROOT, else the repo holding this package, else the cwd."""
    if os.environ.get("EMBEDSWAP_ROOT"):
        return Path(os.environ["EMBEDSWAP_ROOT"]).resolve()
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").exists() and (repo / "lib" / "embedswap").is_dir():
        return repo
    return Path.cwd()


def engine_python() -> str:
    """The interpreter of the engine environment (vLLM, Dynamo), which is kept apart from the kit's."""
    if os.environ.get("EMBEDSWAP_ENGINE_PYTHON"):
        return os.environ["EMBEDSWAP_ENGINE_PYTHON"]
    return str(project_root() / ".venvs" / "engine" / "bin" / "python")


def cache_dir() -> Path:
    """The project's own cache (vLLM's compile cache, Dynamo's state), never the user's home."""
    path = Path(os.environ.get("EMBEDSWAP_CACHE", project_root() / ".cache"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def report_dir(experiment_dir: Path) -> Path:
    """reports/<experiment folder name>/ next to experiments/, or <experiment>/report when it lives elsewhere."""
    experiment_dir = experiment_dir.resolve()
    if experiment_dir.parent.name == "experiments":
        return experiment_dir.parent.parent / "reports" / experiment_dir.name
    return experiment_dir / "report"
