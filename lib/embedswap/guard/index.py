"""``embedswap guard index``: did the vectors in an index come from the server that now answers queries?

Samples rows of a user's PostgreSQL + pgvector table, read-only (the session is opened with
``default_transaction_read_only`` and the sample runs in a READ ONLY transaction: nothing is created, not even the
extension), embeds the rows' texts on the current server, and compares each stored vector with its fresh one by the
guard's aspects and tolerances: a row disagrees by ``dimensions``, ``direction`` (1 - cosine over the guard's
direction tolerance) or ``length``. An index filled during a rolling deploy, or by a server since reconfigured,
shows as a share of such rows (mixed provenance), with their ids.

The share's 95 % interval is Clopper-Pearson (scipy's ``binomtest``): exact for a sample, and honest at 0 of n.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.guard.guard_file import Guard, GuardFileError, load_guard

SAMPLE_SEED = 20


class IndexCheckError(ValueError):
    """A wrong DSN, a missing table or column, an empty table, an unreachable server: one line, exit code 2."""


@dataclass
class RowCheck:
    id: Any
    aspect: str | None  # None: the stored vector agrees with the fresh one
    cosine: float | None
    norm_ratio: float | None = None


@dataclass
class IndexResult:
    table: str
    sampled: int
    mixed: int
    share: float
    interval: tuple[float, float]
    by_aspect: dict[str, int]
    mixed_ids: list[Any]
    rows: list[RowCheck] = field(default_factory=list)

    def line(self) -> str:
        if not self.mixed:
            return (f"pass: {self.sampled} sampled rows of {self.table} agree with the server "
                    f"(mixed share 0, 95 % interval up to {self.interval[1]:.1%})")
        aspects = ", ".join(f"{a} {n}" for a, n in sorted(self.by_aspect.items()))
        shown = ", ".join(str(i) for i in self.mixed_ids[:20]) + (" ..." if len(self.mixed_ids) > 20 else "")
        return (f"mixed: {self.mixed} of {self.sampled} sampled rows of {self.table} ({self.share:.1%}, 95 % "
                f"interval {self.interval[0]:.1%}-{self.interval[1]:.1%}) disagree with the server ({aspects}); "
                f"ids {shown}")


def judge(stored: np.ndarray, fresh: np.ndarray, guard: Guard) -> tuple[str | None, float | None, float | None]:
    """(aspect, cosine, norm ratio) of one row: the first aspect that disagrees, or None."""
    if stored.shape != fresh.shape:
        return "dimensions", None, None
    a, b = stored.astype(np.float64), fresh.astype(np.float64)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if not na or not nb:
        return "direction", None, None
    cosine = float(a @ b / (na * nb))
    ratio = na / nb
    if 1 - cosine > guard.tolerances.direction.value:
        return "direction", cosine, ratio
    if abs(ratio - 1) > guard.tolerances.length.value:
        return "length", cosine, ratio
    return None, cosine, ratio


def share_interval(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def _embed_all(guard: Guard, url: str, texts: list[str], api_shape: str | None, headers: dict[str, str],
               batch: int = 32) -> list[np.ndarray]:
    from embedswap.guard.check import server_root
    from embedswap.wire.api_shapes import EMBEDDINGS_PATHS
    from embedswap.wire.client import EmbeddingClient

    shape = api_shape or guard.server.api_shape
    path = guard.server.embeddings_path if shape == guard.server.api_shape else EMBEDDINGS_PATHS[shape]
    out: list[np.ndarray] = []
    with EmbeddingClient(server_root(url), guard.server.served_name, 60.0, headers, embeddings_path=path, api_shape=shape) as client:
        for start in range(0, len(texts), batch):
            chunk = texts[start:start + batch]
            answer = client.embed(chunk)
            if not answer.ok or answer.vectors is None or len(answer.vectors) != len(chunk):
                raise IndexCheckError(f"{url}: the server did not embed the sampled texts (status {answer.status}: "
                                      f"{(answer.error or '')[:200]})")
            out += [np.asarray(v, dtype=np.float32) for v in answer.vectors]
    return out


def _connect(dsn_env: str) -> Any:
    """A read-only session on the user's server; pgvector's types registered (the extension is never created)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from embedswap.vectorstore.connect import CONNECT_TIMEOUT_S, dsn_from_env, one_line
    from embedswap.vectorstore.server import StoreError

    try:
        dsn = dsn_from_env(dsn_env)
    except StoreError as exc:
        raise IndexCheckError(str(exc)) from None
    try:
        conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True,
                               options="-c default_transaction_read_only=on")
    except psycopg.Error as exc:
        raise IndexCheckError(f"cannot connect to the PostgreSQL in ${dsn_env}: {one_line(exc)}") from None
    try:
        register_vector(conn)
    except psycopg.Error as exc:
        conn.close()
        raise IndexCheckError(f"the PostgreSQL in ${dsn_env} has no pgvector type: {one_line(exc)}") from None
    return conn


def check_index(guard: Guard, url: str, dsn_env: str, table: str, id_column: str, vector_column: str,
                text_column: str, sample: int = 200, api_shape: str | None = None,
                headers: dict[str, str] | None = None) -> IndexResult:
    from embedswap.vectorstore.server import StoreError
    from embedswap.vectorstore.tables import sample_rows

    if sample < 1:
        raise IndexCheckError(f"--sample {sample}: sample at least one row")
    conn = _connect(dsn_env)
    try:
        rows = sample_rows(conn, table, id_column, vector_column, text_column, sample, SAMPLE_SEED)
    except StoreError as exc:
        raise IndexCheckError(str(exc)) from None
    finally:
        conn.close()
    rows = [r for r in rows if r.text]
    if not rows:
        raise IndexCheckError(f"table {table}: no rows with a vector and a text to sample")
    fresh = _embed_all(guard, url, [r.text for r in rows], api_shape, headers or {})  # type: ignore[misc]
    verdicts = [RowCheck(r.id, *judge(r.vector, v, guard)) for r, v in zip(rows, fresh)]
    mixed = [v for v in verdicts if v.aspect is not None]
    by_aspect: dict[str, int] = {}
    for v in mixed:
        by_aspect[v.aspect] = by_aspect.get(v.aspect, 0) + 1  # type: ignore[index]
    return IndexResult(table=table, sampled=len(verdicts), mixed=len(mixed), share=len(mixed) / len(verdicts),
                       interval=share_interval(len(mixed), len(verdicts)), by_aspect=by_aspect,
                       mixed_ids=[v.id for v in mixed], rows=verdicts)


def run_index_check(args: argparse.Namespace) -> int:
    from embedswap.wire.client import auth_headers

    try:
        guard = load_guard(Path(args.guard))
        headers = auth_headers(args.api_key_env)
    except (GuardFileError, RuntimeError) as exc:
        raise IndexCheckError(str(exc)) from None
    result = check_index(guard, args.url, args.dsn_env, args.table, args.id_column, args.vector_column,
                         args.text_column, args.sample, args.api_shape, headers)
    if args.json:
        content = asdict(result)
        content["result"] = "mixed" if result.mixed else "pass"
        content["summary"] = result.line()
        print(json.dumps(content, ensure_ascii=False, indent=1, default=str))
    else:
        print(result.line())
    return 1 if result.mixed else 0
