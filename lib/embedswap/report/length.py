"""A post's length, counted one way for the post and for the article it follows (issue 63, point 5).

A word is a whitespace-separated token with at least one letter or digit in it: table cells count (a table's pipes
and its `---` row do not), list markers and lone punctuation do not. The front matter (a leading `---` block),
fenced code blocks and HTML comments are left out. Korean and English separate words by spaces, so the count is
the eojeol for Korean; Japanese and Chinese do not, so their whitespace count says little and `characters` is given
beside it (letters and digits, spaces and markup left out).
"""

from __future__ import annotations

import re
from importlib import resources

ARTICLE_TEXT = "data/article_000.ko.md"  # the Korean original (seed 000), kept for its length only
LIMIT = 1.2  # a post stays within this many times the article's words

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"\w")


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


def article_text() -> str:
    return resources.files("embedswap").joinpath(ARTICLE_TEXT).read_text(encoding="utf-8")


def ratio(markdown: str) -> float:
    """The post's words over the article's, both counted by `words`."""
    return words(markdown) / words(article_text())
