"""guard index against a real embedded PostgreSQL with pgvector and a fake server: a table where 10 % of the rows
hold another server's vectors is reported as 10 % mixed with exactly those ids; the database is only read; a wrong
DSN, a missing column and an empty table are one line each (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from embedswap.cli import main
from embedswap.guard.guard_file import (
    Canary,
    Guard,
    Latency,
    Server,
    Source,
    Tolerance,
    Tolerances,
    pack_arrays,
    write_guard,
)
from embedswap.guard.index import judge, share_interval
from fakeservers import Behaviour, serve, unit_vector
from ports import free_port

OTHER = {f"d{i:03d}" for i in (3, 17, 28, 41, 45)}  # 5 of 50 rows: vectors of another pooling


def _guard(path: Path) -> Path:
    tol = Tolerance(value=1e-5, derived_from="test")
    guard = Guard(source=Source(experiment="e", attempt="a", target="fake", manifest_sha256="0" * 64,
                                kit_version="0", created="2026-12-02T00:00:00+00:00"),
                  server=Server(kind="external", served_name="embedder", embeddings_path="/v1/embeddings"),
                  tolerances=Tolerances(direction=tol, length=Tolerance(value=1e-4, derived_from="test"),
                                        latency_p50_ratio=Tolerance(value=1.1, derived_from="m")),
                  latency=Latency(requests_of=8, source="none"), batch_size=8,
                  canaries=[Canary(id="document:x", kind="document", lang="en", text="x", utf8_bytes=1,
                                   why="stratified", row=0)],
                  contract=[], arrays=pack_arrays(canaries=np.ones((1, 16))))
    return write_guard(guard, path)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    import psycopg
    from embedswap.vectorstore.server import EmbeddedPostgres
    from pgvector.psycopg import register_vector

    folder = tmp_path_factory.mktemp("pg")
    with EmbeddedPostgres(folder, port=free_port()) as pg, serve(Behaviour()) as port:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute("CREATE TABLE docs (doc_id text PRIMARY KEY, body text, embedding vector(16))")
            conn.execute("CREATE TABLE empty_docs (doc_id text PRIMARY KEY, body text, embedding vector(16))")
            for i in range(50):
                doc_id, text = f"d{i:03d}", f"document number {i} about embeddings"
                vector = unit_vector(("mean-pooled:" if doc_id in OTHER else "") + text).astype(np.float32)
                conn.execute("INSERT INTO docs VALUES (%s, %s, %s)", (doc_id, text, vector))
        yield {"dsn": pg.dsn, "url": f"http://127.0.0.1:{port}/v1", "guard": _guard(folder / "g.json")}


def _index(index, monkeypatch, *extra: str, dsn: str | None = None, table: str = "docs") -> int:
    monkeypatch.setenv("USER_DSN", dsn or index["dsn"])
    return main(["guard", "index", str(index["guard"]), "--url", index["url"], "--dsn-env", "USER_DSN",
                 "--table", table, "--id-column", "doc_id", "--vector-column", "embedding",
                 "--text-column", "body", *extra])


def test_a_tenth_of_rows_from_another_server_is_reported_with_their_ids(index, monkeypatch, capsys) -> None:
    assert _index(index, monkeypatch, "--json") == 1
    result = json.loads(capsys.readouterr().out)
    assert result["sampled"] == 50 and result["mixed"] == 5 and result["share"] == pytest.approx(0.10)
    assert set(result["mixed_ids"]) == OTHER and result["by_aspect"] == {"direction": 5}
    low, high = result["interval"]
    assert low < 0.10 < high


def test_the_index_is_only_read(index, monkeypatch, capsys) -> None:
    import psycopg

    with psycopg.connect(index["dsn"]) as conn:
        before = conn.execute("SELECT md5(string_agg(doc_id || embedding::text, ',' ORDER BY doc_id)) FROM docs"
                              ).fetchone()
    assert _index(index, monkeypatch, "--sample", "10") in (0, 1)
    capsys.readouterr()
    with psycopg.connect(index["dsn"]) as conn:
        after = conn.execute("SELECT md5(string_agg(doc_id || embedding::text, ',' ORDER BY doc_id)) FROM docs"
                             ).fetchone()
        schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()}
    assert before == after and "embedswap" not in schemas


@pytest.mark.parametrize(("how", "expected"), [
    ({"dsn": "postgresql://nobody:wrong@127.0.0.1:1/none"}, "cannot connect to the PostgreSQL in $USER_DSN"),
    ({"table": "empty_docs"}, "no rows"),
    ({"table": "no_such_table"}, "no_such_table"),
])
def test_wrong_dsn_empty_or_missing_table_is_one_line(index, monkeypatch, capsys, how, expected) -> None:
    assert _index(index, monkeypatch, **how) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "\n" not in err and "wrong" not in err


def test_a_missing_column_is_one_line(index, monkeypatch, capsys) -> None:
    monkeypatch.setenv("USER_DSN", index["dsn"])
    assert main(["guard", "index", str(index["guard"]), "--url", index["url"], "--dsn-env", "USER_DSN",
                 "--table", "docs", "--id-column", "doc_id", "--vector-column", "vec",
                 "--text-column", "body"]) == 2
    err = capsys.readouterr().err.strip()
    assert "vec" in err and "does not exist" in err and "\n" not in err


def test_judge_names_the_aspect() -> None:
    from embedswap.guard.guard_file import load_guard  # noqa: F401  (the guard type is what judge reads)

    class G:  # only the tolerances are read
        class tolerances:
            direction = Tolerance(value=1e-5, derived_from="t")
            length = Tolerance(value=1e-4, derived_from="t")

    v = unit_vector("a").astype(np.float32)
    assert judge(v, v, G)[0] is None  # type: ignore[arg-type]
    assert judge(v * 2, v, G)[0] == "length"  # type: ignore[arg-type]
    assert judge(unit_vector("b"), v, G)[0] == "direction"  # type: ignore[arg-type]
    assert judge(v[:8], v, G)[0] == "dimensions"  # type: ignore[arg-type]
    assert share_interval(0, 50)[0] == 0.0 and 0 < share_interval(0, 50)[1] < 0.1
