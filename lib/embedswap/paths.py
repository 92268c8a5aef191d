"""Where things live: the project root, the packaged notebooks and sample workload, the engine interpreter, the
report folder of an experiment.

The notebooks, the sample workload (``data/``), the engine install script and its pins ship inside the package
(``embedswap/_assets/``). In the repository those are links to the top-level ``notebooks/ data/ scripts/
requirements/`` folders, so a checkout and an installed wheel find them the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from embedswap.exits import StepError

ASSETS = Path(__file__).resolve().parent / "_assets"
SAMPLE_PREFIX = "sample:"  # workload files of the packaged sample: `documents: sample:documents.jsonl`
PACKAGED = "packaged"  # `notebooks: packaged` (the default): the notebooks shipped with the kit


def project_root() -> Path:
    """The checkout embedswap runs from: $EMBEDSWAP_ROOT, else the repo holding this package, else the cwd."""
    if os.environ.get("EMBEDSWAP_ROOT"):
        return Path(os.environ["EMBEDSWAP_ROOT"]).resolve()
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").exists() and (repo / "lib" / "embedswap").is_dir():
        return repo
    return Path.cwd()


def in_checkout() -> bool:
    """True when this package is the repository's own lib/embedswap (editable install or PYTHONPATH)."""
    repo = Path(__file__).resolve().parents[2]
    return (repo / "pyproject.toml").exists() and (repo / "lib" / "embedswap").is_dir()


def asset(*parts: str) -> Path:
    """A file shipped with the package: ``asset("notebooks", "04_latency.ipynb")``."""
    return ASSETS.joinpath(*parts)


def packaged_notebooks() -> Path:
    return asset("notebooks")


def sample_data() -> Path:
    """The packaged sample workload: documents.jsonl, queries.jsonl, qrels.jsonl (and its README)."""
    return asset("data")


def resolve_sample(value: str) -> Path | None:
    """``sample:documents.jsonl`` -> the packaged file; None for any other value."""
    if not value.startswith(SAMPLE_PREFIX):
        return None
    return sample_data() / value[len(SAMPLE_PREFIX):]


def notebook_folder(experiment_dir: Path, setting: str | None) -> Path:
    """Where an experiment's notebooks are: the packaged ones, or a folder relative to its experiment.yaml."""
    if not setting or setting == PACKAGED:
        return packaged_notebooks()
    path = Path(setting).expanduser()
    return path if path.is_absolute() else (Path(experiment_dir) / path).resolve()


def config_dir() -> Path:
    """The kit's own settings (which engine interpreter to use): $EMBEDSWAP_CONFIG_DIR, else XDG's config home."""
    if os.environ.get("EMBEDSWAP_CONFIG_DIR"):
        return Path(os.environ["EMBEDSWAP_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "embedswap"


def engine_record() -> Path:
    return config_dir() / "engine.json"


def recorded_engine() -> dict | None:
    """What `embedswap engine install` / `engine use` recorded: {"python": ..., "kind": ...}; None if nothing."""
    try:
        record = json.loads(engine_record().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("python") else None


def default_engine_dir() -> Path:
    """Where `embedswap engine install` builds the engine environment when --into is not given: the project's
    .venvs/engine in a checkout (or under $EMBEDSWAP_ROOT), else the user's data folder."""
    if in_checkout() or os.environ.get("EMBEDSWAP_ROOT"):
        return project_root() / ".venvs" / "engine"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "embedswap" / "engine"


def engine_python() -> str:
    """The interpreter of the engine environment (vLLM, Dynamo), which is kept apart from the kit's:
    $EMBEDSWAP_ENGINE_PYTHON, else the one `embedswap engine install|use` recorded, else the default folder's."""
    if os.environ.get("EMBEDSWAP_ENGINE_PYTHON"):
        return os.environ["EMBEDSWAP_ENGINE_PYTHON"]
    record = recorded_engine()
    if record:
        return str(record["python"])
    return str(default_engine_dir() / "bin" / "python")


def llamacpp_python() -> str:
    """The interpreter of llama.cpp's server environment (``make llamacpp``): $EMBEDSWAP_LLAMACPP_PYTHON, else the
    project's .venvs/llamacpp."""
    if os.environ.get("EMBEDSWAP_LLAMACPP_PYTHON"):
        return os.environ["EMBEDSWAP_LLAMACPP_PYTHON"]
    return str(project_root() / ".venvs" / "llamacpp" / "bin" / "python")


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
