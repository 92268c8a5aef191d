"""Raw captures: one attempt folder per run, files written atomically, never overwritten, checksummed.

Layout of an attempt::

    experiments/<date>-<slug>/attempts/<timestamp>/
      manifest.json            # every capture file with its sha256 and size
      steps.json               # status of each step: complete / failed / partial, with the error
      captures/<target>/...    # vectors, responses, latency records
      logs/<target>.log        # server logs
      notebooks/               # executed notebooks
      summary.json
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.redact import redact_bytes

ATTEMPTS = "attempts"
MANIFEST = "manifest.json"
STEPS = "steps.json"
SUPERSEDED = ".superseded"  # captures/.superseded/<stamp>/<target>/: an earlier, incomplete try, kept as written
PAIRED_LEGACY = "paired_legacy"  # <candidate>/paired_legacy/: legacy runs alternating with the candidate's (interleave)
_manifest_lock = threading.Lock()


class CaptureExistsError(FileExistsError):
    """A capture file is already there: captures are never overwritten (start a new attempt instead)."""


class AttemptNotFoundError(FileNotFoundError):
    """No attempt folder matches."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_bytes(path: Path, data: bytes, overwrite: bool = False) -> None:
    """Write to a temp file in the same folder, fsync, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not overwrite:
        raise CaptureExistsError(f"{path} already exists; captures are never overwritten")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            # link() fails if the target appeared meanwhile, unlike rename()
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def json_bytes(data: Any) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False, default=_json_default) + "\n").encode()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


@dataclass(frozen=True)
class Attempt:
    """One `embedswap run` (or one standalone notebook session) of an experiment."""

    experiment_dir: Path
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def captures(self) -> Path:
        return self.path / "captures"

    @property
    def logs(self) -> Path:
        path = self.path / "logs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def notebooks(self) -> Path:
        return self.path / "notebooks"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    # --- writing ---------------------------------------------------------------------------------------------
    def write_bytes(self, relative: str, data: bytes) -> Path:
        path = self.captures / relative
        if path.suffix != ".npy":  # an API key echoed in an error text must not reach a capture
            data = redact_bytes(data)
        atomic_write_bytes(path, data)
        self._record(path)
        return path

    def write_json(self, relative: str, data: Any) -> Path:
        return self.write_bytes(relative, json_bytes(data))

    def write_jsonl(self, relative: str, records: list[dict[str, Any]]) -> Path:
        text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False, default=_json_default) + "\n" for r in records)
        return self.write_bytes(relative, text.encode())

    def write_array(self, relative: str, array: np.ndarray) -> Path:
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(array), allow_pickle=False)
        return self.write_bytes(relative, buffer.getvalue())

    def array_stream(self, relative: str, shape: tuple[int, ...], dtype: Any = np.float32) -> ArrayStream:
        """An .npy capture filled in part by part (a memory-mapped temp file), linked into place on ``commit``:
        a corpus of 100k documents is never held in memory whole, and the capture is never half-written."""
        return ArrayStream(self, relative, shape, dtype)

    def _record(self, path: Path) -> None:
        with _manifest_lock:
            manifest = self.manifest()
            manifest["files"][str(path.relative_to(self.path))] = {
                "sha256": _sha256(path),
                "bytes": path.stat().st_size,
                "written": _now(),
            }
            atomic_write_bytes(self.path / MANIFEST, json_bytes(manifest), overwrite=True)

    # --- reading ---------------------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        path = self.path / MANIFEST
        if not path.exists():
            return {"attempt": self.name, "files": {}}
        return json.loads(path.read_text(encoding="utf-8"))

    def has(self, relative: str) -> bool:
        return (self.captures / relative).exists()

    def read_json(self, relative: str) -> Any:
        return json.loads((self.captures / relative).read_text(encoding="utf-8"))

    def read_jsonl(self, relative: str) -> list[dict[str, Any]]:
        text = (self.captures / relative).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def read_array(self, relative: str, mmap: bool = False) -> np.ndarray:
        """``mmap``: a read-only memory map (a 100k-document stack is paged in as it is read, not loaded)."""
        return np.load(self.captures / relative, allow_pickle=False, mmap_mode="r" if mmap else None)

    # --- step status -----------------------------------------------------------------------------------------
    def steps(self) -> dict[str, dict[str, Any]]:
        path = self.path / STEPS
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def mark_step(self, step: str, status: str, **details: Any) -> None:
        """status: running | complete | partial | failed | skipped."""
        with _manifest_lock:
            steps = self.steps()
            entry = {**steps.get(step, {}), "status": status, "updated": _now(), **details}
            steps[step] = entry
            atomic_write_bytes(self.path / STEPS, redact_bytes(json_bytes(steps)), overwrite=True)

    def step_status(self, step: str) -> str | None:
        return self.steps().get(step, {}).get("status")

    def reset_step(self, step: str, status: str, **details: Any) -> None:
        """Replace a step's entry (mark_step merges into it): a step measured again starts from a clean record."""
        with _manifest_lock:
            steps = self.steps()
            steps[step] = {"status": status, "updated": _now(), **details}
            atomic_write_bytes(self.path / STEPS, redact_bytes(json_bytes(steps)), overwrite=True)

    # --- resuming --------------------------------------------------------------------------------------------
    def retire(self, relative: str) -> str | None:
        """Move ``captures/<relative>`` aside, to ``captures/.superseded/<stamp>/<relative>``, before it is captured
        again in this attempt (resume). Nothing is deleted or rewritten: the files keep their bytes and checksums,
        and the manifest follows the move, so ``verify`` still checks them. Returns the new path (None: nothing
        was there)."""
        source = self.captures / relative
        if not source.exists():
            return None
        stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
        with _manifest_lock:
            for suffix in [""] + [f"-{i}" for i in range(2, 1000)]:
                dest = self.captures / SUPERSEDED / f"{stamp}{suffix}" / relative
                if not dest.exists():
                    break
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(source, dest)
            old, new = str(source.relative_to(self.path)), str(dest.relative_to(self.path))
            manifest = self.manifest()
            manifest["files"] = {
                (new + key[len(old):] if key == old or key.startswith(old + "/") else key): entry
                for key, entry in manifest["files"].items()
            }
            atomic_write_bytes(self.path / MANIFEST, json_bytes(manifest), overwrite=True)
        return new


class ArrayStream:
    """One .npy capture written in parts: ``stream[i:j] = rows`` fills a memory-mapped temp file beside the
    capture; ``commit`` flushes, fsyncs and links it into place (never over an existing file) and records it in
    the manifest; ``abort`` (or leaving a ``with`` block on an error) removes the temp file. numpy's own
    ``open_memmap`` writes the .npy header, so the file is a plain .npy for ``np.load``."""

    def __init__(self, attempt: Attempt, relative: str, shape: tuple[int, ...], dtype: Any = np.float32) -> None:
        self.attempt = attempt
        self.path = attempt.captures / relative
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            raise CaptureExistsError(f"{self.path} already exists; captures are never overwritten")
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self.tmp = Path(tmp)
        self.array: np.memmap | None = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=dtype, shape=shape)

    def __setitem__(self, index: Any, value: Any) -> None:
        assert self.array is not None, "stream already committed or aborted"
        self.array[index] = value

    def __getitem__(self, index: Any) -> Any:
        assert self.array is not None, "stream already committed or aborted"
        return self.array[index]

    def commit(self) -> Path:
        assert self.array is not None, "stream already committed or aborted"
        self.array.flush()
        self.array = None  # closes the map
        with self.tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        try:
            os.link(self.tmp, self.path)  # fails if the capture appeared meanwhile, unlike rename()
        finally:
            self.tmp.unlink(missing_ok=True)
        self.attempt._record(self.path)
        return self.path

    def abort(self) -> None:
        self.array = None
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> ArrayStream:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.array is not None:  # an error, or no commit: nothing half-written stays behind
            self.abort()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_attempt(experiment_dir: Path) -> Attempt:
    root = Path(experiment_dir).resolve() / ATTEMPTS
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
    for suffix in [""] + [f"-{i}" for i in range(2, 100)]:
        path = root / f"{stamp}{suffix}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        (path / "captures").mkdir()
        return Attempt(Path(experiment_dir).resolve(), path)
    raise RuntimeError(f"could not create an attempt folder under {root}")


def list_attempts(experiment_dir: Path) -> list[Attempt]:
    root = Path(experiment_dir).resolve() / ATTEMPTS
    if not root.exists():
        return []
    return [Attempt(Path(experiment_dir).resolve(), p) for p in sorted(root.iterdir()) if p.is_dir()]


def open_attempt(experiment_dir: Path, name: str = "", create: bool = False) -> Attempt:
    """``name``: an attempt folder name, "" or "latest" for the newest, "new" for a fresh one."""
    if name == "new":
        return new_attempt(experiment_dir)
    attempts = list_attempts(experiment_dir)
    if name in ("", "latest"):
        if attempts:
            return attempts[-1]
        if create:
            return new_attempt(experiment_dir)
        raise AttemptNotFoundError(f"{experiment_dir}: no attempts yet (run step 01 first, or `embedswap run`)")
    path = Path(experiment_dir).resolve() / ATTEMPTS / name
    if not path.is_dir():
        raise AttemptNotFoundError(f"{path}: no such attempt")
    return Attempt(Path(experiment_dir).resolve(), path)


def verify_attempt(attempt: Attempt) -> list[str]:
    """Re-check every checksum in the manifest; returns one line per problem (empty: all intact)."""
    problems = []
    for relative, entry in sorted(attempt.manifest()["files"].items()):
        path = attempt.path / relative
        if not path.exists():
            problems.append(f"missing: {relative}")
        elif _sha256(path) != entry["sha256"]:
            problems.append(f"changed: {relative} (sha256 differs from the manifest)")
    return problems


def capture_complete(attempt: Attempt, name: str) -> bool:
    """The target's capture step finished without problems in this attempt (so a resumed run skips it)."""
    return attempt.step_status(f"capture:{name}") == "complete" and attempt.has(f"{name}/target.json")
