"""Checks on the post's document (``decisions.post.document``, issue 63), not on its markdown. Each returns the
problems it finds, one line each (empty: none):

- :func:`source_problems`: every claim's verdict, figure, margin and host drift, and every fact (the tables' cells
  and the other figures of :mod:`embedswap.analysis.post_figures` included), resolves to its path in summary.json
  (or the article's data) and equals it; the claim's metric is the one its verdict holds (a combined ranking
  verdict's first deciding slice); a claim about two candidates rests on a pair verdict
  (``decisions.latency.pairs``);
- :func:`direction_problems`: every direction a claim states is its stored verdict's (``different`` and
  ``non_inferior`` only);
- :func:`interval_problems`: the interval printed is the one its label names (``within_run``: the ratio's own,
  ``widened_by_drift``: the ratio's own widened by the stored drift bound (``widened``), so wider than it,
  ``paired_t``: a ranking verdict's);
- :func:`disagreement_problems`: claims about one subject, metric and variant never say two things;
- :func:`code_problems`: a keyed statement's code (``post.closings.drop_in``: the conclusion's vectors and contract
  sentences, the closings) is the one its facts give (:data:`embedswap.analysis.post_conclusion.CODES`, the
  decision's own rule): with :func:`source_problems` holding each fact to its stored value, a code its sources do
  not hold is found;
- :func:`twin_problems`: candidates with equal statements share one;
- :func:`contract_problems`: each contract paragraph's fact names what its source holds, and every candidate a
  paragraph speaks for holds what it says (:func:`embedswap.analysis.post_contract.contract_problems`).

:func:`document_problems` runs them all. Used by tests/report/test_post_checks.py on every stored summary and on
documents broken on purpose, and by the end-to-end tests on a real run's summary."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import cache
from typing import Any

from embedswap.analysis.article import load_article
from embedswap.analysis.post_conclusion import CODES, keyed_code
from embedswap.analysis.post_contract import contract_problems as paragraph_problems
from embedswap.analysis.post_document import heading_finding, printed_fact
from embedswap.analysis.post_figures import FIGURE_KEYS
from embedswap.analysis.post_story import relation_of
from embedswap.config.index import IndexConfig
from embedswap.summary.model import Summary
from embedswap.summary.types_post_document import PostClaim, PostDocument, Statement

MISSING = object()
# a stored latency verdict's path suffix -> the metric it holds
LATENCY = {"verdict": "latency", "sequential.p50": "seq_p50", "concurrent.docs_per_s": "conc_rate"}


def _document(summary: Summary, document: PostDocument | None) -> PostDocument:
    found = document if document is not None else summary.decisions.post.document
    if found is None:
        raise ValueError("the summary stores no post document (decisions.post.document)")
    return found


@cache
def article_fields() -> dict[str, Any]:
    """The article's data as JSON values with the keys its file has (the typed load dumped once): what an
    ``article:<dotted path>`` source resolves against."""
    return load_article().model_dump(mode="json", exclude_unset=True)


def _walk(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return MISSING
    return data


def resolve(data: dict[str, Any], source: str) -> Any:
    """The value at ``source``: a dotted path in summary.json (``data``, as JSON), ``article:`` and a path in the
    article's data, ``default:IndexConfig.<field>`` (a setting not written, at its default),
    ``ratio:<path>/<path>`` (one stored figure over another), ``len:<path>`` (a list's length), ``sum:<path>``
    (a dict's or list's values summed) or ``count:<path>:<field>=<JSON>`` (a list's entries holding that value).
    MISSING where nothing is stored there."""
    if source.startswith("article:"):
        return _walk(article_fields(), source.removeprefix("article:"))
    if source.startswith("default:IndexConfig."):
        return getattr(IndexConfig(), source.removeprefix("default:IndexConfig."), MISSING)
    if source.startswith(("len:", "sum:")):  # a count stored as a list, a total stored per process
        found = _walk(data, source[4:])
        if isinstance(found, (list, dict)) and source.startswith("len:"):
            return len(found)
        values = list(found.values()) if isinstance(found, dict) else found
        return sum(values) if isinstance(values, list) and all(isinstance(v, (int, float)) for v in values) else MISSING
    if source.startswith("count:"):  # count:<list>:<field>=<JSON value>, the entries holding that value
        path, _, test = source.removeprefix("count:").partition(":")
        field, _, want = test.partition("=")
        found = _walk(data, path)
        return sum(isinstance(e, dict) and e.get(field) == json.loads(want) for e in found) \
            if isinstance(found, list) else MISSING
    if source.startswith("ratio:"):
        top, bottom = (resolve(data, p) for p in source.removeprefix("ratio:").split("/"))
        return top / bottom if isinstance(top, (int, float)) and isinstance(bottom, (int, float)) and bottom else MISSING
    return _walk(data, source)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _figure_parts(c: PostClaim) -> tuple[str, str]:
    """(where the printed value is stored, where the printed interval is stored)."""
    value, _, interval = c.figure_source.partition("|")
    return value, interval or value


def _number(stored: Any, key: str) -> Any:
    """A stored figure's value: ``value`` of a ratio interval, ``estimate`` of a verdict; a plain number as is."""
    if isinstance(stored, dict):
        return stored.get("value", stored.get("estimate")) if key == "value" else stored.get(key)
    return stored if key == "value" else MISSING


def _metric_of(source: str, stored: dict[str, Any]) -> str | None:
    """The metric a stored verdict is about: a combined ranking verdict's first deciding slice, a metric's own, a
    latency figure's label."""
    if source.endswith(".equivalence"):
        slices = stored.get("slices") or []
        return slices[0] if slices else "ndcg_at_10"
    if ".metrics." in source:
        return source.rsplit(".", 1)[1]
    return next((metric for suffix, metric in LATENCY.items() if source.endswith(f".{suffix}")), None)


def _claim_sources(c: PostClaim, data: dict[str, Any], where: str) -> list[str]:
    out = []
    if len(c.subjects) > 1 and not c.source.startswith("decisions.latency.pairs."):
        out.append(f"{where}: {c.subjects} compared on {c.metric} with no pairwise verdict ({c.source or 'none'})")
    if c.source:
        stored = resolve(data, c.source)
        if not isinstance(stored, dict):
            return [*out, f"{where}: {c.metric} of {c.subjects} cites no stored verdict at '{c.source}'"]
        if stored.get("code") != c.code:
            out.append(f"{where}: {c.source} is {stored.get('code')}, the statement says {c.code}")
        if _metric_of(c.source, stored) != c.metric:
            out.append(f"{where}: {c.source} holds {_metric_of(c.source, stored)}, the claim says {c.metric}")
        out += _beside(c, data, stored, where)
    elif c.code != "not_measured":
        out.append(f"{where}: {c.metric} of {c.subjects} states {c.code} without a stored verdict")
    value_at, interval_at = _figure_parts(c)
    if c.estimate.value is not None:
        stored = _number(resolve(data, value_at), "value") if value_at else MISSING
        if stored is MISSING or not _equal(stored, c.estimate.value):
            out.append(f"{where}: {c.metric} of {c.subjects} prints {c.estimate.value}, '{value_at}' stores "
                       f"{'nothing' if stored is MISSING else stored}")
    if c.estimate.interval != "none":
        stored = resolve(data, interval_at)
        bounds = (_number(stored, "low"), _number(stored, "high"))
        if not all(_equal(a, b) for a, b in zip(bounds, (c.estimate.low, c.estimate.high))):
            out.append(f"{where}: {c.metric} of {c.subjects} prints [{c.estimate.low}, {c.estimate.high}], "
                       f"'{interval_at}' stores {list(bounds)}")
    return out


def _beside(c: PostClaim, data: dict[str, Any], stored: dict[str, Any], where: str) -> list[str]:
    """What a claim prints beside its figure: the verdict's margin, and the host drift (the factor an
    inconclusive verdict's reason names, the bound a widened interval was widened by), each the stored one."""
    out = []
    if c.margin is not None and not _equal(stored.get("margin", MISSING), c.margin):
        out.append(f"{where}: {c.metric} of {c.subjects} prints the margin {c.margin}, '{c.source}' stores "
                   f"{stored.get('margin')}")
    drift = _walk(data, f"{_ratio_path(c.source)}.drift") if ".latency." in c.source else MISSING
    drift = drift if isinstance(drift, dict) else {}
    for name, said, key in (("drift factor", c.drift_factor, "factor"), ("drift bound", c.estimate.widened_by,
                                                                       "bound")):
        if said is not None and not _equal(drift.get(key, MISSING), said):
            out.append(f"{where}: {c.metric} of {c.subjects} prints the {name} {said}, "
                       f"'{_ratio_path(c.source)}.drift.{key}' stores {drift.get(key)}")
    return out


def source_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """Every claim and fact against what its path stores."""
    data = summary.model_dump(mode="json", by_alias=True)
    out = []
    for s in _document(summary, document).statements():
        for c in s.claims:
            out += _claim_sources(c, data, s.key)
        for f in s.facts:
            stored = resolve(data, f.source)
            if stored is MISSING and f.value is None:  # stated as not measured, and nothing stored there
                continue
            if stored is MISSING or not _equal(stored, f.value):
                out.append(f"{s.key}: {f.key} is stated as {f.value!r}, '{f.source}' stores "
                           f"{'nothing' if stored is MISSING else repr(stored)}")
    return out


def direction_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """A direction stated where the verdict at the claim's source has none, or another one."""
    data = summary.model_dump(mode="json", by_alias=True)
    out = []
    for s, c in _document(summary, document).claims():
        stored = resolve(data, c.source) if c.source else MISSING
        decided = stored if isinstance(stored, dict) else {}
        own = decided.get("direction") if decided.get("code") in ("different", "non_inferior") else None
        if c.direction != own:
            out.append(f"{s.key}: {c.metric} of {c.subjects} says {c.direction!r}, its verdict "
                       f"'{c.source or 'none'}' {own!r}")
    return out


def _ratio_path(source: str) -> str:
    return source.split(".verdicts.", 1)[0] if ".verdicts." in source else source.rsplit(".", 1)[0]


def interval_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """Each printed interval against the kind its label names."""
    data = summary.model_dump(mode="json", by_alias=True)
    out = []
    for s, c in _document(summary, document).claims():
        kind, (_, at) = c.estimate.interval, _figure_parts(c)
        where = f"{s.key}: {c.metric} of {c.subjects} labelled {kind}"
        if kind == "within_run" and ".intervals." not in at and not at.startswith("ratio:") and ".verdicts." not in at:
            out.append(f"{where}, printed from '{at}', not a ratio's own interval")
        if kind == "within_run" and ".verdicts." in at:  # the verdict's interval, unwidened only without a bound
            bound = _walk(data, f"{_ratio_path(c.source)}.drift.bound")
            if isinstance(bound, (int, float)) and bound > 1:
                out.append(f"{where}, printed from the verdict widened by {bound}")
        if kind == "widened_by_drift":
            base = _ratio_path(c.source)
            bound = _walk(data, f"{base}.drift.bound")
            point = c.source.split(".verdicts.", 1)[1] if ".verdicts." in c.source else ""
            if at != f"{base}.widened.{point}" or not isinstance(bound, (int, float)) or bound <= 1 or \
                    not _equal(bound, c.estimate.widened_by):
                out.append(f"{where} by {c.estimate.widened_by}, but '{at}' is not its ratio's interval widened by "
                           f"the stored bound ({None if bound is MISSING else bound})")
                continue
            own = _walk(data, f"{base}.intervals.{point}")
            low, high = (_number(own, "low"), _number(own, "high")) if isinstance(own, dict) else (None, None)
            if isinstance(low, (int, float)) and isinstance(high, (int, float)) and c.estimate.low is not None \
                    and c.estimate.high is not None and not (c.estimate.low < low and c.estimate.high > high):
                out.append(f"{where}, but [{c.estimate.low}, {c.estimate.high}] is not wider than the ratio's "
                           f"own [{low}, {high}]")
        if kind == "paired_t" and not (".ranking." in c.source and at == c.source):
            out.append(f"{where}, printed from '{at}', not a ranking verdict")
    return out


def code_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """A keyed statement whose code is not the one the facts it cites give."""
    out = []
    for s in _document(summary, document).statements():
        for table, rule in CODES.items():
            said = keyed_code(s, table)
            if said is not None and said != rule(s.facts):
                out.append(f"{s.key}: {s.subjects} say {said!r}, the facts it cites give {rule(s.facts)!r} "
                           f"({', '.join(f.source for f in s.facts) or 'none'})")
    return out


def disagreement_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """Two claims about one subject, metric and variant that say different things."""
    said: dict[Any, tuple[Any, ...]] = {}
    out = []
    for s, c in _document(summary, document).claims():
        finding = (c.code, c.direction, c.estimate.printed()[0])
        first = said.setdefault(c.key(), finding)
        if first != finding:
            out.append(f"{s.key}: {c.key()} says {finding}, another statement {first}")
    return out


# what a statement prints of its claims, by message: the conclusion's value and verdict, the article comparison's
# verdict and direction (this run's figures are the latency lines'), every other one the whole finding
PRINTS: dict[str, Callable[[PostClaim], Any]] = {
    "post.c_latency_claim": lambda c: (c.metric, c.code, c.direction, c.estimate.printed()[0]),
    # the article comparison prints the relation (equivalent and non-inferior without a direction alike)
    "post.article_comparison": lambda c: (c.metric, relation_of(c.code, c.direction, "faster")),
    "post.latency_headings": heading_finding}


def _content(s: Statement, subject: str) -> Any:
    return tuple(PRINTS.get(s.key, PostClaim.finding)(c) for c in s.claims_of(subject))


def twin_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """A statement whose subjects say different things, or two statements of one message that say the same (as
    printed: facts at their printed precision)."""
    out = []
    seen: dict[Any, Statement] = {}
    for s in _document(summary, document).statements():
        if not s.subjects or s.key in FIGURE_KEYS:  # figures placed by the renderer: not sentences
            continue
        first = _content(s, s.subjects[0])
        shared = all(len(c.subjects) == 1 for c in s.claims)  # a pair's claims are about both: not shared
        for other in s.subjects[1:] if shared else []:
            if s.claims and _content(s, other) != first:
                out.append(f"{s.key}: {other} shares the statement of {s.subjects[0]} but its claims differ")
        # the facts as a set: a closing cites each member's code, and two groups closed alike are twins whatever
        # their sizes
        key = (s.key, first, frozenset((f.key, printed_fact(f)) for f in s.facts))
        if key in seen:
            out.append(f"{s.key}: {seen[key].subjects} and {s.subjects} say the same in two statements")
        seen.setdefault(key, s)
    return out


def contract_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """The contract paragraphs against the conclusions their candidates hold."""
    return paragraph_problems(summary.decisions, _document(summary, document))


CHECKS: dict[str, Callable[[Summary, PostDocument | None], list[str]]] = {
    "sources": source_problems, "codes": code_problems, "directions": direction_problems,
    "intervals": interval_problems, "disagreements": disagreement_problems, "twins": twin_problems,
    "contract": contract_problems}


def document_problems(summary: Summary, document: PostDocument | None = None) -> list[str]:
    """Every check on the post document of ``summary`` (``document``: another one, e.g. broken on purpose)."""
    return [p for check in CHECKS.values() for p in check(summary, document)]
