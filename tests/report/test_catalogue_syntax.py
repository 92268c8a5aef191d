"""One placeholder syntax in every catalogue: Jinja's ``{{ name }}``, never ``str.format``'s ``{name}``."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from typing import Any, Iterator

import pytest

from embedswap.report.catalogue import LANGUAGES, CatalogueError, catalogue, fill

# what remains of a message once its Jinja expressions, statements and comments are taken out must hold no brace:
# a lone brace is a str.format placeholder (or a typo) that Jinja would print as it stands
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", flags=re.S)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _strings(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _strings(inner, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_message_uses_the_jinja_placeholder_syntax(lang: str) -> None:
    raw = resources.files("embedswap.report").joinpath(f"catalogue/{lang}.toml").read_text(encoding="utf-8")
    strings = list(_strings(tomllib.loads(raw), lang))
    assert len(strings) > 500
    other = [(path, text) for path, text in strings if re.search(r"[{}]", JINJA.sub("", text))]
    assert other == [], "messages with a brace outside {{ }} / {% %} (str.format syntax?)"


def test_fill_renders_placeholders_and_names_a_missing_one() -> None:
    assert fill("{{ n }} of {{ total }}", n=3, total="7") == "3 of 7"
    assert fill("no placeholder") == "no placeholder"
    with pytest.raises(Exception, match="total"):
        fill("{{ n }} of {{ total }}", n=3)


def test_a_reason_fills_its_parameters_in_every_language() -> None:
    for lang in LANGUAGES:
        text = catalogue(lang).reason("target_failed", {"name": "vllm", "error": "boom"})
        assert "vllm" in text and "boom" in text and "{" not in text
    with pytest.raises(CatalogueError, match="no_such_reason"):
        catalogue("en").reason("no_such_reason")
