"""The prefix-cache counters read from a Prometheus text as vLLM 0.31 writes it (two label sets summed), and the
answers that say nothing: no such counters, not Prometheus text, no /metrics route."""

from __future__ import annotations

import httpx

from embedswap.measure.server_metrics import cache_use, prefix_cache_tokens, read_prefix_cache

VLLM = """\
# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1226.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 10.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7964114545032206e+09
# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 512.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7964114545032406e+09
"""


def test_counters_are_summed_over_label_sets_and_created_is_not_a_count() -> None:
    assert prefix_cache_tokens(VLLM) == (512.0, 1236.0)
    assert cache_use((0.0, 613.0), (512.0, 1226.0)) == {"hit_tokens": 512, "query_tokens": 613}
    assert cache_use(None, (512.0, 1226.0)) is None


def test_a_server_without_the_counters_says_nothing() -> None:
    assert prefix_cache_tokens("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 3.0\n") is None
    assert prefix_cache_tokens("<html>not metrics</html>") is None


def test_no_metrics_route_reads_as_none() -> None:
    class Client:
        def __init__(self, status: int) -> None:
            self.status = status

        def raw(self, method: str, path: str, timeout_s: float | None = None) -> httpx.Response:
            if self.status == 0:
                raise httpx.ConnectError("refused")
            return httpx.Response(self.status, text=VLLM)

    assert read_prefix_cache(Client(404)) is None and read_prefix_cache(Client(0)) is None
    assert read_prefix_cache(Client(200)) == (512.0, 1236.0)
