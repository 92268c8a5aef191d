"""Writing a report's files: atomically, and readable by everyone."""

from __future__ import annotations

from pathlib import Path

from embedswap.captures import atomic_write_bytes


def write_file(path: Path, data: bytes | str) -> Path:
    """Write atomically, readable by all (a report is for reading; the atomic writer's temp file is private)."""
    atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data, overwrite=True)
    path.chmod(0o644)
    return path
