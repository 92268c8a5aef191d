"""What a server's Prometheus ``/metrics`` says about its prefix cache, read around the probe that sends the same
text twice: a prefix cache meeting last-token pooling answered the second of two identical requests with another
vector in some builds (vllm #40682, vllm-ascend #6988), so a ``same`` answer is only evidence where the second
request was served from the cache. vLLM counts tokens: ``vllm:prefix_cache_queries_total`` (asked of the cache)
and ``vllm:prefix_cache_hits_total`` (found there). A server without those counters gives None: nothing is claimed.
"""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

HITS, QUERIES = "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"


def prefix_cache_tokens(text: str) -> tuple[float, float] | None:
    """(hit tokens, queried tokens) summed over the label sets of a Prometheus text, None where either is absent."""
    totals: dict[str, float] = {}
    try:  # by sample name: the parser splits a counter whose name has a colon into families of its own
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in (HITS + "_total", QUERIES + "_total"):
                    key = sample.name.removesuffix("_total")
                    totals[key] = totals.get(key, 0.0) + sample.value
    except ValueError:  # not Prometheus text (a server whose /metrics is something else)
        return None
    return (totals[HITS], totals[QUERIES]) if HITS in totals and QUERIES in totals else None


def read_prefix_cache(client: Any) -> tuple[float, float] | None:
    """The server's prefix-cache counters now, or None: no /metrics route, or no such counters."""
    try:
        response = client.raw("GET", "/metrics", timeout_s=10)
    except httpx.HTTPError:
        return None
    return prefix_cache_tokens(response.text) if response.status_code == 200 else None


def cache_use(before: tuple[float, float] | None, after: tuple[float, float] | None) -> dict[str, int] | None:
    """The tokens queried and found in the cache between two readings (None: either reading missing)."""
    if before is None or after is None:
        return None
    return {"hit_tokens": int(after[0] - before[0]), "query_tokens": int(after[1] - before[1])}
