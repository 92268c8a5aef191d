"""Formatting of the stored equivalence verdicts (``decisions.latency.ratios.<c>.verdicts``,
``decisions.ranking``, ``decisions.vectors``): a verdict in words, a latency ratio with its verdict, the error
gate's statuses and Retry-After, the host drift beside a ratio, and a comparison's language slices."""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, fmt, md_table
from embedswap.report.sections.stats import ratio as plain_ratio
from embedswap.summary.types_decisions import RatioInterval
from embedswap.summary.types_equivalence import (Verdict, ErrorGate, HostDrift, PointVerdicts,
                                                 SlicedVerdicts)


def words(terms: dict[str, Any], v: Verdict | None) -> str:
    """'equivalent', 'different (slower)', 'inconclusive (about 120 requests would decide it)', ..."""
    if v is None:
        return MISSING
    t = terms["equivalence"]
    key = f"{v.code}_{v.direction}" if v.direction and f"{v.code}_{v.direction}" in t["codes"] else v.code
    text = t["codes"][key]
    if v.code == "inconclusive":
        if v.reason == "host_drift":
            return text
        if v.n_needed is not None:
            text += fill(t["needed"], n=fmt(v.n_needed, "int"))
    return text


def statuses(terms: dict[str, Any], gate: ErrorGate) -> str:
    """'429 rate-limited ×36 (Retry-After 1), timeout ×2'."""
    t = terms["equivalence"]
    parts = []
    for status, count in gate.statuses.items():
        name = t["status"].get(status, status)
        if status == "429" and gate.retry_after:
            name = fill(t["retry_after"], name=name, wait=", ".join(gate.retry_after))
        parts.append(f"{name} ×{fmt(count, 'int')}")
    return ", ".join(parts) or MISSING


def failed(terms: dict[str, Any], point: PointVerdicts | None) -> str | None:
    """The failed side's statuses as a sentence part, or None when no side failed."""
    if point is None:
        return None
    t = terms["equivalence"]
    for side in ("candidate", "legacy"):
        gate = point.errors.get(side)
        if gate is not None and gate.code == "failed":
            return fill(t["failed_cell"], side=t["sides"][side], statuses=statuses(terms, gate),
                        errors=fmt(gate.errors, "int"), requests=fmt(gate.requests, "int"),
                        rate=fmt(gate.estimate, "pct"), margin=fmt(gate.margin, "pct"))
    return None


def drift_text(terms: dict[str, Any], drift: HostDrift | None) -> str:
    """'1.05× bound, from the calibration between the phases; the gauges read up to 1.17× (calibration 17.7 →
    19.7 ms)', '×1.82 (calibration 31.2 → 17.1 ms)' for a summary decided before the bound, or '—' where the
    host was not recorded."""
    if drift is None or drift.factor is None:
        return MISSING
    t = terms["equivalence"]
    text = fmt(drift.factor, "ratio")
    if drift.design == "interleaved" and drift.bound_source is None:
        return t["drift_interleaved"]
    if drift.bound is not None and drift.bound_source is not None:
        source = t[f"drift_source_{drift.bound_source.split(':', 1)[0]}"]
        text = fill(t["drift_bound"], bound=fmt(drift.bound, "ratio"), source=source, factor=text)
    elif drift.bound is not None:
        text = fill(t["drift_none"], factor=text)
    if drift.legacy_calibration_ms and drift.candidate_calibration_ms:
        text += fill(t["drift_calibration"], legacy=fmt(drift.legacy_calibration_ms, "ms"),
                     candidate=fmt(drift.candidate_calibration_ms, "ms"))
    return text


def ratio_cell(terms: dict[str, Any], entry: RatioInterval | None, point: PointVerdicts | None, key: str,
               drift: HostDrift | None) -> str:
    """A candidate/legacy ratio with its verdict against the margin: '0.68× [0.66–0.70]: non-inferior'; a failed
    point its statuses instead of a ratio; a ratio undone by host drift the drift beside it. Where the point
    decided no verdict on the figure (``PointVerdicts.figure`` None) the interval's own reading."""
    verdict = point.figure(key) if point is not None else None
    if verdict is None:
        return plain_ratio(terms, entry)
    t = terms["equivalence"]
    if verdict.code == "failed":
        return failed(terms, point) or words(terms, verdict)
    said = words(terms, verdict)
    if verdict.reason == "missing_interval" and entry is not None and entry.direction in ("too_few", "missing"):
        said += f" ({terms['stats']['verdicts'][entry.direction]})"  # why there is no interval to decide on
    if verdict.reason == "host_drift" and drift is not None:
        said = fill(t["host_drift"], drift=drift_text(terms, drift), margin=fmt(verdict.margin, "ratio"))
    # the stored 95 % interval, as the tables' headers say (the verdict itself is decided on the 1 - 2 alpha one)
    value, low, high = ((entry.value, entry.low, entry.high) if entry is not None and entry.value is not None
                        else (verdict.estimate, verdict.low, verdict.high))
    if value is None:
        return said
    if low is None or high is None:
        return fill(t["ratio_plain"], ratio=fmt(value, "ratio"), verdict=said)
    return fill(t["ratio_cell"], ratio=fmt(value, "ratio"), low=fmt(low, "ratio"), high=fmt(high, "ratio"),
                verdict=said)


def slices_table(terms: dict[str, Any], rows: list[tuple[str, str, SlicedVerdicts]], kind: str = "delta"
                 ) -> str | None:
    """One row per (who, comparison) with each slice's verdict, the Holm-corrected overall, and the worse slices
    named, after a sentence saying how the slices are decided. ``kind``: the format of the changes."""
    if not rows:
        return None
    t = terms["equivalence"]
    names = sorted({s for _, _, found in rows for s in found.by_slice})
    body = []
    for who, what, found in rows:
        cells = []
        for name in names:
            v = found.by_slice.get(name)
            cells.append(MISSING if v is None else fill(
                t["slice_cell"], estimate=fmt(v.estimate, kind), low=fmt(v.low, kind), high=fmt(v.high, kind),
                n=fmt(v.n, "int"), verdict=words(terms, v)))
        worse = found.worse()
        body.append([who, what, *cells, words(terms, found.overall),
                     ", ".join(code(w) for w in worse) if worse else MISSING])
    header = [t["who"], t["comparison"], *[fill(t["slice"], name=n) for n in names], t["overall"], t["worse"]]
    return t["slices_intro"] + "\n\n" + md_table(header, body, ["l", "l"] + ["r"] * len(names) + ["l", "l"])


def worse_named(terms: dict[str, Any], sliced: dict[str, SlicedVerdicts]) -> str:
    """' It is worse in `ko`.' when a comparison's slice is worse, else ''."""
    worse = list(dict.fromkeys(w for found in sliced.values() for w in found.worse()))
    return fill(terms["equivalence"]["worse_named"], slices=", ".join(code(w) for w in worse)) if worse else ""
