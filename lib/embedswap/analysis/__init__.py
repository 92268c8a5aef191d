"""Decisions drawn from a summary's measured sections, stored in ``summary.json`` under ``decisions``.

Each module here reads typed-enough summary sections and returns language-neutral codes and figures: the client
changes a migration needs (:mod:`.client_changes`), whether search ranking stays the legacy one
(:mod:`.ranking_verdict`), and the latency ratios and the lock's share of the concurrent gap
(:mod:`.latency_ratios`). The report only formats what is stored; a user's CI reads the same codes.
"""

from __future__ import annotations

from typing import Any

from embedswap.analysis import client_changes, latency_ratios, ranking_verdict


def decide(summary: dict[str, Any]) -> dict[str, Any]:
    """Every decision of one summary (the ``decisions`` section)."""
    return {
        "client_changes": client_changes.client_changes(summary),
        "ranking": ranking_verdict.ranking_verdicts(summary),
        "latency": latency_ratios.latency_decisions(summary),
    }
