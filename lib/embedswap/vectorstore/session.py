"""One store for a run: the embedded PostgreSQL started in the attempt, or a user's own PostgreSQL reached through
the DSN in ``$dsn_env``. Either way the kit works only in its own schema, drops only the tables it created, and
nothing it started outlives the ``with``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedswap.vectorstore.connect import SCHEMA, connect, dsn_from_env, ensure_schema
from embedswap.vectorstore.server import EmbeddedPostgres


@dataclass
class Store:
    conn: Any
    schema: str
    kind: str  # "embedded" or "dsn"
    server_version: str
    pgvector_version: str
    server: EmbeddedPostgres | None = None
    tables: list[str] = field(default_factory=list)

    def alive(self) -> bool:
        return self.server.alive() if self.server is not None else not self.conn.closed


def _versions(conn: Any) -> tuple[str, str]:
    server = conn.execute("SHOW server_version").fetchone()[0]
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return str(server), str(row[0]) if row else "?"


@contextmanager
def open_store(folder: Path, dsn_env: str | None = None, schema: str = SCHEMA) -> Iterator[Store]:
    """``dsn_env`` set: the user's server (the DSN read from that variable, never written); otherwise the
    embedded server with its data in ``folder``."""
    server: EmbeddedPostgres | None = None
    conn = None
    store: Store | None = None
    try:
        if dsn_env:
            conn = connect(dsn_from_env(dsn_env), source=f"the PostgreSQL in ${dsn_env}")
            kind = "dsn"
        else:
            server = EmbeddedPostgres(Path(folder))
            server.start()
            conn = connect(server.socket_dsn)
            kind = "embedded"
        ensure_schema(conn, schema)
        store = Store(conn, schema, kind, *_versions(conn), server=server)
        yield store
    finally:
        if conn is not None and store is not None and not conn.closed:
            from embedswap.vectorstore.tables import drop_table

            for table in store.tables:
                with suppress(Exception):  # a lost server has nothing left to drop
                    drop_table(conn, schema, table)
        if conn is not None:
            with suppress(Exception):
                conn.close()
        if server is not None:
            server.stop()
