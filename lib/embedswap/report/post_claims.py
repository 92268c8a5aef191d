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
from embedswap.report.claim import Claim, claim, times
from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.faults import comparable
from embedswap.summary.types_index import IndexChoice
from embedswap.summary.types_plan import RankingQuestion
from embedswap.summary.types_decisions import LatencyRatio, RankingVariant

Figure = Literal["p50", "p99", "docs_per_s"]


class LatencyClaims(BaseModel):
    name: str
    names: list[str] = []  # the servers it is about (one candidate; two for a pair of candidates)
    headline: Claim
    seq_p50: Claim
    conc_rate: Claim
    seq_from: str
    seq_to: str
    rate_from: str
    rate_to: str
    p99_note: str | None = None  # why the p99 column has no interval (too few requests), formatted


class RankingClaims(BaseModel):
    """One candidate's ranking: each variant's combined verdict, labelled by the metric that decided it (its
    figure is that metric's), and nDCG@10's own where another metric decided (``naive_ndcg``/``shim_ndcg``, None
    where nDCG@10 decided or was not tested)."""
    name: str
    naive: Claim
    shim: Claim
    naive_ndcg: Claim | None = None
    shim_ndcg: Claim | None = None
    changed: str  # top-5 changed for this many queries ...
    queries: str  # ... of this many
    query_cosine: str | None  # the address swap's query vectors against the legacy server's (median)
    shim_changed: str


class IndexClaim(BaseModel):
    name: str
    choice: IndexChoice
    hnsw_recall: str | None = None
    hours: str | None = None
    replicas: str | None = None
    window: str | None = None
    retained: str | None = None
    condition: str | None = None  # the queries the decision holds for (decisions.index.<c>.condition: shim, naive)


class ShimCoverage(BaseModel):
    """``decisions.shim`` of one candidate as the post counts it: closed, opened and remaining, never recounted."""
    name: str
    closed: str
    differ: str
    left: str  # still different through the shim, the legacy server's own failures apart
    opened: str  # different only through the shim
    legacy_failed: str  # still different only because the legacy server failed them


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


def latency_ratio(ctx: ReportContext, name: str) -> LatencyRatio | None:
    """The one place the post reads a candidate's latency ratio and its verdicts from."""
    return ctx.decisions.latency.ratios.get(name)


def _shown(ctx: ReportContext, name: str | None, run: str, field: str) -> float | None:
    point = ctx.decisions.shown.at(name, run)
    return getattr(point, field) if point is not None else None


def _latency_claims(ctx: ReportContext, ratio: LatencyRatio, subjects: list[str], source: str) -> dict[str, Claim]:
    """The headline, sequential p50 and concurrent docs/s claims of one stored ratio (``source``: its path)."""
    def one(run: str, figure: str, metric: str) -> Claim:
        verdicts, interval = ratio.verdicts_at(run), ratio.figure(run, figure)  # type: ignore[arg-type]
        if interval is None and len(subjects) == 1:  # a summary without per-request data: its value-only ratio
            interval = ctx.summary.latency_ratio(subjects[0], run, figure)  # type: ignore[arg-type]
        return claim(ctx, getattr(verdicts, figure) if verdicts else None, interval,
                     interval.value if interval is not None else None, ratio=ratio, metric=metric, subjects=subjects,
                     source=f"{source}.verdicts.{run}.{figure}")

    return {"headline": claim(ctx, ratio.verdict, ratio=ratio, metric="latency", subjects=subjects,
                              source=f"{source}.verdict"),
            "seq_p50": one("sequential", "p50", "seq_p50"), "conc_rate": one("concurrent", "docs_per_s", "conc_rate")}


def latency_claims(ctx: ReportContext) -> list[LatencyClaims]:
    out = []
    for name in comparable(ctx):  # a server that corrupts answers is timed on the survivors: no ratio claimed
        ratio = latency_ratio(ctx, name)
        if ratio is None:
            continue
        # the one stored value per figure (decisions.latency.ratios, what Summary.latency_ratio reads)
        out.append(LatencyClaims(
            name=code(name), names=[name],
            **_latency_claims(ctx, ratio, [name], f"decisions.latency.ratios.{name}"),
            seq_from=fmt(_shown(ctx, ctx.legacy, "sequential", "p50_ms"), "ms"),
            seq_to=fmt(_shown(ctx, name, "sequential", "p50_ms"), "ms"),
            rate_from=fmt(_shown(ctx, ctx.legacy, "concurrent", "docs_per_s"), "rate"),
            rate_to=fmt(_shown(ctx, name, "concurrent", "docs_per_s"), "rate"),
            p99_note=_p99_note(ctx, name, ratio)))
    return out


def pair_claims(ctx: ReportContext) -> list[LatencyClaims]:
    """Two candidates compared with each other: only where ``decisions.latency.pairs`` stores their verdict
    (the same margins and host drift as against the legacy server); ``name`` is the second over the first."""
    usable = set(comparable(ctx))
    out = []
    for i, pair in enumerate(ctx.decisions.latency.pairs):
        if not {pair.first, pair.second} <= usable:
            continue
        subjects = [pair.second, pair.first]
        out.append(LatencyClaims(
            name=code(pair.second), names=subjects,
            **_latency_claims(ctx, pair.ratio, subjects, f"decisions.latency.pairs.{i}.ratio"),
            seq_from=fmt(_shown(ctx, pair.first, "sequential", "p50_ms"), "ms"),
            seq_to=fmt(_shown(ctx, pair.second, "sequential", "p50_ms"), "ms"),
            rate_from=fmt(_shown(ctx, pair.first, "concurrent", "docs_per_s"), "rate"),
            rate_to=fmt(_shown(ctx, pair.second, "concurrent", "docs_per_s"), "rate")))
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


def _variant_claims(ctx: ReportContext, name: str, kind: str, v: RankingVariant,
                    question: RankingQuestion = "equivalence") -> tuple[Claim, Claim | None]:
    """(the variant's combined verdict, nDCG@10's own where another metric decided the combined one). The combined
    verdict's figure is that of the metric that decided it (``slices``' first), so it is labelled by that metric.
    For a candidate serving another model (its plan's non-inferiority question), its nDCG@10 verdict on the judgements alone: the top-5 overlap with
    another model's ranking changes by nature, and nDCG@10 is what decides a model change (issue 57)."""
    source = f"decisions.ranking.by_candidate.{name}.{kind}"
    variant = "address_swap" if kind == "naive" else "shim"
    ndcg = v.metrics.get("ndcg_at_10")
    if question == "non_inferiority" and ndcg is not None:  # the verdict the report words too (speaking)
        return claim(ctx, v.speaking(question), kind="delta", metric="ndcg_at_10", subjects=[name], variant=variant,
                     source=f"{source}.metrics.ndcg_at_10"), None
    combined = v.equivalence
    metric = combined.slices[0] if combined is not None and combined.slices else "ndcg_at_10"
    first = claim(ctx, combined, kind="delta", metric=metric, subjects=[name], variant=variant,
                  source=f"{source}.equivalence")
    if metric == "ndcg_at_10" or ndcg is None:
        return first, None
    return first, claim(ctx, ndcg, kind="delta", metric="ndcg_at_10", subjects=[name], variant=variant,
                        source=f"{source}.metrics.ndcg_at_10")


def ranking_claims(ctx: ReportContext) -> list[RankingClaims]:
    if not is_measured(ctx.summary.ranking):
        return []
    out = []
    for name in ctx.candidates:
        c = ctx.decisions.ranking.of(name)
        if c is None:
            continue
        cosine = _query_cosine(ctx, name)
        question = ctx.summary.plan.ranking_question(name)
        naive, naive_ndcg = _variant_claims(ctx, name, "naive", c.naive, question)
        shim, shim_ndcg = _variant_claims(ctx, name, "shim", c.shim, question)
        out.append(RankingClaims(name=code(name), naive=naive, shim=shim, naive_ndcg=naive_ndcg, shim_ndcg=shim_ndcg,
                                 changed=fmt(c.naive.changed_queries, "int"), queries=fmt(c.naive.queries, "int"),
                                 query_cosine=fmt(cosine, "cos4") if cosine is not None else None,
                                 shim_changed=fmt(c.shim.changed_queries, "int")))
    return out


def index_claims(ctx: ReportContext) -> list[IndexClaim]:
    out = []
    for name in ctx.candidates:
        d = ctx.decisions.index.get(name)
        if d is None or d.decided_on == "options":  # the post's options line says it, once
            continue
        cost = d.cost
        out.append(IndexClaim(name=code(name), choice=d.choice,
                              hnsw_recall=fmt(d.hnsw_recall, "cos4") if d.hnsw_recall is not None else None,
                              hours=fmt(cost.hours_per_replica, "s") if cost else None,
                              replicas=fmt(cost.replicas, "int") if cost else None,
                              window=fmt(cost.window_hours, "s") if cost else None,
                              retained=fmt(d.adapter.retained, "cos4") if d.adapter and d.adapter.retained else None,
                              condition=str(d.condition.value) if d.condition is not None else None))
    return out


def shim_coverage(ctx: ReportContext) -> list[ShimCoverage]:
    """Per candidate probed through the shim with a difference before or after it, the counts of
    ``decisions.shim`` as stored: the closed list, the opened list, and the rest of the remaining ones."""
    sep = ctx.terms["post"]["list_sep"]
    out = []
    for name in ctx.candidates:
        s = ctx.decisions.shim.get(name)
        if s is None or not (s.differ_before or s.opened):
            continue
        rest = [r for r in s.remaining if r.probe not in s.opened]
        out.append(ShimCoverage(name=code(name), closed=fmt(len(s.closed), "int"), differ=fmt(s.differ_before, "int"),
                                left=sep.join(probe_phrase(ctx, r.probe) for r in rest if r.legacy_status is None),
                                opened=sep.join(probe_phrase(ctx, p) for p in s.opened),
                                legacy_failed=sep.join(probe_phrase(ctx, r.probe) for r in rest
                                                       if r.legacy_status is not None)))
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
