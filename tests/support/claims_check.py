"""The post's claims checked as data: each figure the post prints with a verdict is mapped back to the claim it came
from (the renderer marks it while :func:`embedswap.report.claim.tracing` is active), and the check fails when

- the sentence names another metric than the claim's (the label nearest before the figure, in the language, is
  not the catalogue's name of the claim's metric: the top-5 overlap printed as "nDCG@10 change");
- the claim's figure or verdict is not the one stored at its source in summary.json, or its metric is not the one
  that source holds (a combined ranking verdict is about the metric its ``slices`` name first);
- a claim about two servers rests on no stored pairwise verdict (``decisions.latency.pairs``);
- two printed claims about the same servers, metric and variant say different things.

The expected labels come from the catalogue here, never from the claim, so a renderer that mislabels is caught.
Used by tests/report/test_claims_check.py on the fixtures, on property-generated summaries and on renderers
broken on purpose."""

from __future__ import annotations

import re
from typing import Any

from embedswap.report import figures
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.claim import CLOSE, OPEN, SEP, Claim, plain, tracing
from embedswap.report.format import fmt
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from typed_summary import as_typed

ALL_FIGURES = {name: True for name in figures.FIGURES}
MARKED = re.compile(f"{OPEN}(\\d+){SEP}(.*?){CLOSE}", re.S)
BOUNDARY = re.compile(r"(?<!\d)[.;](?=\s)|[。；\n]")  # a sentence or clause ends
# a stored verdict's path suffix -> the metric it holds (a combined ranking verdict: its first deciding slice)
LATENCY = {"verdict": "latency", "sequential.p50": "seq_p50", "concurrent.docs_per_s": "conc_rate"}


def _labels(summary: Summary, lang: str) -> dict[str, str]:
    """metric key -> its name in the language, lower-cased (what a sentence must say before the figure)."""
    c = next((p.concurrent.concurrency for p in summary.latency.by_target.values()
              if p.concurrent is not None and p.concurrent.concurrency), None)
    c = c if c is not None else summary.latency.config.get("concurrency")  # configured, where none was measured
    table = catalogue(lang).terms["equivalence"]["comparisons"]
    return {k: fill(v, c=fmt(c, "raw")).lower() for k, v in table.items()}


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


def _resolve(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list):
            data = data[int(part)] if part.isdigit() and int(part) < len(data) else None
        elif isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def _metric_of(source: str, stored: dict[str, Any]) -> str | None:
    if source.endswith(".equivalence"):
        slices = stored.get("slices") or []
        return slices[0] if slices else "ndcg_at_10"
    if ".metrics." in source:
        return source.rsplit(".", 1)[1]
    for suffix, metric in LATENCY.items():
        if source.endswith(f".{suffix}"):
            return metric
    return None


def _stored_problems(c: Claim, data: dict[str, Any], lang: str) -> list[str]:
    stored = _resolve(data, c.source) if c.source else None
    if not isinstance(stored, dict):
        return [] if c.code == "not_measured" else [f"{lang}: {c.metric} of {c.subjects} has no stored verdict "
                                                    f"at '{c.source}'"]
    problems = []
    if stored.get("code") != c.code:
        problems.append(f"{lang}: {c.source} is {stored.get('code')}, the post says {c.code}")
    if _metric_of(c.source, stored) != c.metric:
        problems.append(f"{lang}: {c.source} holds {_metric_of(c.source, stored)}, the claim says {c.metric}")
    estimate = stored.get("estimate")
    if c.figure is not None and estimate is not None and abs(float(estimate) - c.figure) > 1e-9 * max(1, abs(c.figure)):
        problems.append(f"{lang}: {c.source} stores {estimate}, the post prints {c.figure}")
    return problems


def claim_problems(summary: Summary, lang: str, figures_on: dict[str, bool] | None = None) -> list[str]:
    """Every way the post of ``summary`` in ``lang`` misstates a claim (empty: none)."""
    with tracing() as claims:
        text = render_post(as_typed(summary), lang, ALL_FIGURES if figures_on is None else figures_on)
    if plain(text) != render_post(as_typed(summary), lang, ALL_FIGURES if figures_on is None else figures_on):
        return [f"{lang}: the traced post is not the post"]
    data = summary.model_dump(mode="json", by_alias=True)
    labels = _labels(summary, lang)
    problems: list[str] = []
    printed: list[Claim] = []
    end = 0
    for m in MARKED.finditer(text):
        c = claims[int(m.group(1))]
        printed.append(c)
        before = text[end:m.start()]
        cut = [b.end() for b in BOUNDARY.finditer(before)]
        region = plain(before[cut[-1]:] if cut else before)
        end = m.end()
        said = _nearest_label(region, labels)
        if said != c.metric:
            problems.append(f"{lang}: {c.metric} of {c.subjects} ({c.source}) printed under "
                            f"{labels.get(said or '', 'no metric name')!r}: {plain(region + m.group(2))[-160:]!r}")
        problems += _stored_problems(c, data, lang)
        if len(c.subjects) > 1 and not c.source.startswith("decisions.latency.pairs."):
            problems.append(f"{lang}: {c.subjects} compared on {c.metric} with no pairwise verdict ({c.source})")
    said: dict[Any, tuple[Any, ...]] = {}
    for c in printed:
        finding = (c.code, c.direction, c.figure)
        if said.setdefault(c.key(), finding) != finding:
            problems.append(f"{lang}: two claims about {c.key()} disagree: {said[c.key()]} and {finding}")
    return problems
