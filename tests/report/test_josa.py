"""Korean particles by the word before them (report/josa.py), and the Korean post never puts one right after a
name that arrives from the data (a code span), whose reading the kit cannot know."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from embedswap.report.josa import josa
from embedswap.report.post import render_post
from typed_summary import as_typed


@pytest.mark.parametrize(("word", "particle", "expected"), [
    ("서버", "은", "서버는"), ("요청", "는", "요청은"), ("벡터", "가", "벡터가"), ("판정", "가", "판정이"),
    ("지시문", "를", "지시문을"), ("모델", "와", "모델과"), ("서버", "과", "서버와"),
    ("길", "으로", "길로"), ("문장", "로", "문장으로"), ("서버", "으로", "서버로"),
    ("500", "을", "500을"), ("400", "가", "400이"), ("0.82", "가", "0.82가"), ("36.8", "으로", "36.8로"),
    ("54.3", "을", "54.3을"), ("1,024", "가", "1,024가"), ("10", "를", "10을"), ("0.9995", "을", "0.9995를"),
    ("`서버`", "은", "`서버`는"),
])
def test_the_particle_follows_the_last_syllable(word: str, particle: str, expected: str) -> None:
    assert josa(word, particle) == expected


def test_a_latin_name_is_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="Korean noun"):
        josa("`dynamo`", "은")


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parents[1] / "fixtures").glob("summary_*.json")))
def test_the_korean_post_puts_no_particle_after_a_name(name: str) -> None:
    summary = json.loads((Path(__file__).parents[1] / "fixtures" / name).read_text(encoding="utf-8"))
    post = render_post(as_typed(summary), "ko")
    # a server name, a probe or a flag arrives from the data in a code span; fixed words (Dynamo, GPU, 5xx) were
    # given their particle by whoever wrote the catalogue
    after_name = re.findall(r"`\s?(?:은|는|이|가|을|를|과|와|으로|로)(?=[\s.,)])", post)
    assert after_name == [], after_name
    assert "(는)" not in post and "(은)" not in post and "(이)" not in post
