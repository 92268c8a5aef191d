"""The cost of re-embedding the user's corpus on a candidate, an estimate from measured parts: the corpus size
(``index.corpus_size``) over the candidate's measured throughput (docs/s with its 95 % interval, from the latency
section's intervals), as hours on one replica and the replicas a target window needs.

The workload's documents stand for the corpus: with ``index.mean_tokens`` the throughput is rescaled by the ratio
of the workload's mean tokens per document to the corpus's (a server's cost grows about linearly with tokens at
these lengths; stated as an assumption in the report)."""

from __future__ import annotations

import math
from typing import Any


def reembed_cost(corpus_size: int, docs_per_s: float | None, low: float | None, high: float | None,
                 window_hours: float, *, workload_mean_tokens: float | None = None,
                 corpus_mean_tokens: float | None = None) -> dict[str, Any] | None:
    """Hours per replica (with the interval from the throughput's), replicas for the window; None without a
    throughput."""
    if not docs_per_s or docs_per_s <= 0:
        return None
    scale = 1.0
    if corpus_mean_tokens and workload_mean_tokens:
        scale = workload_mean_tokens / corpus_mean_tokens

    def hours(rate: float | None) -> float | None:
        return corpus_size / (rate * scale) / 3600 if rate and rate > 0 else None

    central = hours(docs_per_s)
    assert central is not None
    slow = hours(low)  # the low throughput gives the long time
    return {
        "corpus_size": corpus_size,
        "docs_per_s": docs_per_s * scale,
        "docs_per_s_low": low * scale if low else None,
        "docs_per_s_high": high * scale if high else None,
        "token_scale": scale,
        "hours_per_replica": central,
        "hours_low": hours(high),
        "hours_high": slow,
        "window_hours": window_hours,
        "replicas": max(1, math.ceil(central / window_hours)),
        "replicas_high": max(1, math.ceil(slow / window_hours)) if slow is not None else None,
    }
