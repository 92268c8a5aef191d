"""The post's claims, each chosen by a stored verdict: a sentence of the post states a direction (faster, slower,
better, worse) only where the verdict it reads has that direction, an ``inconclusive`` verdict is said as such with
its reason (and the n that would decide it), a ``failed`` one with its statuses, and a percentile printed without
an interval says why. The decisions the article left unmeasured (ranking, the index, the shim's coverage, parity,
Dynamo against vLLM alone, the restore) are read here too, so the template only picks the catalogue's words.

Latency verdicts are read through :func:`latency_ratio` only: where the summary keeps a candidate's ratio is a
one-line change there."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from embedswap.analysis.common import is_measured
from embedswap.report.catalogue import fill
from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.faults import comparable
from embedswap.summary.types_decisions import Verdict, LatencyRatio, RankingVariant, RatioInterval

Figure = Literal["p50", "p99", "docs_per_s"]
# the reasons an inconclusive verdict can carry that the post words apart (others: the catalogue's "other")
WORDED_REASONS = ("host_drift", "missing_interval", "interval_crosses_margin", "too_few", "no_requests",
                  "not_significant_after_holm", "nothing_compared")


class Claim(BaseModel):
    """One verdict as the post words it: ``code`` picks the sentence, ``direction`` is the only direction the
    sentence may state; the figures arrive formatted."""
    code: Literal["equivalent", "non_inferior", "different", "inconclusive", "failed", "not_measured"]
    direction: Literal["worse", "better", "slower", "faster"] | None = None
    reason: str = ""  # the catalogue's words for the reason of an inconclusive verdict
    n_needed: str | None = None
    value: str = "—"
    low: str | None = None
    high: str | None = None
    margin: str | None = None
    statuses: str = ""
    words: str = ""  # the whole claim in the language (value, interval, verdict), from [terms.post.claim]


class LatencyClaims(BaseModel):
    name: str
    headline: Claim
    seq_p50: Claim
    conc_rate: Claim
    seq_from: str
    seq_to: str
    rate_from: str
    rate_to: str
    p99_note: str | None = None  # why the p99 column has no interval (too few requests), formatted


class RankingClaims(BaseModel):
    name: str
    naive: Claim
    shim: Claim
    changed: str  # top-5 changed for this many queries ...
    queries: str  # ... of this many
    query_cosine: str | None  # the address swap's query vectors against the legacy server's (median)
    shim_changed: str


class IndexClaim(BaseModel):
    name: str
    code: Literal["keep_index", "re_embed", "adapter", "blocked", "not_measured"]
    hnsw_recall: str | None = None
    hours: str | None = None
    replicas: str | None = None
    window: str | None = None
    retained: str | None = None


class ShimCoverage(BaseModel):
    name: str
    closed: str
    differ: str
    left: str


class EngineCost(BaseModel):
    """Dynamo against vLLM alone, where both were started in the run: start time and resident memory."""
    dynamo: str
    vllm: str
    dynamo_start: str | None
    vllm_start: str | None
    dynamo_mib: str | None
    vllm_mib: str | None


class ParityClaim(BaseModel):
    passed: bool | None
    rows: str
    failed: str
    dtypes: str


def probe_phrase(ctx: ReportContext, probe: str) -> str:
    """A probe in running prose: the catalogue's short phrase for it (never its identifier), else its description."""
    return ctx.terms["post"]["probe_words"].get(probe) or ctx.words.probes.get(probe, probe)


def times(ctx: ReportContext, value: float | None) -> str:
    """A ratio in the language's words (2.85× in English, 2.85배 in Korean)."""
    return fmt(None, "raw") if value is None else fill(ctx.terms["post"]["times"], x=f"{value:.2f}")


def latency_ratio(ctx: ReportContext, name: str) -> LatencyRatio | None:
    """The one place the post reads a candidate's latency ratio and its verdicts from."""
    return ctx.decisions.latency.ratios.get(name)


def _reason(ctx: ReportContext, v: Verdict, ratio: LatencyRatio | None = None) -> str:
    words = ctx.terms["post"]["reasons"]
    key = v.reason if v.reason in WORDED_REASONS else "other"
    drift = ratio.drift.factor if ratio is not None and ratio.drift is not None else None
    return fill(words[key], drift=times(ctx, drift), margin=times(ctx, v.margin) if v.margin else "—")


def claim(ctx: ReportContext, v: Verdict | None, interval: RatioInterval | None = None,
          value: float | None = None, kind: str = "ratio", ratio: LatencyRatio | None = None) -> Claim:
    """One stored verdict worded for the post: the value shown (``value``, else the verdict's estimate) with the
    ratio's interval where one exists."""
    if v is None:
        empty = Claim(code="not_measured", value=times(ctx, value) if kind == "ratio" else fmt(value, kind))
        return empty.model_copy(update={"words": words(ctx, empty)})
    low = interval.low if interval is not None else v.low
    high = interval.high if interval is not None else v.high
    statuses = getattr(v, "statuses", {}) or {}
    def show(x: float | None) -> str:
        return times(ctx, x) if kind == "ratio" else fmt(x, kind)

    out = Claim(code=v.code, direction=v.direction if v.code in ("different", "non_inferior") else None,
                 reason=_reason(ctx, v, ratio) if v.code == "inconclusive" else "",
                 n_needed=fmt(v.n_needed, "int") if v.n_needed else None,
                 value=show(value if value is not None else v.estimate),
                 low=show(low) if low is not None else None, high=show(high) if high is not None else None,
                 margin=(show(v.margin) if kind == "ratio" else fmt(v.margin, "score")) if v.margin is not None else None,
                 statuses=", ".join(f"{k} × {n}" for k, n in statuses.items()))
    return out.model_copy(update={"words": words(ctx, out)})


def words(ctx: ReportContext, c: Claim) -> str:
    """The claim's sentence part: the catalogue's message of its code and direction, nothing else."""
    t = ctx.terms["post"]["claim"]
    key = f"{c.code}_{c.direction}" if c.direction else c.code
    interval = fill(t["interval"], low=c.low, high=c.high) if c.low is not None and c.high is not None else ""
    needed = fill(t["needed"], n=c.n_needed) if c.n_needed else ""
    return fill(t[key], value=c.value, interval=interval, reason=c.reason, needed=needed, margin=c.margin or "—",
                statuses=c.statuses)


def _shown(ctx: ReportContext, name: str | None, run: str, field: str) -> float | None:
    point = ctx.decisions.shown.at(name, run)
    return getattr(point, field) if point is not None else None


def latency_claims(ctx: ReportContext) -> list[LatencyClaims]:
    out = []
    for name in comparable(ctx):  # a server that corrupts answers is timed on the survivors: no ratio claimed
        ratio = latency_ratio(ctx, name)
        if ratio is None:
            continue
        # the one stored value per figure (Summary.latency_ratio), as every other reader prints it
        seq_value, rate_value = (ctx.summary.latency_ratio(name, run, figure) for run, figure in (
            ("sequential", "p50"), ("concurrent", "docs_per_s")))
        seq, conc = ratio.verdicts_at("sequential"), ratio.verdicts_at("concurrent")
        seq_i, conc_i = ratio.at("sequential"), ratio.at("concurrent")
        out.append(LatencyClaims(
            name=code(name), headline=claim(ctx, ratio.verdict, ratio=ratio),
            seq_p50=claim(ctx, seq.p50 if seq else None, seq_i.p50 if seq_i else None,
                          seq_value.value if seq_value else None, ratio=ratio),
            conc_rate=claim(ctx, conc.docs_per_s if conc else None, conc_i.docs_per_s if conc_i else None,
                            rate_value.value if rate_value else None, ratio=ratio),
            seq_from=fmt(_shown(ctx, ctx.legacy, "sequential", "p50_ms"), "ms"),
            seq_to=fmt(_shown(ctx, name, "sequential", "p50_ms"), "ms"),
            rate_from=fmt(_shown(ctx, ctx.legacy, "concurrent", "docs_per_s"), "rate"),
            rate_to=fmt(_shown(ctx, name, "concurrent", "docs_per_s"), "rate"),
            p99_note=_p99_note(ctx, name, ratio)))
    return out


def _p99_note(ctx: ReportContext, name: str, ratio: LatencyRatio) -> str | None:
    """Why the p99 columns carry no interval: fewer answered requests than the percentile needs (too_few)."""
    if not any(p.p99.direction == "too_few" for p in ratio.intervals.values()):
        return None
    points = ctx.decisions.latency.points.get(name, {})
    found = [p.p99 for p in points.values() if not p.p99.estimable]
    if not found:
        return ctx.terms["post"]["p99_too_few_plain"]
    least = min(found, key=lambda i: i.n)
    return fill(ctx.terms["post"]["p99_too_few"], n=fmt(least.n, "int"), n_min=fmt(least.n_min, "int"))


def _query_cosine(ctx: ReportContext, name: str) -> float | None:
    """The address swap's query vectors (the instruction sent as a field) against the reference, median."""
    rows = ctx.summary.instruction.rows if is_measured(ctx.summary.instruction) else []
    row = next((r for r in rows if r.target == name and r.variant == "server_instruction"), None)
    spread = row.cosine_to_reference if row is not None else None
    return spread.median if spread is not None else None


def _variant_claim(ctx: ReportContext, v: RankingVariant, another_model: bool = False) -> Claim:
    """The variant's combined verdict; for a candidate serving another model its nDCG@10 verdict on the judgements:
    the combined one is its worst metric, and the top-5 overlap with another model's ranking changes by nature, so
    it would word an overlap as the nDCG change that decides a model change (issue 57)."""
    ndcg = v.metrics.get("ndcg_at_10") if another_model else None
    return claim(ctx, ndcg if ndcg is not None else v.equivalence, kind="delta")


def ranking_claims(ctx: ReportContext) -> list[RankingClaims]:
    if not is_measured(ctx.summary.ranking):
        return []
    out = []
    for name in ctx.candidates:
        c = ctx.decisions.ranking.of(name)
        if c is None:
            continue
        cosine = _query_cosine(ctx, name)
        other = ctx.summary.another_model(name)
        out.append(RankingClaims(name=code(name), naive=_variant_claim(ctx, c.naive, other),
                                 shim=_variant_claim(ctx, c.shim, other),
                                 changed=fmt(c.naive.changed_queries, "int"), queries=fmt(c.naive.queries, "int"),
                                 query_cosine=fmt(cosine, "cos4") if cosine is not None else None,
                                 shim_changed=fmt(c.shim.changed_queries, "int")))
    return out


def index_claims(ctx: ReportContext) -> list[IndexClaim]:
    out = []
    for name in ctx.candidates:
        d = ctx.decisions.index.get(name)
        if d is None:
            continue
        cost = d.cost
        out.append(IndexClaim(name=code(name), code=d.code,
                              hnsw_recall=fmt(d.hnsw_recall, "cos4") if d.hnsw_recall is not None else None,
                              hours=fmt(cost.hours_per_replica, "s") if cost else None,
                              replicas=fmt(cost.replicas, "int") if cost else None,
                              window=fmt(cost.window_hours, "s") if cost else None,
                              retained=fmt(d.adapter.retained, "cos4") if d.adapter and d.adapter.retained else None))
    return out


def shim_coverage(ctx: ReportContext) -> list[ShimCoverage]:
    out = []
    for name in ctx.candidates:
        s = ctx.decisions.shim.get(name)
        if s is None or not s.differ_before:
            continue
        out.append(ShimCoverage(name=code(name), closed=fmt(s.differ_before - s.differ_after, "int"),
                                differ=fmt(s.differ_before, "int"),
                                left=ctx.terms["post"]["list_sep"].join(probe_phrase(ctx, r.probe)
                                                                       for r in s.remaining)))
    return out


def parity_claim(ctx: ReportContext) -> ParityClaim | None:
    parity = ctx.summary.parity
    if not is_measured(parity) or not parity.rows:
        return None
    return ParityClaim(passed=parity.passed, rows=fmt(len(parity.rows), "int"),
                       failed=fmt(sum(not r.passed for r in parity.rows), "int"),
                       dtypes=" · ".join(dict.fromkeys(r.dtype for r in parity.rows)))


def engine_cost(ctx: ReportContext) -> EngineCost | None:
    """Dynamo's start time and memory beside vLLM alone, when the run started both."""
    def kind(name: str) -> str:
        t = ctx.summary.target(name)
        text = f"{name} {(t.version or '') if t else ''}".lower()
        k = ((t.config.kind or t.kind) if t else "") or ""
        return "dynamo" if k == "dynamo" or "dynamo" in text else k

    dynamo = next((n for n in ctx.candidates if kind(n) == "dynamo"), None)
    vllm = next((n for n in ctx.candidates if kind(n) == "vllm"), None)
    if dynamo is None or vllm is None:
        return None
    d, v = ctx.summary.target(dynamo), ctx.summary.target(vllm)
    assert d is not None and v is not None

    def mib(t: object) -> str | None:
        by_process = getattr(t, "rss_bytes_by_process", {}) or {}
        total = sum(by_process.values()) if by_process else getattr(t, "rss_bytes", None)
        return fmt(total / 2**20, "int") if total else None

    if d.start_seconds is None and mib(d) is None:
        return None
    return EngineCost(dynamo=code(dynamo), vllm=code(vllm),
                      dynamo_start=fmt(d.start_seconds, "s") if d.start_seconds is not None else None,
                      vllm_start=fmt(v.start_seconds, "s") if v.start_seconds is not None else None,
                      dynamo_mib=mib(d), vllm_mib=mib(v))


def restore_measured(ctx: ReportContext) -> bool:
    """Whether the legacy server was started again after the swap (the procedure's fourth step)."""
    restore = ctx.summary.restore
    return restore is not None and is_measured(restore) and restore.restored is not None
