"""summary -> report markdown in one language: the section modules' values through the one skeleton."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from embedswap.analysis.article import Article, load_article
from embedswap.report.catalogue import LANGUAGES, environment
from embedswap.report.errors import ReportError
from embedswap.report.format import code, esc, fmt
from embedswap.report.sections import build_context
from embedswap.summary.model import Summary

TEMPLATE = "report.md.j2"


def render_markdown(summary: Summary, lang: str = "ko", figures: dict[str, bool] | None = None,
                    manifest: dict[str, Any] | None = None, attempt_dir: Path | None = None,
                    title: str | None = None, article: Article | None = None) -> str:
    """The report of one summary (any schema version: older ones are upgraded) in one language, as markdown
    (figures referenced as figures/<name>.png)."""
    if lang not in LANGUAGES:
        raise ReportError(f"no report catalogue for language '{lang}' (known: {', '.join(LANGUAGES)})")
    context = build_context(summary, lang, figures if figures is not None else {},
                            article if article is not None else load_article(), manifest, attempt_dir, title)
    env = environment(lang, {"fmt": fmt, "code": code, "esc": esc})
    text = env.get_template(TEMPLATE).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
