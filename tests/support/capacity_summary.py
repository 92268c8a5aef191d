"""Summaries that draw the capacity figure and section: an open-loop sweep of three servers, one that sheds load
(vllm), one whose fast answers carry truncated vectors (dynamo), the legacy server at half the candidate's capacity.
Used by tests/report/test_capacity_report.py and the figures' language test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typed_summary import decisions_of

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "summary_complete.json"
SLO = 500.0


def _run(rate: float, repeat: int, p99: float, *, shed: int = 0, wrong: int = 0, n: int = 40,
         valid: bool = True) -> dict[str, Any]:
    misses = [] if valid else ["invalid"]
    if valid and shed / n > 0.01:
        misses.append("errors")
    if valid and wrong / n > 0.01:
        misses.append("wrong_vectors")
    if valid and p99 > SLO:
        misses.append("p99")
    return {"rate": rate, "repeat": repeat, "requests": n, "answered": n - shed, "p99_ms": p99, "p50_ms": p99 / 3,
            "throughput": rate, "goodput": rate * (n - shed - wrong) / n, "good": n - shed - wrong, "shed": shed,
            "shed_share": shed / n, "wrong_vectors": wrong, "valid": valid, "misses": misses,
            "statuses": {"ok": n - shed, **({"429": shed} if shed else {})}}


def summary_with_capacity() -> dict[str, Any]:
    summary = json.loads(FIXTURE.read_text(encoding="utf-8"))
    legacy, vllm, dynamo = [], [], []
    for repeat in range(2):
        for rate in (2.0, 4.0, 8.0, 16.0):
            legacy.append(_run(rate, repeat, SLO * rate / (5.0 + repeat)))
            vllm.append(_run(rate, repeat, SLO * rate / (10.0 + repeat), shed=0 if rate < 8 else 12))
            dynamo.append(_run(rate, repeat, 40.0, wrong=40, valid=rate < 16))
    summary["capacity"] = {"measured": True, "slo_p99_ms": SLO, "slo_p50_ms": 200.0, "traffic": 30.0,
                           "arrival": "poisson", "gate": 0.999, "error_margin": 0.01, "by_target": {
                               name: {"measured": True, "runs": runs, "reference": True,
                                      "source": f"captures/{name}/open_loop_requests.jsonl"}
                               for name, runs in (("legacy", legacy), ("vllm", vllm), ("dynamo", dynamo))}}
    summary.pop("decisions", None)
    summary["decisions"] = decisions_of(summary)
    return summary
