"""The post's labels checked in its text, the one check of issue 63 that reads the rendered post: each figure the
post prints with a verdict is mapped back to the claim it came from (the renderer marks it while
:func:`embedswap.report.claim.tracing` is active), and the check fails when

- the sentence names another metric than the claim's (the label nearest before the figure, in the language, is
  not the catalogue's name of the claim's metric: the top-5 overlap printed as "nDCG@10 change");
- an interval is printed under the drift label where it is not the one widened by the host drift, or the widened
  one without it;
- the printed claim is not one of the post document's (``decisions.post.document``): a renderer that states what
  the document does not (a comparison of two candidates from their ratios to the legacy server, the shim's verdict
  as the address swap's);
- the figure or interval printed beside the label is not its document claim's, as printed.

What is not read here is checked on the model (embedswap/report/post_checks.py, ``document_problems``): whether the
document's claims are the stored verdicts and figures (``source_problems``), say only their verdicts' directions
(``direction_problems``), print the interval their label names (``interval_problems``), agree with each other
(``disagreement_problems``) and name a pair only by a pair verdict (``source_problems``). The expected labels come
from the catalogue here, never from the claim, so a renderer that mislabels is caught. Used by
tests/report/test_claims_check.py on the fixtures, on property-generated summaries and on renderers broken on
purpose, and by the end-to-end tests."""

from __future__ import annotations

import re

from embedswap.report import figures
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.claim import CLOSE, OPEN, SEP, Claim, plain, tracing
from embedswap.report.format import fmt
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from embedswap.summary.types_post_document import PostClaim, PostDocument
from post_numbers import DECIMAL
from typed_summary import as_typed

ALL_FIGURES = {name: True for name in figures.FIGURES}
MARKED = re.compile(f"{OPEN}(\\d+){SEP}(.*?){CLOSE}", re.S)
BOUNDARY = re.compile(r"(?<!\d)[.;](?=\s)|[。；\n]")  # a sentence or clause ends


def _labels(summary: Summary, lang: str) -> dict[str, str]:
    """metric key -> its name in the language, lower-cased (what a sentence must say before the figure)."""
    c = next((p.concurrent.concurrency for p in summary.latency.by_target.values()
              if p.concurrent is not None and p.concurrent.concurrency), None)
    c = c if c is not None else summary.latency.config.get("concurrency")  # configured, where none was measured
    table = catalogue(lang).terms["equivalence"]["comparisons"]
    return {k: fill(v, c=fmt(c, "raw")).lower() for k, v in table.items()}


def _drift_label(lang: str) -> re.Pattern[str]:
    """The words that name an interval widened by the host drift, with its bound (``[terms.post.claim] drift``)."""
    parts = re.split(r"\{\{.*?\}\}", catalogue(lang).terms["post"]["claim"]["drift"])
    return re.compile(r"\S+?".join(re.escape(p) for p in parts))


def _nearest_label(region: str, labels: dict[str, str]) -> str | None:
    """The metric whose name ends last in ``region`` (the longest name where two end at one place)."""
    best: tuple[int, int, str] | None = None
    text = region.lower()
    for metric, name in labels.items():
        at = text.rfind(name)
        if at >= 0:
            found = (at + len(name), len(name), metric)
            best = found if best is None or found > best else best
    return best[2] if best else None


def _documented(c: Claim, document: PostDocument) -> list[PostClaim]:
    """The post document's claims a printed claim is: its verdict's path, subjects, metric, variant, code,
    direction and figure (what the document's checks, embedswap/report/post_checks.py, verify against the summary);
    empty where the document states no such claim."""
    return [pc for _, pc in document.claims() if pc.source == c.source and pc.subjects == c.subjects
            and pc.metric == c.metric and pc.variant == c.variant and pc.code == c.code
            and pc.direction == c.direction and pc.estimate.value == c.figure]


def _as_printed(pc: PostClaim) -> set[str]:
    """A document claim's figure and bounds as the post prints them: a ratio at two decimals, a ranking delta
    at three without its sign (the sign is read apart from the digits, as post_numbers reads them)."""
    e = pc.estimate
    return {x for v in (e.value, e.low, e.high) if v is not None
            for x in (f"{v:.2f}", fmt(v, "delta").lstrip("+-"))}


def _figure_problems(c: Claim, found: list[PostClaim], lang: str) -> list[str]:
    """The figure and interval a claim prints against its document claim's (once tests/support/post_numbers.py
    looked them up among every stored verdict's numbers; the document's are checked against the stored ones by
    post_checks.source_problems and interval_problems)."""
    printed = [n for part in (c.value, c.low, c.high) if part for n in DECIMAL.findall(part)]
    if not found or all(set(printed) <= _as_printed(pc) for pc in found):
        return []
    return [f"{lang}: {c.metric} of {c.subjects} prints {printed}, its document claim "
            f"{sorted(_as_printed(found[0]))}"]


def claim_problems(summary: Summary, lang: str, figures_on: dict[str, bool] | None = None) -> list[str]:
    """Every way the post of ``summary`` in ``lang`` misstates a claim (empty: none)."""
    with tracing() as claims:
        text = render_post(as_typed(summary), lang, ALL_FIGURES if figures_on is None else figures_on)
    if plain(text) != render_post(as_typed(summary), lang, ALL_FIGURES if figures_on is None else figures_on):
        return [f"{lang}: the traced post is not the post"]
    document = summary.decisions.post.document
    labels = _labels(summary, lang)
    problems: list[str] = []
    end = 0
    for m in MARKED.finditer(text):
        c = claims[int(m.group(1))]
        before = text[end:m.start()]
        cut = [b.end() for b in BOUNDARY.finditer(before)]
        region = plain(before[cut[-1]:] if cut else before)
        end = m.end()
        said = _nearest_label(region, labels)
        if said != c.metric:
            problems.append(f"{lang}: {c.metric} of {c.subjects} ({c.source}) printed under "
                            f"{labels.get(said or '', 'no metric name')!r}: {plain(region + m.group(2))[-160:]!r}")
        found = _documented(c, document) if document is not None else []
        if not found:
            problems.append(f"{lang}: {c.metric} of {c.subjects} ({c.source or 'no verdict'}, {c.code}) is printed but "
                            "is not a claim of the post document")
        problems += _figure_problems(c, found, lang)
        said = plain(m.group(2))
        labelled = _drift_label(lang).search(said) is not None
        bounds = c.low is not None and c.high is not None and c.low in said and c.high in said  # the body's form
        if labelled != (bounds and c.interval == "widened_by_drift"):
            problems.append(f"{lang}: {c.metric} of {c.subjects} prints a {c.interval} interval "
                            f"{'under' if labelled else 'without'} the drift label: {plain(m.group(2))!r}")
    return problems
