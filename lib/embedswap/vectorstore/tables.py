"""The kit's tables in its own schema: create with ``vector(dim)``, bulk load with COPY, an HNSW index with the
index's distance, top-k search (through the index, and exact beside it), and a read-only sample of a user's table.

Exact search runs the same ORDER BY with index scans turned off for that transaction, so both searches use the
store's own distance arithmetic (float4) and differ only in the index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import psycopg
from psycopg import sql

from embedswap.vectorstore.connect import check_identifier, one_line
from embedswap.vectorstore.server import StoreError

Distance = Literal["cosine", "inner_product", "l2"]
OPCLASS: dict[str, str] = {"cosine": "vector_cosine_ops", "inner_product": "vector_ip_ops", "l2": "vector_l2_ops"}
OPERATOR: dict[str, str] = {"cosine": "<=>", "inner_product": "<#>", "l2": "<->"}
MAX_DIM = 2000  # pgvector's limit for an HNSW index on vector


class StoreLost(StoreError):
    """The server went away mid-run (connection lost, server killed): the caller records it as a reason."""


def _qualified(schema: str, table: str) -> Any:
        return sql.Identifier(check_identifier(schema), check_identifier(table))


def _guard(action: str, exc: BaseException) -> StoreError:

    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreLost(f"the vector store went away while {action}: {one_line(exc)}")
    return StoreError(f"{action} failed: {one_line(exc)}")


def create_table(conn: Any, schema: str, table: str, dim: int) -> None:
    """A fresh table ``schema.table(id int primary key, embedding vector(dim))``; an older one of the kit is
    replaced (only within the kit's schema)."""
    if dim < 1:
        raise StoreError(f"cannot index vectors of {dim} dimensions")
    name = _qualified(schema, table)
    try:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(name))
        conn.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY, embedding vector({}) NOT NULL)")
                     .format(name, sql.Literal(int(dim))))
    except psycopg.Error as exc:
        raise _guard(f"creating {schema}.{table}", exc) from None


def drop_table(conn: Any, schema: str, table: str) -> None:
    try:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(_qualified(schema, table)))
    except psycopg.Error as exc:
        raise _guard(f"dropping {schema}.{table}", exc) from None


def bulk_load(conn: Any, schema: str, table: str, vectors: np.ndarray, ids: np.ndarray | None = None) -> int:
    """COPY the rows in binary (ids default to row numbers); returns the rows loaded."""
    vectors = np.asarray(vectors, dtype=np.float32)
    ids = np.arange(len(vectors)) if ids is None else np.asarray(ids)
    statement = sql.SQL("COPY {} (id, embedding) FROM STDIN WITH (FORMAT BINARY)").format(_qualified(schema, table))
    try:
        with conn.cursor() as cur, cur.copy(statement) as copy:
            copy.set_types(["int4", "vector"])
            for i, row in zip(ids, vectors, strict=True):
                copy.write_row((int(i), row))
        if not conn.autocommit:
            conn.commit()
    except psycopg.Error as exc:
        raise _guard(f"loading {schema}.{table}", exc) from None
    return len(vectors)


def update_rows(conn: Any, schema: str, table: str, ids: np.ndarray, vectors: np.ndarray) -> int:
    """Replace the vectors of ``ids`` in place, as a rolling re-embed does (an HNSW index on the table takes the new
    versions as inserts): COPY into a temporary table, then one UPDATE ... FROM."""
    vectors = np.asarray(vectors, dtype=np.float32)
    staging = sql.Identifier(check_identifier(f"{table}_staging"))
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} (id integer PRIMARY KEY, embedding vector({})) "
                                 "ON COMMIT DROP").format(staging, sql.Literal(int(vectors.shape[1]))))
            with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} (id, embedding) FROM STDIN WITH (FORMAT BINARY)")
                                                .format(staging)) as copy:
                copy.set_types(["int4", "vector"])
                for i, row in zip(ids, vectors, strict=True):
                    copy.write_row((int(i), row))
            done = conn.execute(sql.SQL("UPDATE {} AS t SET embedding = s.embedding FROM {} AS s WHERE t.id = s.id")
                                .format(_qualified(schema, table), staging))
            return int(done.rowcount)
    except psycopg.Error as exc:
        raise _guard(f"updating {schema}.{table}", exc) from None


def create_hnsw_index(conn: Any, schema: str, table: str, distance: Distance, *, m: int = 16,
                      ef_construction: int = 64, maintenance_work_mem: str = "512MB") -> None:
    """An HNSW index with the operator class of ``distance`` (pgvector's defaults m=16, ef_construction=64).

    ``maintenance_work_mem`` is raised for this build only (``SET LOCAL``): pgvector builds the graph in memory
    while it fits and much more slowly once it does not; PostgreSQL's default 64MB holds about 100k 384-dimension
    vectors' graph only partly."""
    if distance not in OPCLASS:
        raise StoreError(f"unknown distance {distance!r} (cosine, inner_product or l2)")
    statement = sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})").format(
        sql.Identifier(check_identifier(f"{table}_hnsw")), _qualified(schema, table), sql.SQL(OPCLASS[distance]),
        sql.Literal(int(m)), sql.Literal(int(ef_construction)))
    try:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
            conn.execute(statement)
    except psycopg.Error as exc:
        raise _guard(f"building the HNSW index on {schema}.{table}", exc) from None


def search(conn: Any, schema: str, table: str, queries: np.ndarray, k: int, distance: Distance, *,
           exact: bool = False, ef_search: int = 40) -> np.ndarray:
    """Top-``k`` ids for each query, best first (``(n_queries, k)``, -1 where fewer rows came back).

    ``exact`` turns index scans off in the transaction (a sequential scan and sort); otherwise ``hnsw.ef_search``
    is set for it (pgvector's default is 40; it must be at least ``k`` to return ``k`` rows).
    """
    queries = np.asarray(queries, dtype=np.float32)
    statement = sql.SQL("SELECT id FROM {} ORDER BY embedding {} %s LIMIT %s").format(
        _qualified(schema, table), sql.SQL(OPERATOR[distance]))
    out = np.full((len(queries), k), -1, dtype=np.int64)
    try:
        with conn.transaction(), conn.cursor() as cur:
            if exact:
                cur.execute("SET LOCAL enable_indexscan = off")
                cur.execute("SET LOCAL enable_bitmapscan = off")
            else:
                cur.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(int(ef_search), k))))
            for qi, query in enumerate(queries):
                cur.execute(statement, (query, k))
                rows = [r[0] for r in cur.fetchall()]
                out[qi, : len(rows)] = rows
    except psycopg.Error as exc:
        raise _guard(f"searching {schema}.{table}", exc) from None
    return out


@dataclass(frozen=True)
class SampledRow:
    id: Any
    vector: np.ndarray
    text: str | None


def _table_identifier(table: str) -> Any:
    parts = table.split(".")
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise StoreError(f"table {table!r} is not 'table' or 'schema.table'")
    return sql.Identifier(*parts)


def sample_rows(conn: Any, table: str, id_column: str, vector_column: str, text_column: str | None, n: int,
                seed: int) -> list[SampledRow]:
    """``n`` rows of a user's table, read-only: the same ``seed`` picks the same rows (ordered by a hash of the id
    and the seed, so the draw does not depend on the table's physical order). The transaction is READ ONLY, so
    nothing in the user's database can change through it."""
    columns = [sql.Identifier(id_column), sql.Identifier(vector_column)]
    columns.append(sql.Identifier(text_column) if text_column else sql.SQL("NULL"))
    statement = sql.SQL("SELECT {} FROM {} ORDER BY md5({}::text || %s), {} LIMIT %s").format(
        sql.SQL(", ").join(columns), _table_identifier(table), sql.Identifier(id_column), sql.Identifier(id_column))
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SET TRANSACTION READ ONLY")
            cur.execute(statement, (f":{int(seed)}", int(n)))
            rows = cur.fetchall()
    except psycopg.Error as exc:
        raise _guard(f"sampling {table}", exc) from None
    out = []
    for row_id, vector, text in rows:
        if vector is None:
            continue
        out.append(SampledRow(row_id, np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector,
                                                 dtype=np.float32), text))
    return out
