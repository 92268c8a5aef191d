"""Issue 63, point 5: each language's post stays within 1.2x its counterpart of the article, both counted by one
function (``report.length``: tables included, front matter, code blocks and comments left out). Korean and English
are held to the Korean original's words (no English article exists), Japanese and Chinese to the article's own
Japanese and Chinese versions by letters and digits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from embedswap.analysis.upgrade import read_summary
from embedswap.report import length
from embedswap.report.post import render_post

FIXTURES = Path(__file__).parents[1] / "fixtures"
# the script each counterpart is written in: a file mapped to the wrong language fails here
SCRIPTS = {"ko": re.compile(r"[\uac00-\ud7a3]"), "ja": re.compile(r"[\u3040-\u30ff]"),
           "zh": re.compile(r"[\u4e00-\u9fff]")}
KANA = re.compile(r"[\u3040-\u30ff]")


@pytest.mark.parametrize("lang", sorted(length.COUNTERPARTS))
def test_every_post_is_within_its_articles_length(lang: str) -> None:
    """The complete fixture (two candidates, every section): its post in ``lang`` against its counterpart."""
    summary = read_summary(json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8")))
    measured = length.measure(render_post(summary, lang), lang)
    assert measured.article > 1000 and measured.within, measured


@pytest.mark.parametrize("lang", sorted(length.COUNTERPARTS))
def test_each_counterpart_is_the_article_in_its_own_script(lang: str) -> None:
    """Korean and English count the Korean original's words; Japanese and Chinese their versions' characters."""
    text = length.article_text(lang)
    script = "ko" if lang == "en" else lang
    letters = [ch for ch in text if ch.isalpha()]
    assert sum(1 for ch in letters if SCRIPTS[script].match(ch)) > len(letters) / 3, lang
    assert (lang == "ja") == bool(KANA.search(text)), lang  # the Chinese version has no kana, the Japanese has
    assert length.COUNTERPARTS[lang].unit == ("characters" if lang in ("ja", "zh") else "words")
    assert "```yaml" in text  # the deploy block is fenced, so it is left out as a post's commands are


def test_the_length_counts_tables_and_leaves_out_front_matter_and_code() -> None:
    text = "---\ntitle: a b c\n---\n\n두 단어 - 그리고\n\n| 항목 | 값 |\n| --- | ---: |\n| 차원 | 384 |\n\n```bash\nx y z\n```\n<!-- a b -->\n"
    assert length.words(text) == 7  # 두, 단어, 그리고; 항목, 값; 차원, 384
    assert length.characters(text) == 14  # 두 단어 그리고 (6), 항목 값 (3), 차원 384 (5)
