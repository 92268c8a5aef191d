"""One claim of the post: a stored verdict with what it is about (the metric, the servers, the variant), where its
figure is stored in summary.json, and its words in the language.

A claim is worded from one claim of the post document (``decisions.post.document``, :func:`stated`): its figure
and the interval its :class:`~embedswap.summary.estimate.Estimate` names, so the drift label goes with the
widened interval only; its label comes from its metric key
(``[terms.equivalence.comparisons]`` of the catalogue), never from the sentence around it, so a number cannot be
printed under another metric's name (the top-5 overlap's -0.657 once stood after "nDCG@10 change"). While
:func:`tracing` is active (the label checker, tests/support/claims_check.py) every claim's words are wrapped
in private-use marks that name the claim, so the checker can map each printed figure back to the claim it came
from; outside it the words are plain text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from pydantic import BaseModel

from embedswap.report.catalogue import fill
from embedswap.report.format import fmt
from embedswap.report.sections.context import ReportContext
from embedswap.stats.equivalence import message_key
from embedswap.summary.types_post_document import PostClaim

# the reasons an inconclusive verdict can carry that the post words apart (others: the catalogue's "other")
WORDED_REASONS = ("host_drift", "missing_interval", "interval_crosses_margin", "too_few", "no_requests",
                  "not_significant_after_holm", "nothing_compared")
# private-use characters around a traced claim's words: OPEN, the claim's index, SEP, the words, CLOSE
OPEN, SEP, CLOSE = "\ue000", "\ue001", "\ue002"
_TRACE: ContextVar[list[Claim] | None] = ContextVar("embedswap_claim_trace", default=None)


class Claim(BaseModel):
    """One verdict as the post words it: ``code`` picks the sentence, ``direction`` is the only direction the
    sentence may state; the figures arrive formatted. ``metric`` (a key of ``[terms.equivalence.comparisons]``),
    ``subjects`` (the servers it is about: one candidate against the legacy server, or two candidates for a
    pair), ``variant`` (``address_swap``, ``shim`` or empty) and ``source`` (the dotted path of the stored verdict
    in summary.json) say what it is about; ``figure`` is the stored value that ``value`` formats."""
    code: Literal["equivalent", "non_inferior", "different", "inconclusive", "failed", "not_measured"]
    direction: Literal["worse", "better", "slower", "faster"] | None = None
    reason: str = ""  # the catalogue's words for the reason of an inconclusive verdict
    n_needed: str | None = None
    value: str = "—"
    low: str | None = None
    high: str | None = None
    margin: str | None = None
    statuses: str = ""
    drift: str | None = None  # the host drift bound the interval was widened by (None: not widened)
    interval: str = "none"  # what the printed interval is (an Estimate's kind): the drift label follows it
    metric: str = ""
    label: str = ""
    subjects: list[str] = []
    variant: str = ""
    source: str = ""
    figure: float | None = None
    text: str = ""  # the whole claim in the language (value, interval, verdict), from [terms.post.claim]
    short: str = ""  # the value and the verdict's word only ([terms.post.claim_brief]): the conclusion's form

    @property
    def words(self) -> str:
        """What a template prints: ``text``, marked with this claim while :func:`tracing` (a claim is registered
        as it is printed, with what it then says)."""
        return self._marked(self.text)

    @property
    def brief(self) -> str:
        """The conclusion's form (value and verdict; the interval, margin and drift are in the body), marked as
        :attr:`words` is."""
        return self._marked(self.short)

    def _marked(self, text: str) -> str:
        trace = _TRACE.get()
        if trace is None:
            return text
        trace.append(self)
        return f"{OPEN}{len(trace) - 1}{SEP}{text}{CLOSE}"

    def key(self) -> tuple[tuple[str, ...], str, str]:
        """What the claim is about: two claims with one key must not say two things."""
        return tuple(sorted(self.subjects)), self.metric, self.variant

    def same_finding(self) -> tuple[object, ...]:
        """What it says, without whom it is about: equal for two candidates with identical findings."""
        return (self.code, self.direction, self.value, self.low, self.high, self.margin, self.reason,
                self.n_needed, self.statuses, self.metric, self.variant)


def label(ctx: ReportContext, metric: str) -> str:
    """The metric's name in the language (``[terms.equivalence.comparisons]``)."""
    found = ctx.terms["equivalence"]["comparisons"].get(metric)
    return fill(found, c=fmt(ctx.concurrency(), "raw")) if found else ""


def times(ctx: ReportContext, value: float | None) -> str:
    """A ratio in the language's words (2.85× in English, 2.85배 in Korean)."""
    return fmt(None, "raw") if value is None else fill(ctx.terms["post"]["times"], x=f"{value:.2f}")


def stated(ctx: ReportContext, c: PostClaim, kind: str = "ratio") -> Claim:
    """One claim of the post document (``decisions.post.document``) worded: its figure and the interval its
    estimate names, the drift label exactly where that interval is the one widened by the host drift."""
    about = {"metric": c.metric, "label": label(ctx, c.metric), "subjects": c.subjects, "variant": c.variant,
             "source": c.source}
    e = c.estimate

    def show(x: float | None) -> str:
        return times(ctx, x) if kind == "ratio" else fmt(x, kind)

    if c.code == "not_measured":
        out = Claim(code="not_measured", value=show(e.value), figure=e.value, **about)
    else:
        words_of = ctx.terms["post"]["reasons"]
        reason = ""
        if c.code == "inconclusive":
            reason = fill(words_of[c.reason if c.reason in WORDED_REASONS else "other"],
                          drift=times(ctx, c.drift_factor), margin=times(ctx, c.margin) if c.margin else "—")
        out = Claim(code=c.code, direction=c.direction, reason=reason,
                    n_needed=fmt(c.n_needed, "int") if c.n_needed else None, value=show(e.value),
                    low=show(e.low) if e.low is not None else None, high=show(e.high) if e.high is not None else None,
                    margin=(show(c.margin) if kind == "ratio" else fmt(c.margin, "score"))
                    if c.margin is not None else None,
                    statuses=", ".join(f"{k} × {n}" for k, n in c.statuses.items()),
                    drift=times(ctx, e.widened_by) if e.interval == "widened_by_drift" else None,
                    interval=e.interval, figure=e.value, **about)
    return out.model_copy(update={"text": words(ctx, out), "short": words(ctx, out, "claim_brief")})


def words(ctx: ReportContext, c: Claim, table: str = "claim") -> str:
    """The claim's sentence part: the catalogue's message of its code and direction, nothing else (``table``:
    ``claim``, the whole claim; ``claim_brief``, value and verdict only)."""
    t, whole = ctx.terms["post"][table], ctx.terms["post"]["claim"]
    key = message_key(c.code, c.direction)
    interval = fill(whole["interval"], low=c.low, high=c.high) if c.low is not None and c.high is not None else ""
    needed = fill(whole["needed"], n=c.n_needed) if c.n_needed else ""
    text = fill(t[key], value=c.value, interval=interval, reason=c.reason, needed=needed, margin=c.margin or "—",
                statuses=c.statuses)
    if c.drift and table == "claim":
        text += fill(whole["drift"], drift=c.drift)
    return text


@contextmanager
def tracing() -> Iterator[list[Claim]]:
    """Within it, every claim printed is kept in the list yielded and its words are marked with its index."""
    token = _TRACE.set([])
    try:
        found = _TRACE.get()
        assert found is not None
        yield found
    finally:
        _TRACE.reset(token)


def plain(text: str) -> str:
    """A traced text without its marks (what the post prints)."""
    return re.sub(f"{OPEN}\\d+{SEP}|{CLOSE}", "", text)
