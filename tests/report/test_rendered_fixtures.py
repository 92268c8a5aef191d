"""The rendered report of every committed summary fixture, in every language, byte for byte (snapshot test).

A change of wording or layout shows here as a diff to review; when it is meant, write the new reports with
``EMBEDSWAP_UPDATE_RENDERED=1 .venvs/kit/bin/python -m pytest tests/report/test_rendered_fixtures.py`` and commit them with the change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from embedswap.report.catalogue import LANGUAGES
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.analysis.upgrade import read_summary
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
RENDERED = FIXTURES / "rendered"
SUMMARIES = sorted(p.name for p in FIXTURES.glob("summary_*.json"))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", SUMMARIES)
def test_rendered_report_is_unchanged(name: str, lang: str) -> None:
    text = render_markdown(as_typed(read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))), lang)
    stored = RENDERED / f"{Path(name).stem}.{lang}.md"
    if os.environ.get("EMBEDSWAP_UPDATE_RENDERED") == "1":
        stored.write_text(text, encoding="utf-8")
    assert stored.exists(), f"{stored} missing: write it with EMBEDSWAP_UPDATE_RENDERED=1"
    assert text == stored.read_text(encoding="utf-8"), f"{stored.name} differs from the stored report"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", SUMMARIES)
def test_rendered_post_is_unchanged(name: str, lang: str) -> None:
    """The post (the blog draft) of every fixture, with every figure drawn, byte for byte."""
    summary = read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))
    text = render_post(as_typed(summary), lang, {"cosine_by_language": True, "latency_points": True})
    stored = RENDERED / f"{Path(name).stem}.post.{lang}.md"
    if os.environ.get("EMBEDSWAP_UPDATE_RENDERED") == "1":
        stored.write_text(text, encoding="utf-8")
    assert stored.exists(), f"{stored} missing: write it with EMBEDSWAP_UPDATE_RENDERED=1"
    assert text == stored.read_text(encoding="utf-8"), f"{stored.name} differs from the stored post"
    assert len(text.splitlines()) <= 220  # a post, not a data dump
