"""Notebook 04's capacity table: ``decisions.capacity`` of summary.json, one row per server (pandas)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def capacity_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Capacity at the latency target per server, with its interval over repeats, the knee's bracket, replicas
    for ``latency.traffic``, where it sheds load and why its goodput falls below its throughput; empty when
    ``latency.open_loop`` was not configured."""
    decided = (summary.get("decisions") or {}).get("capacity") or {}
    ratios = decided.get("ratios") or {}
    rows = []
    for name, server in (decided.get("servers") or {}).items():
        rows.append({
            "target": name,
            "capacity_rps": server.get("capacity"),
            "low": server.get("low"),
            "high": server.get("high"),
            "censored": server.get("censored"),
            "knee": f"{server.get('met_rate')} -> {server.get('missed_rate')}",
            "limit": server.get("limit"),
            "replicas": server.get("replicas"),
            "replicas_interval": (f"{server.get('replicas_low')}-{server.get('replicas_high')}"
                                  if server.get("replicas_low") is not None else None),
            "sheds_from_rps": server.get("sheds_from"),
            "shed_share": server.get("shed_share"),
            "goodput_gap": server.get("goodput_gap"),
            "invalid_rates": server.get("invalid_rates") or None,
            "ratio_vs_legacy": (ratios.get(name) or {}).get("estimate"),
            "verdict": (ratios.get(name) or {}).get("code"),
        })
    return pd.DataFrame(rows).set_index("target") if rows else pd.DataFrame()
