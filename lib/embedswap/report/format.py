"""Formatting for the report: numbers, labels, markdown cells and tables. No decision is made here.

One number formatter (:func:`fmt`) for every language, so the ko/en/ja/zh reports show identical figures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from embedswap.report.catalogue import catalogue

MISSING = "—"

_FORMATS: dict[str, Callable[[float], str]] = {
    "int": lambda v: f"{int(round(v)):,}",
    "ms": lambda v: f"{v:,.1f}",
    "rate": lambda v: f"{v:,.1f}",
    "cos": lambda v: f"{v:.6f}",
    "cos4": lambda v: f"{v:.4f}",
    "norm": lambda v: f"{v:.4f}",
    "ratio": lambda v: f"{v:.2f}×",
    "gib": lambda v: f"{v:,.1f}",
    "mib": lambda v: f"{v:,.0f}",
    "s": lambda v: f"{v:,.1f}",
    "pct": lambda v: f"{v * 100:.0f}%",
    "score": lambda v: f"{v:.3f}",
    "delta": lambda v: f"{(0.0 if abs(v) < 5e-4 else v):+.3f}",
    "p": lambda v: "< 0.001" if v < 0.001 else f"{v:.3f}",
}


def fmt(value: Any, kind: str = "raw") -> str:
    """The one number formatter of the report (every language). None -> '—'.

    kinds: int (thousands separator), ms, rate (docs/s), cos (6 decimals), cos4 (the article's precision), norm,
    ratio (×), gib, mib, s, pct, score (ranking metrics, 3 decimals), p (p-value), delta (signed, 3 decimals; +0.000 when it
    rounds to zero), raw (ints with separators, floats as published).
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return " · ".join(fmt(v, kind) for v in value)
    if not isinstance(value, (int, float)):
        return str(value)
    if value != value:  # NaN
        return "NaN"
    if kind == "raw":
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    return _FORMATS[kind](float(value))


def mib(value: Any) -> str:
    """Bytes as MiB (no unit), or '—'."""
    return fmt(None if value is None else value / 2**20, "mib")


def label(measured: bool | None, lang: str) -> str:
    """실측 / 미실측 / 미확인 (ko), measured / not measured / unconfirmed (en), ...

    ``True``: measured; ``False``: not measured; ``None``: unconfirmed (ran, but no value came out of it).
    """
    return catalogue(lang).label(None if measured is None else bool(measured))


def combined_label(states: Iterable[bool | None], lang: str) -> str:
    """One label for a section made of several parts: the common label, or 'partly measured' with the parts."""
    states = list(states)
    if not states:
        return label(False, lang)
    unique = list(dict.fromkeys(states))
    if len(unique) == 1:
        return label(unique[0], lang)
    parts = " · ".join(label(s, lang) for s in (True, None, False) if s in unique)
    return f"{catalogue(lang).labels['partly']} ({parts})"


def esc(text: Any) -> str:
    """Data text for markdown: no HTML, no table breaks, no emphasis markers, one line."""
    value = "" if text is None else str(text)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = value.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("`", "'")
    return " ".join(value.split())


def code(text: Any) -> str:
    """An inline code span for identifiers (probe, target names)."""
    value = " ".join(str(text).split()).replace("`", "'").replace("|", "/")
    return f"`{value}`"


def md_table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    """A pipe table; cells are already formatted/escaped. align: 'l', 'r' or 'c' per column."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def fence(text: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{info}\n{text}\n{marks}"
