"""A stored fact a post statement rests on or cites, with where it is stored (issue 63)."""

from __future__ import annotations

from embedswap.summary.types_common import Strict


class Fact(Strict):
    """One stored fact a statement rests on or cites, with where it is stored: a dotted path in summary.json, or
    ``article:`` and a path in the article's data (embedswap/data/article_000.json). A statement about several
    candidates with equal values cites the first one's path."""
    key: str
    value: str | int | float | bool | None = None
    source: str
