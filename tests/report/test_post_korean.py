"""The Korean post reads as Korean: probes as words (never their identifiers) in running prose, ratios as 배, and
no "은(는)"-style template particles in the post or the full report, for every fixture summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from embedswap.report.catalogue import catalogue
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.analysis.upgrade import read_summary
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
SUMMARIES = sorted(p.name for p in FIXTURES.glob("summary_*.json"))
TEMPLATE_PARTICLE = re.compile(r"은\(는\)|는\(은\)|을\(를\)|를\(을\)|이\(가\)|가\(이\)|와\(과\)|과\(와\)|\(으\)로")


def _summary(name: str):
    return read_summary(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def _prose(text: str) -> list[str]:
    """Lines of running prose: tables and the full report's pointers are data."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("|")]


@pytest.mark.parametrize("name", SUMMARIES)
def test_the_korean_post_names_probes_in_words(name: str) -> None:
    post = render_post(as_typed(_summary(name)), "ko")
    probes = sorted(catalogue("ko").probes, key=len, reverse=True)
    found = [(p, line[:120]) for line in _prose(post) for p in probes if re.search(rf"(?<![\w/]){p}(?![\w])", line)]
    assert found == []
    assert "×" not in post and not re.search(r"\d\.\d+x\b", post)  # ratios as 배


@pytest.mark.parametrize("name", SUMMARIES)
def test_no_template_particles_in_the_korean_post_or_report(name: str) -> None:
    summary = _summary(name)
    for text in (render_post(as_typed(summary), "ko"), render_markdown(as_typed(summary), "ko")):
        assert TEMPLATE_PARTICLE.findall(text) == []


def test_every_probe_has_words_in_every_language() -> None:
    for lang in ("ko", "en", "ja", "zh"):
        words = catalogue(lang).terms["post"]["probe_words"]
        assert set(catalogue(lang).probes) <= set(words), lang
