"""Connections to the vector store: the embedded server, or a user's own PostgreSQL through a DSN read from an
environment variable. The DSN lives only in memory: it is registered with ``redact`` and every error about it is
one line that names the variable, never the DSN."""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
from psycopg import sql

from embedswap.redact import redact, register_secret
from embedswap.vectorstore.server import StoreError

CONNECT_TIMEOUT_S = 10
SCHEMA = "embedswap"
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def register_dsn_env(name: str) -> str:
    """Register the DSN in ``$name`` (and its password) with ``redact``; returns it ('' when unset)."""
    value = os.environ.get(name, "").strip()
    if not value:
        return ""
    register_secret(value)
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(value).get("password")
    except psycopg.Error:  # a malformed DSN: connect() says so in one line
        password = None
    if password:
        register_secret(str(password))
    return value


def dsn_from_env(name: str) -> str:
    """The DSN in ``$name``, registered as a secret (with its password, if any) before anything can print it."""
    value = register_dsn_env(name)
    if not value:
        raise StoreError(f"index.dsn_env names ${name}, which is not set (export the DSN of your PostgreSQL there)")
    return value


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact(text)


def connect(dsn: str, *, source: str = "the embedded PostgreSQL", autocommit: bool = True) -> Any:
    """A psycopg connection with pgvector's types registered; the extension is created if it is missing (a user's
    server may refuse: then one line says so). ``source`` names where the DSN came from, for the error."""
    from pgvector.psycopg import register_vector

    try:
        conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=autocommit)
    except psycopg.Error as exc:  # psycopg.Error, or a malformed DSN (ProgrammingError)
        raise StoreError(f"cannot connect to {source}: {_one_line(exc)}") from None
    try:
        has = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        if has is None:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            if not autocommit:
                conn.commit()
        register_vector(conn)
    except psycopg.Error as exc:
        conn.close()
        raise StoreError(f"{source} has no pgvector extension and it could not be created: "
                         f"{_one_line(exc)}") from None
    return conn


def ensure_schema(conn: Any, schema: str = SCHEMA) -> str:
    """The kit's own schema (created if missing); the kit's tables live only there."""
    if not _IDENT.match(schema):
        raise StoreError(f"schema name {schema!r} is not a plain lower-case identifier")
    try:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    except psycopg.Error as exc:
        raise StoreError(f"cannot create schema {schema!r}: {_one_line(exc)}") from None
    return schema


def check_identifier(name: str) -> str:
    if not _IDENT.match(name):
        raise StoreError(f"table name {name!r} is not a plain lower-case identifier")
    return name


def one_line(exc: BaseException) -> str:
    """An exception as one redacted line (for a recorded reason)."""
    return _one_line(exc)
