"""Notebook 04's capacity table: ``decisions.capacity`` of the summary, one row per server (pandas, imported in the
function as in :mod:`embedswap.steps.tables`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from embedswap.summary.model import Summary

if TYPE_CHECKING:
    import pandas as pd


def capacity_table(summary: Summary) -> pd.DataFrame:
    """Capacity at the latency target per server, with its interval over repeats, the knee's bracket, replicas
    for ``latency.traffic``, where it sheds load and why its goodput falls below its throughput; empty when
    ``latency.open_loop`` was not configured."""
    import pandas as pd  # here, not above: see embedswap.steps.tables
    decided = summary.decisions.capacity
    if decided is None:
        return pd.DataFrame()
    rows = []
    for name, server in decided.servers.items():
        ratio = decided.ratios.get(name)
        rows.append({
            "target": name,
            "capacity_rps": server.capacity,
            "low": server.low,
            "high": server.high,
            "censored": server.censored,
            "knee": f"{server.met_rate} -> {server.missed_rate}",
            "limit": server.limit,
            "replicas": server.replicas,
            "replicas_interval": (f"{server.replicas_low}-{server.replicas_high}"
                                  if server.replicas_low is not None else None),
            "sheds_from_rps": server.sheds_from,
            "shed_share": server.shed_share,
            "goodput_gap": server.goodput_gap,
            "invalid_rates": server.invalid_rates or None,
            "ratio_vs_legacy": ratio.estimate if ratio is not None else None,
            "verdict": ratio.code if ratio is not None else None,
        })
    return pd.DataFrame(rows).set_index("target") if rows else pd.DataFrame()
