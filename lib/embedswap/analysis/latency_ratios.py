"""Latency ratios of each candidate to legacy, and how much of the concurrent gap the legacy server's lock explains.

The article reads the concurrent gap as the legacy server's one global lock. That reading is *measured* only when
the lock ablation ran (the legacy server with the lock against a variant without it): the share of a candidate's
concurrent throughput advantage that the lock-free variant recovers is then
``(free - locked) / (candidate - locked)``. Without the ablation it stays the article's estimate (the locked
server's concurrent/sequential p50 factor), unconfirmed.
"""

from __future__ import annotations

from typing import Any

from embedswap.analysis import latency_intervals
from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.latency_points import latency_points_of


def point_state(point: dict[str, Any] | None) -> bool | None:
    """True: the point has numbers; None: it ran but every request failed (unconfirmed); False: absent."""
    if not isinstance(point, dict):
        return False
    values = [point.get(k) for k in ("p50_ms", "p99_ms", "docs_per_s")]
    return True if any(v is not None for v in values) else None


def latency_state(info: dict[str, Any]) -> bool | None:
    """True when a target's latency entry has a number, None when it ran without one, False when absent."""
    if not is_measured(info):
        return False
    states = [point_state(p) for _, _, p in latency_points_of(info)]
    return True if any(s is True for s in states) else None


def _value(entry: dict[str, Any], run: str, key: str) -> float | None:
    return (entry.get(run) or {}).get(key) if is_measured(entry) else None


def _divide(a: float | None, b: float | None) -> float | None:
    return a / b if b and a is not None else None


def ratio(legacy: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """Candidate / legacy for sequential p50, concurrent docs/s and concurrent p50 (None where a side is missing)."""
    out: dict[str, Any] = {}
    for key, run, field in (("seq_p50", "sequential", "p50_ms"), ("conc_docs_per_s", "concurrent", "docs_per_s"),
                            ("conc_p50", "concurrent", "p50_ms")):
        out[key] = _divide(_value(info, run, field), _value(legacy, run, field))
    out["complete"] = out["seq_p50"] is not None and out["conc_docs_per_s"] is not None
    return out


def _share(rate: float | None, lock_rate: float | None, free_rate: float | None) -> tuple[str, float | None]:
    if rate is None or lock_rate is None or free_rate is None:
        return "missing", None
    if rate <= lock_rate:
        return "no_advantage", None
    share = (free_rate - lock_rate) / (rate - lock_rate)
    return ("all" if share >= 1 else "part" if share >= 0 else "none"), share


def lock_measured(summary: dict[str, Any], base: dict[str, Any], variants: list[tuple[str, dict[str, Any]]],
                  estimates: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lock ablation's reading: per lock-free variant, its ratios (with intervals: lock-free / locked, per
    point) and each candidate's recovered share."""
    estimates = estimates if estimates is not None else latency_intervals.all_estimates(summary)
    legacy_name = roles(summary)[0]
    by_target = (summary.get("latency") or {}).get("by_target") or {}
    lock_conc = base.get("concurrent") or {}
    out = []
    for name, row in variants:
        conc = row.get("concurrent") or {}
        lock_rate, free_rate = lock_conc.get("docs_per_s"), conc.get("docs_per_s")
        shares = []
        for candidate in roles(summary)[1]:
            info = by_target.get(candidate) or {}
            rate = (info.get("concurrent") or {}).get("docs_per_s") if is_measured(info) else None
            case, share = _share(rate, lock_rate, free_rate)
            shares.append({"candidate": candidate, "case": case, "share": share})
        out.append({"variant": name, "rate_ratio": _divide(free_rate, lock_rate),
                    "p50_ratio": _divide(conc.get("p50_ms"), lock_conc.get("p50_ms")), "shares": shares,
                    "intervals": latency_intervals.compare(estimates.get(name) or {},
                                                           estimates.get(legacy_name) or {})})
    return {"measured": True, "variants": out}


def lock_estimate(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The article's estimate (unconfirmed): the locked legacy server's concurrent / sequential p50."""
    legacy_name = roles(summary)[0]
    legacy = ((summary.get("latency") or {}).get("by_target") or {}).get(legacy_name) or {}
    config = (((summary.get("targets") or {}).get(legacy_name) or {}).get("config") or {})
    if config.get("kind") != "legacy" or not config.get("lock") or latency_state(legacy) is not True:
        return None
    seq = (legacy.get("sequential") or {}).get("p50_ms")
    conc = (legacy.get("concurrent") or {}).get("p50_ms")
    if not seq or conc is None:
        return None
    return {"measured": False, "factor": conc / seq}


def lock_reading(summary: dict[str, Any], estimates: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Measured when the ablation has the locked legacy server and a lock-free variant with numbers, else the
    estimate, else None (no lock to speak of)."""
    legacy_name = roles(summary)[0]
    section = summary.get("ablation") if isinstance(summary.get("ablation"), dict) else {}
    rows = section.get("by_target") or {}
    base = rows.get(legacy_name) or {}
    variants = [(n, r) for n, r in rows.items()
                if n != legacy_name and r.get("lock") is False and latency_state(r) is True]
    if is_measured(section) and base.get("lock") is True and latency_state(base) is True and variants:
        return lock_measured(summary, base, variants, estimates)
    return lock_estimate(summary)


def latency_decisions(summary: dict[str, Any]) -> dict[str, Any]:
    """``{ratios: {candidate: {..., intervals: {label: ...}}}, points: {target: {label: ...}}, lock: {...} | None}``
    (intervals and verdicts: :mod:`embedswap.analysis.latency_intervals`)."""
    legacy_name, candidates = roles(summary)
    by_target = (summary.get("latency") or {}).get("by_target") or {}
    legacy = by_target.get(legacy_name) or {}
    estimates = latency_intervals.all_estimates(summary)
    ratios = {}
    for name in candidates:
        ratios[name] = {**ratio(legacy, by_target.get(name) or {}),
                        "intervals": latency_intervals.compare(estimates.get(name) or {},
                                                               estimates.get(legacy_name) or {})}
    return {"ratios": ratios, "points": latency_intervals.points(estimates), "lock": lock_reading(summary, estimates)}
