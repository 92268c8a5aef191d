"""The report's words: one TOML catalogue per language (``report/catalogue/<lang>.toml``), one skeleton template.

Decision: the catalogues are TOML files rather than gettext ``.po`` files. A ``.po`` message is a plain
string with placeholders; many of the report's sentences carry a conditional clause or a loop inside them, and the
languages put those clauses in different places. So a catalogue message under ``[prose.*]`` is a small Jinja
fragment: the skeleton ``templates/report.md.j2`` names it with ``{% say "section.key" %}`` and the message is
spliced in when the language's template is compiled (:class:`SayExtension`, Jinja's ``preprocess`` hook). A
message therefore sees exactly the variables of its place in the skeleton, loop variables included, and each
language orders its words freely.

A stored code (the index decision, a latency share's case, a candidate's closing verdict...) picks its message by
key, never through an if-chain in the skeleton: the catalogue holds a table keyed by code (``[prose.index.decisions]``
with ``keep_index = '...'``, ``re_embed = '...'``) and the skeleton names the table and the code,
``{% say_by "index.decisions" c.decision %}``. The tag becomes a Jinja ``include`` of the message
``index.decisions.<code>``, served by :class:`_MessageLoader`, so the message still sees the variables of its place
(loop variables included); a code without a message is an error naming the missing key.

Words used inside tables and lists (``[terms]``, ``[labels]``), reason codes (``[reasons]``) and the figures' titles,
axes and legends (``[figures]``) are filled from Python by :func:`fill`. Every message uses one placeholder syntax,
Jinja's ``{{ name }}``, whether it is spliced into the skeleton or filled from Python, so a translator learns one
form (tests/report/test_catalogue_syntax.py). TOML literal strings keep every byte (spaces, newlines), and Python
reads TOML with the standard library (``tomllib``).

Every catalogue has the same keys (tests/report/test_report.py); a missing key is an error naming it, never an English
fallback, so no English sentence reaches a ko/ja/zh report.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jinja2
from jinja2.ext import Extension

from embedswap.report.errors import ReportError

# the report's languages, in the order a new experiment lists them
LANGUAGES = ("ko", "en", "ja", "zh")
SAY = re.compile(r'\{%-?\s*say\s+"([a-z0-9_.]+)"\s*-?%\}')
# {% say_by "table" expr %}: the message of table.<value of expr>; the closing '+' / '-' keeps its Jinja meaning
SAY_BY = re.compile(r'\{%(-?)\s*say_by\s+"([a-z0-9_.]+)"\s+(.+?)\s*([-+]?)%\}')
KEYED = "say:"  # the template name prefix of a keyed message


class CatalogueError(ReportError):
    """A language or a message the catalogues do not have. The message names both."""


@dataclass(frozen=True)
class Catalogue:
    """One language's words: labels, table terms, template prose and reason texts."""

    lang: str
    labels: dict[str, str]
    terms: dict[str, Any]
    prose: dict[str, dict[str, Any]]  # a value is a message, or a table of messages keyed by code
    reasons: dict[str, str]
    probes: dict[str, str]
    figures: dict[str, dict[str, Any]]  # the figures' titles, axes and legends, by figure (report/figure_words.py)

    def label(self, measured: bool | None) -> str:
        """실측 / 미실측 / 미확인: True measured, False not measured, None unconfirmed (ran, no value)."""
        return self.labels["unconfirmed" if measured is None else "measured" if measured else "not_measured"]

    def message(self, key: str) -> str:
        """The prose message ``section.key`` (or ``section.table.code``, a keyed one) of this language."""
        found: Any = self.prose
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if not isinstance(found, str):
            table = key.rpartition(".")[0]
            raise CatalogueError(f"report catalogue '{self.lang}' has no message '{key}' "
                                 f"(lib/embedswap/report/catalogue/{self.lang}.toml, [prose.{table}])")
        return found

    def keyed(self, table: str) -> dict[str, str]:
        """The messages of a table keyed by code, ``section.table`` (e.g. ``index.decision``)."""
        section, _, name = table.partition(".")
        found = self.prose.get(section, {}).get(name)
        if not isinstance(found, dict):
            raise CatalogueError(f"report catalogue '{self.lang}' has no keyed messages '{table}' "
                                 f"(lib/embedswap/report/catalogue/{self.lang}.toml, [prose.{table}])")
        return found

    def all_messages(self) -> dict[str, str]:
        """Every prose message by its full key: ``section.key``, and ``section.table.code`` for a keyed one."""
        out: dict[str, str] = {}
        for section, messages in self.prose.items():
            for key, value in messages.items():
                if isinstance(value, dict):
                    out.update({f"{section}.{key}.{code}": text for code, text in value.items()})
                else:
                    out[f"{section}.{key}"] = value
        return out

    def reason(self, code: str, params: dict[str, Any] | None = None) -> str:
        """The sentence of a reason code, with its parameters filled in."""
        try:
            text = self.reasons[code]
        except KeyError:
            raise CatalogueError(f"report catalogue '{self.lang}' has no reason '{code}' "
                                 f"(lib/embedswap/report/catalogue/{self.lang}.toml, [reasons])") from None
        words = dict(params or {})
        for name, value in words.items():
            if isinstance(value, dict) and "code" in value:  # a reason inside a reason (a verdict's detail)
                words[name] = self.reason(value["code"], value.get("params"))
            elif isinstance(value, list) and value and all(isinstance(v, dict) and "code" in v for v in value):
                # a list of reasons, e.g. the differences of two answers
                words[name] = self.labels["separator"].join(self.reason(v["code"], v.get("params")) for v in value)
        if words.get("side") in ("legacy", "candidate"):  # which server of the two
            words["side"] = self.terms[f"{words['side']}_role"]
        return fill(text, **words)


# words filled from Python: no autoescape (the section modules escape what they interpolate) and a missing
# placeholder is an error, as a KeyError was under str.format
_WORDS = jinja2.Environment(autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


@functools.lru_cache(maxsize=2048)
def _compiled(text: str) -> jinja2.Template:
    return _WORDS.from_string(text)


def fill(text: str, **params: Any) -> str:
    """A catalogue word (``[terms]``, ``[reasons]``, ``[labels]``) with its ``{{ name }}`` placeholders filled in."""
    if "{" not in text:
        return text
    return _compiled(text).render(**params)


@functools.cache
def catalogue(lang: str) -> Catalogue:
    """The catalogue of one language (read once per process)."""
    if lang not in LANGUAGES:
        raise CatalogueError(f"unknown report language '{lang}' (known: {', '.join(LANGUAGES)})")
    text = resources.files("embedswap.report").joinpath(f"catalogue/{lang}.toml").read_text(encoding="utf-8")
    data = _merged(tomllib.loads(text))
    return Catalogue(lang=lang, labels=data["labels"], terms=data["terms"], prose=data.get("prose", {}),
                     reasons=data.get("reasons", {}), probes=data.get("probes", {}),
                     figures=data.get("figures", {}))


def _merged(table: dict[str, Any]) -> dict[str, Any]:
    """Sub-tables named ``more_*`` merged into their parent: TOML cannot reopen a table, so words added later to
    ``[reasons]`` or ``[terms.aspects]`` are appended at the end of a file as ``[reasons.more_<topic>]``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict) and key.startswith("more_"):
            out.update(_merged(value))
        elif isinstance(value, dict):
            out[key] = _merged(value)
        else:
            out[key] = value
    return out


class SayExtension(Extension):
    """Replaces each ``{% say "section.key" %}`` of a template by the message of the environment's language, and each
    ``{% say_by "section.table" code %}`` by an include of the message keyed by the code's value."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        words = catalogue(self.environment.report_language)  # type: ignore[attr-defined]
        source = SAY.sub(lambda m: words.message(m.group(1)), source)

        def include(m: re.Match[str]) -> str:
            words.keyed(m.group(2))  # a table no catalogue has fails at compile time, not on the first code
            return f'{{%{m.group(1)} include "{KEYED}{m.group(2)}." ~ ({m.group(3)}) {m.group(4)}%}}'
        return SAY_BY.sub(include, source)


class _MessageLoader(jinja2.BaseLoader):
    """The skeletons from the package; a name ``say:<table>.<code>`` is the keyed message of the language."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.package = jinja2.PackageLoader("embedswap", "templates")

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, Any]:
        if not template.startswith(KEYED):
            return self.package.get_source(environment, template)
        return catalogue(self.lang).message(template[len(KEYED):]), None, lambda: True


def message_keys(template_source: str) -> list[str]:
    """The message keys a skeleton names, in order, keyed tables by their table name (tests check every catalogue
    has exactly these)."""
    named = [(m.start(), m.group(1)) for m in SAY.finditer(template_source)]
    named += [(m.start(), m.group(2)) for m in SAY_BY.finditer(template_source)]
    return list(dict.fromkeys(key for _, key in sorted(named)))


def environment(lang: str, filters: dict[str, Any]) -> jinja2.Environment:
    """The Jinja environment of one report language: the skeleton with that language's prose spliced in."""
    catalogue(lang)  # an unknown language fails here, before any template is read
    return _environment(lang, tuple(sorted(filters.items())))


# one environment per language and filter set in a process, so its template cache keeps the compiled skeletons:
# compiling them again was 0.9 s of a two-language render (cProfile of render_report on the complete fixture)
@functools.lru_cache(maxsize=16)
def _environment(lang: str, filters: tuple[tuple[str, Any], ...]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=_MessageLoader(lang),
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
        extensions=[SayExtension],
    )
    env.report_language = lang  # type: ignore[attr-defined]
    env.filters.update(dict(filters))
    return env
