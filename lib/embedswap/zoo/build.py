"""Deterministic model builds that are complete or absent: a marker file written last holds the sha256 of every
other file; the build goes into a temporary folder next to the destination and is renamed into place under a
per-destination file lock. Split from ``tiny_qwen3.py`` so other builders can use it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MARKER = "embedswap_build.json"  # written last; holds the sha256 of every other file


class BuildError(RuntimeError):
    """The destination cannot take the build (it holds something else)."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() != MARKER)


def content_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file of the build except the marker, by relative path."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in content_files(folder)}


def combined(files: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{name}\0{sha}\n" for name, sha in sorted(files.items())).encode()).hexdigest()


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def is_complete(folder: Path, name: str) -> bool:
    """The folder holds a finished build named ``name``: its marker exists and matches every file's sha256."""
    folder = Path(folder)
    marker = read_marker(folder)
    if not marker or marker.get("name") != name or not isinstance(marker.get("files"), dict):
        return False
    try:
        files = content_hashes(folder)
    except OSError:
        return False
    return files == marker["files"] and marker.get("sha256") == combined(files)


def write_marker(out: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Make the content files world-readable, then write the marker (``fields`` + the hashes) last."""
    for path in content_files(out):
        path.chmod(0o644)  # safetensors creates its file 0600
    files = content_hashes(out)
    marker = {**fields, "files": files, "sha256": combined(files)}
    (out / MARKER).write_text(json.dumps(marker, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / MARKER).chmod(0o644)
    return marker


@contextlib.contextmanager
def build_lock(target: Path) -> Iterator[None]:
    """One builder per destination across processes (a second one waits, then finds the folder complete)."""
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_built(target: Path, name: str, build_into: Callable[[Path], Any], *, force: bool = False) -> Path:
    """``target`` holding a complete build ``name``, made by ``build_into(tmp)`` first when it is not.

    An interrupted build never leaves a folder that looks complete. An incomplete folder at ``target`` is replaced
    only when it is an earlier, broken build (it has a marker) or empty, or ``force`` is given; anything else is
    refused with :class:`BuildError`.
    """
    if not force and is_complete(target, name):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target):
        if not force and is_complete(target, name):  # built by another process while this one waited
            return target
        if target.exists():
            leftover = target.is_dir() and (read_marker(target) is not None or not any(target.iterdir()))
            if not (force or leftover):
                raise BuildError(f"{target} exists and is not a build of {name}; remove it or pass force")
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            build_into(tmp)
            tmp.chmod(0o755)  # mkdtemp makes it 0700
            if target.exists():
                old = target.with_name(f".{target.name}.old-{os.getpid()}")
                target.rename(old)
                shutil.rmtree(old, ignore_errors=True)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
