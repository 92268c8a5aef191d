"""As root the embedded PostgreSQL runs as 'nobody' (embedswap/vectorstore/server.py): where 'nobody' cannot enter
the folders down to the wheel's binaries (a checkout cloned under `mktemp -d`, mode 0700), the store says so and
names the folder, instead of initdb's "cannot open shared object file". No server is started here."""

from __future__ import annotations

import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from embedswap.vectorstore import server
from embedswap.vectorstore.server import EmbeddedPostgres, StoreError


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A folder every user may enter (pytest's own temporary folders are 0700), removed after the test."""
    root = Path(tempfile.mkdtemp(prefix="embedswap-access-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def _binaries(root: Path) -> Path:
    path = root / "venv" / "pginstall18" / "bin"
    path.mkdir(parents=True)
    (path / "postgres").touch()
    return path


def test_binaries_nobody_cannot_reach_are_named(open_root: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    nobody = pwd.getpwnam("nobody")
    closed = open_root / "checkout"
    binaries = _binaries(closed)
    closed.chmod(0o700)
    monkeypatch.setattr(server, "_run_as", lambda: nobody)
    monkeypatch.setattr(server, "bin_dir", lambda: binaries)
    store = EmbeddedPostgres(tmp_path / "store")
    with pytest.raises(StoreError) as info:
        store.start()
    message = str(info.value)
    assert "'nobody'" in message and "chmod o+x" in message and str(binaries) in message
    assert f"enter {closed} " in message
    assert store.process is None


def test_binaries_nobody_can_reach_pass_the_check(open_root: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    binaries = _binaries(open_root)
    assert server._closed(binaries, nobody) is None
    binaries.parent.chmod(0o700)
    assert server._closed(binaries, nobody) == binaries.parent
