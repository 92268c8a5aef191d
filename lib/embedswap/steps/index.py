"""Step 03's index part: the compatibility grid searched on the real vector store (:mod:`embedswap.index.searches`),
written once to ``captures/index/searches.json`` (a later call reads it back: captures are never overwritten).

The embedded server's data folder is ``index/pgdata`` beside the captures (not a capture: it is rebuilt from them),
its log ``logs/index-postgres.log``."""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np

from embedswap.index.searches import (
    CAPTURE,
    LEGACY_QUERY_FILE,
    QUERY_FILES,
    run_searches,
)
from embedswap.reasons import not_measured
from embedswap.redact import redact
from embedswap.summary.sections.ranking import shim_queries
from embedswap.summary.model import Summary


def query_rows(n: int, limit: int, seed: int) -> np.ndarray:
    """The queries searched: all of them, or a seeded sample of ``limit`` (in workload order)."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def _vectors(attempt: Any, name: str, query_file: str) -> dict[str, np.ndarray] | None:
    if not (attempt.has(f"{name}/doc_vectors.npy") and attempt.has(f"{name}/{query_file}")):
        return None
    return {"docs": np.asarray(attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0], dtype=np.float32),
            "queries": np.asarray(attempt.read_array(f"{name}/{query_file}"), dtype=np.float32)}


def capture_index(ctx: Any) -> dict[str, Any]:
    """Search the grid for every candidate with document and query captures; the capture (or why not)."""
    experiment, attempt = ctx.experiment, ctx.attempt
    config = experiment.index
    if attempt.has(CAPTURE):
        earlier = attempt.read_json(CAPTURE)
        if (earlier.get("measured") or (earlier.get("reason") or {}).get("code") != "vector_store_failed") \
                and not _store_failed(earlier):
            return earlier
        attempt.retire(CAPTURE)  # a store that failed before is tried again; the failure is kept aside
    if not config.enabled:
        return not_measured("index_off")
    if not ctx.workload.queries:
        return not_measured("no_queries")
    legacy = _vectors(attempt, experiment.legacy, LEGACY_QUERY_FILE)
    if legacy is None:
        return not_measured("no_query_vectors_file", name=experiment.legacy,
                            path=f"{experiment.legacy}/{LEGACY_QUERY_FILE}")
    vectors = {experiment.legacy: legacy}
    for name in experiment.candidates:
        got = _vectors(attempt, name, query_file(attempt, name, config.queries)) \
            or _vectors(attempt, name, LEGACY_QUERY_FILE)
        if got is not None:
            vectors[name] = got
    candidates = [n for n in experiment.candidates if n in vectors]
    if not candidates:
        return not_measured("candidate_not_captured")
    rows = query_rows(len(ctx.workload.queries), config.max_queries, config.seed)
    vectors = {name: {"docs": v["docs"], "queries": v["queries"][rows]} for name, v in vectors.items()}
    folder = attempt.path / "index"
    try:
        result = run_searches(vectors, experiment.legacy, candidates, config, folder)
    finally:
        log = folder / "postgres.log"
        if log.exists():  # the server's log goes with the attempt's logs, redacted like every log
            (attempt.logs / "index-postgres.log").write_text(redact(log.read_text(errors="replace")))
        # the data folder is rebuilt from the captures on every run: not kept
        shutil.rmtree(folder, ignore_errors=True)
    if result.get("measured"):
        result["queries"] = {"legacy": LEGACY_QUERY_FILE,
                             "candidate": query_file(attempt, experiment.primary_candidate, config.queries),
                             "by_candidate": {n: query_file(attempt, n, config.queries) for n in candidates}}
        result["query_rows"] = rows.tolist()
    attempt.write_json(CAPTURE, result)  # a failure too: the summary states it as the reason
    return result


def query_file(attempt: Any, name: str, queries: str) -> str:
    """A candidate's query capture for the index: ``naive`` as sent bare; ``shim`` what its derived shim sends
    (the server-instruction queries where the shim passes ``input_type`` through)."""
    if queries == "naive":
        return QUERY_FILES["naive"]
    return shim_queries(attempt, name)


def _store_failed(capture: dict[str, Any]) -> bool:
    return any((entry.get("reason") or {}).get("code") in ("vector_store_lost", "vector_store_failed")
               for entry in (capture.get("by_candidate") or {}).values())


def index_table(summary: Summary) -> Any:
    """Step 03's table: per candidate the decision and the figures behind it (from ``decisions.index``)."""
    import pandas as pd

    rows = []
    plan = summary.index.hnsw_plan
    # the shares HNSW was built and searched at (index.hnsw_shares); a summary without a plan had it at every share
    hnsw_at = "all" if plan is None or not plan.exact_only else " ".join(f"{s:g}" for s in plan.shares)
    for name, d in summary.decisions.index.items():
        cross, adapter, cost = d.cross, d.adapter, d.cost
        rows.append({
            # the one decision; the sample's cross search beside it as its evidence
            "candidate": name, "decision": d.choice, "map": d.map_kind, "decided_on": d.decided_on,
            "sample_decision": d.sample, "basis": d.basis,
            "cross_change": cross.estimate if cross else None, "cross_low": cross.low if cross else None,
            "cross_high": cross.high if cross else None, "cross_verdict": cross.code if cross else None,
            "retention": d.retention, "backward_compatible": d.backward_compatible, "hnsw_recall": d.hnsw_recall,
            "hnsw_shares": hnsw_at,
            "length": d.length, "advice": d.advice,
            "adapter_identity": adapter.identity if adapter else None,
            "adapter_residual": adapter.residual_test if adapter else None,
            "adapter_retained": adapter.retained if adapter else None,
            "reembed_hours": cost.hours_per_replica if cost else None, "replicas": cost.replicas if cost else None,
        })
    if not rows:
        why = summary.index.why
        return pd.DataFrame([{"index": "not measured", "why": why}])
    return pd.DataFrame(rows).set_index("candidate")
