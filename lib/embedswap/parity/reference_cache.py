"""A content-addressed cache of the parity witnesses' vectors (issue 61): the model's own computations, which every
run of one model on one workload repeats to the bit (about 15 runs of the embedded MiniLM per ``make test``, ~17 s of
CPU each).

An entry is one witness' vectors, stored under the sha256 of everything they depend on (:func:`key_material`):
the content of every file of the model's folder, the exact texts in order, the implementation, its batch setting,
dtype and device, the kit's code that runs it, the versions of torch / transformers / sentence-transformers /
tokenizers / numpy / safetensors, the Python and the platform, the CPU's instruction set and the thread settings
(a float reduction split over another number of threads, or run by other kernels, rounds differently). Anything
not in the key that changed the numbers would be served stale, so the key errs on the side of a miss.

Where: ``$EMBEDSWAP_REFERENCE_CACHE`` (a folder; ``off`` turns the cache off), else ``$EMBEDSWAP_CACHE/reference``
when that is set, else ``~/.cache/embedswap/reference`` (outside the repository, like the wheel cache: clones and
worktrees on one machine share it). An entry is written to a temp file and renamed into place, so a reader never
sees half of one; an entry that cannot be read, or whose vectors do not match the sha256 stored with them, is
recomputed and replaced, never trusted. A failure to store is recorded, never fatal: the run has its vectors.

Not cached: the engine witness (``vllm-transformers``: it runs in the engine environment, whose versions this
process does not import), a model without a local folder to hash, and a witness that failed.

The diagnosis' truth pass (the model's own pipeline over the diagnosed texts, :mod:`embedswap.diagnosis.truth_cache`)
is kept here too, through :func:`find` and :func:`keep`, its key extended by what that pass depends on besides.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import json
import os
import platform
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.captures import atomic_write_bytes

SCHEMA = 1
SWITCH = "EMBEDSWAP_REFERENCE_CACHE"
OFF = ("off", "0", "false", "no")
CACHED = ("sentence-transformers", "transformers")  # implementations run in this process (their versions known)
VERSIONS = ("torch", "transformers", "sentence-transformers", "tokenizers", "numpy", "safetensors")
# the kit's code that turns a model into a witness' vectors (parity.witnesses and the transformers backend with the
# legacy pipeline's pooling); a change there changes the numbers without changing a version
CODE = ("parity/witnesses.py", "parity/backends.py", "legacy/pipeline.py", "legacy/st_config.py", "models.py")
PACKAGE = Path(__file__).resolve().parents[1]


def cache_root() -> Path | None:
    """The cache folder, or None when ``EMBEDSWAP_REFERENCE_CACHE=off``."""
    value = os.environ.get(SWITCH, "").strip()
    if value.lower() in OFF:
        return None
    if value:
        return Path(value).expanduser()
    if os.environ.get("EMBEDSWAP_CACHE"):
        return Path(os.environ["EMBEDSWAP_CACHE"]) / "reference"
    return Path.home() / ".cache" / "embedswap" / "reference"


def _sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@functools.cache
def _folder_digest(folder: str, stats: tuple[tuple[str, int, int], ...]) -> str:
    """The sha256 of a folder's files' names and contents; ``stats`` (name, size, mtime) keys the memo, so a
    process hashes a model once (88 MB of MiniLM: ~0.3 s) and again only after a file changed."""
    lines = "".join(f"{name}\t{_sha256_file(Path(folder) / name)}\n" for name, _, _ in stats)
    return hashlib.sha256(lines.encode()).hexdigest()


def model_digest(folder: Path) -> str:
    """Every file of the model's folder (symlinks followed, as the loaders do), by content."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    stats = tuple((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _folder_digest(str(folder), stats)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _cpu() -> str:
    """The CPU's model and instruction-set flags (which kernels torch picks), hashed; the processor name elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    wanted = [line for line in lines if line.split(":")[0].strip() in ("model name", "flags", "Features")]
    return hashlib.sha256("\n".join(dict.fromkeys(wanted)).encode()).hexdigest()[:16]


@functools.cache
def code_digest(files: tuple[str, ...]) -> str:
    """The sha256 of the kit's ``files`` (paths under the package), in order."""
    return hashlib.sha256("".join(_sha256_file(PACKAGE / name) for name in files).encode()).hexdigest()


def _code() -> str:
    return code_digest(CODE)


def texts_digest(texts: list[str]) -> str:
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()


def key_material(model: str, texts: list[str], implementation: str, batch: int, dtype: str = "float32",
                 device: str = "cpu", code: tuple[str, ...] | None = None,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything a witness' vectors depend on (the module's docstring says why each); ``code``: the kit's files
    that compute them, ``extra``: what another kind of entry depends on besides (absent for a witness, whose keys
    stay as they were)."""
    return {"schema": SCHEMA, "model": model, "texts": texts_digest(texts), "n_texts": len(texts),
            **({"extra": extra} if extra is not None else {}),
            "implementation": implementation, "batch": batch, "dtype": dtype, "device": device,
            "code": _code() if code is None else code_digest(code),
            "versions": {name: _version(name) for name in VERSIONS},
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "platform": f"{platform.system()} {platform.machine()}", "cpu": _cpu(),
            "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS"), "cpus": os.cpu_count()}}


def key_of(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def entry_path(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}.npz"


def _vectors_sha256(vectors: np.ndarray) -> str:
    digest = hashlib.sha256(f"{vectors.dtype.str}{vectors.shape}".encode())
    digest.update(np.ascontiguousarray(vectors).tobytes())
    return digest.hexdigest()


def store(root: Path, key: str, material: dict[str, Any], vectors: np.ndarray, where: str) -> None:
    """One entry, written whole (temp file, fsync, rename) or not at all; an existing one is replaced."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    meta = {"key": key, "material": material, "sha256": _vectors_sha256(vectors),
            "computed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "computed_by": f"{socket.gethostname()}: {where}"}
    buffer = io.BytesIO()
    np.savez(buffer, vectors=vectors, meta=np.array(json.dumps(meta, sort_keys=True)))
    atomic_write_bytes(entry_path(root, key), buffer.getvalue(), overwrite=True)


def load(root: Path, key: str) -> tuple[np.ndarray | None, dict[str, Any] | str]:
    """(vectors, the entry's meta) of a verified entry; (None, why) when there is none or it is not to be trusted."""
    path = entry_path(root, key)
    if not path.is_file():
        return None, "absent"
    try:
        with np.load(path, allow_pickle=False) as entry:
            vectors = np.array(entry["vectors"])
            meta = json.loads(str(entry["meta"]))
    except Exception as exc:  # noqa: BLE001 - any unreadable entry (truncated zip, bad JSON) is recomputed
        return None, f"unreadable ({type(exc).__name__})"
    if meta.get("key") != key or key_of(meta.get("material") or {}) != key:
        return None, "its key does not match"
    if meta.get("sha256") != _vectors_sha256(vectors):
        return None, "its vectors do not match their sha256"
    return vectors, meta


def model_key(model_path: str) -> str | None:
    """The digest of the model's local folder (None: none to hash, or a file that cannot be read here: the loaders
    will say so; nothing is keyed on it)."""
    from embedswap.models import local_model_folder

    folder = local_model_folder(model_path)
    try:
        return model_digest(folder) if folder is not None else None
    except OSError:
        return None


def not_cached(why: str) -> dict[str, Any]:
    return {"computed": "in this attempt", "cache_key": None, "not_cached": why}


def find(root: Path, material: dict[str, Any]) -> tuple[np.ndarray | None, dict[str, Any], str]:
    """(the entry's vectors or None, where they come from, the key): a verified entry is read, any other missed."""
    key = key_of(material)
    vectors, meta = load(root, key)
    if vectors is not None and isinstance(meta, dict):
        return vectors, {"computed": "read from the reference cache", "cache_key": key,
                         "first_computed_at": meta.get("computed_at"),
                         "first_computed_by": meta.get("computed_by")}, key
    return None, {"computed": "in this attempt", "cache_key": key,
                  **({} if meta == "absent" else {"cache_entry_recomputed": meta})}, key


def keep(root: Path, key: str, material: dict[str, Any], vectors: np.ndarray, where: str,
         origin: dict[str, Any]) -> None:
    """:func:`store`; a failure is recorded in ``origin``, never raised."""
    try:
        store(root, key, material, vectors, where)
    except OSError as exc:  # a full disk or a read-only cache: the run has its vectors all the same
        origin["not_stored"] = f"{type(exc).__name__}: {exc}"[:200]


def cached_witness_vectors(model_path: str, texts: list[str], witnesses: list[Any], where: str,
                           compute: Callable[..., tuple[dict[str, np.ndarray], dict[str, str]]]) -> tuple[
                               dict[str, np.ndarray], dict[str, str], dict[str, Any]]:
    """:func:`parity.witnesses.witness_vectors` (``compute``) through the cache: each witness' vectors read from
    its entry or computed (and stored), the witnesses' errors, and where each witness' vectors came from (the
    attempt's reference/meta.json records it). ``where``: the attempt, named in an entry it computes."""
    root = cache_root()
    model = model_key(model_path) if root is not None else None
    origin: dict[str, Any] = {}
    found: dict[str, np.ndarray] = {}
    keys: dict[str, tuple[str, dict[str, Any]]] = {}
    for witness in witnesses:
        if root is None or model is None or witness.implementation not in CACHED:
            origin[witness.name] = not_cached(
                "the reference cache is off" if root is None else "no local model folder to hash"
                if model is None else "an engine of another environment (versions not known here)")
            continue
        material = key_material(model, texts, witness.implementation, witness.batch)
        vectors, origin[witness.name], key = find(root, material)
        if vectors is not None:
            found[witness.name] = vectors
        else:
            keys[witness.name] = (key, material)
    missing = [w for w in witnesses if w.name not in found]
    vectors, errors = compute(model_path, texts, missing) if missing else ({}, {})
    for name, computed in vectors.items():
        if name in keys and root is not None:
            keep(root, *keys[name], computed, where, origin[name])
    ordered = {w.name: found.get(w.name, vectors.get(w.name)) for w in witnesses}
    return {n: v for n, v in ordered.items() if v is not None}, errors, origin
