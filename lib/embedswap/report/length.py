"""A post's length, counted one way for the post and for the article it follows (issue 63, point 5).

A word is a whitespace-separated token with at least one letter or digit in it: table cells count (a table's pipes
and its `---` row do not), list markers and lone punctuation do not. The front matter (a leading `---` block),
fenced code blocks and HTML comments are left out.

Each language's post is measured against its own counterpart of the article, by one unit for both:

- Korean: the Korean original (seed 000), by words (the eojeol: Korean separates words by spaces).
- Japanese and Chinese: the article's Japanese (seed 001) and Chinese (seed 002) versions, by `characters`
  (letters and digits, spaces and markup left out): they write no spaces, so a whitespace count says nothing.
- English: no English version of the article exists, so the English post is held to the Korean original's words.
  That is the strict side: English spends separate words on what Korean attaches to a word (articles,
  prepositions, auxiliaries), so the same text in English runs to more words than its Korean has eojeol. No
  conversion factor is applied, because none was measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Literal

LIMIT = 1.2  # a post stays within this many times its counterpart article's length

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"\w")

Unit = Literal["words", "characters"]


def _body(markdown: str) -> list[str]:
    lines = _COMMENT.sub("", markdown).splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            lines = lines[end + 1:]
    body, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            body.append(line)
    return body


def words(markdown: str) -> int:
    """Whitespace-separated tokens with a letter or digit, outside front matter, code blocks and comments."""
    return sum(1 for line in _body(markdown) for token in line.split() if _WORD.search(token))


def characters(markdown: str) -> int:
    """Letters and digits outside front matter, code blocks and comments (for languages without spaces)."""
    return sum(1 for line in _body(markdown) for ch in line if ch.isalnum())


_COUNTERS: dict[Unit, Callable[[str], int]] = {"words": words, "characters": characters}


@dataclass(frozen=True)
class Counterpart:
    """The article text a language's post is held to, and the unit both are counted in."""
    text: str  # package data, the seed as stored with its deploy block fenced (see the file's comment)
    unit: Unit

    def count(self, markdown: str) -> int:
        return _COUNTERS[self.unit](markdown)


COUNTERPARTS: dict[str, Counterpart] = {
    "ko": Counterpart("data/article_000.ko.md", "words"),
    "en": Counterpart("data/article_000.ko.md", "words"),  # no English article: the Korean original (docstring)
    "ja": Counterpart("data/article_001.ja.md", "characters"),
    "zh": Counterpart("data/article_002.zh.md", "characters"),
}


@dataclass(frozen=True)
class Length:
    """One post's length beside its counterpart article's, in the same unit."""
    lang: str
    unit: Unit
    post: int
    article: int

    @property
    def ratio(self) -> float:
        return self.post / self.article

    @property
    def within(self) -> bool:
        return self.post <= LIMIT * self.article


def article_text(lang: str = "ko") -> str:
    """The text of ``lang``'s counterpart article (the Korean original for Korean and English)."""
    return resources.files("embedswap").joinpath(COUNTERPARTS[lang].text).read_text(encoding="utf-8")


def measure(markdown: str, lang: str) -> Length:
    """``markdown`` (a post in ``lang``) and its counterpart article, both counted by the language's unit."""
    counterpart = COUNTERPARTS[lang]
    return Length(lang, counterpart.unit, counterpart.count(markdown), counterpart.count(article_text(lang)))


def ratio(markdown: str, lang: str = "ko") -> float:
    """The post's length over its counterpart article's, both counted by the language's unit."""
    return measure(markdown, lang).ratio
