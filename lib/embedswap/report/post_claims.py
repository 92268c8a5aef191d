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
from embedswap.report import post_figures
from embedswap.report.catalogue import fill
from embedswap.report.claim import Claim, stated
from embedswap.report.errors import ReportError
from embedswap.report.format import code, fmt
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_index import IndexChoice
from embedswap.summary.estimate import Estimate
from embedswap.summary.types_decisions import LatencyRatio
from embedswap.summary.types_post_document import PostClaim, PostDocument, Statement

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


def document(ctx: ReportContext) -> PostDocument:
    """The post's statements, decided before rendering (``decisions.post.document``)."""
    document = ctx.decisions.post.document
    if document is None:
        raise ReportError("the summary stores no post document (decisions.post.document): load it with "
                          "embedswap.analysis.upgrade.read_summary, which adds it to a summary decided before it")
    return document


def _fact(statement: Statement, key: str, kind: str) -> str:
    found = statement.fact(key)
    return fmt(found.value if found is not None else None, kind)


def _one(ctx: ReportContext, statement: Statement, subject: str, name: str,
         heads: dict[str, PostClaim]) -> LatencyClaims:
    """One latency statement of the document worded for ``subject`` (``name``: the names it is said of)."""
    by_metric = {c.metric: c for c in statement.claims_of(subject)}
    head = heads.get(subject)
    pair = len(statement.claims[0].subjects) > 1 if statement.claims else False
    return LatencyClaims(
        name=name, names=list(statement.claims[0].subjects) if pair else [subject],
        headline=stated(ctx, head) if head is not None else stated(ctx, _unmeasured(subject, "latency")),
        seq_p50=stated(ctx, by_metric.get("seq_p50") or _unmeasured(subject, "seq_p50")),
        conc_rate=stated(ctx, by_metric.get("conc_rate") or _unmeasured(subject, "conc_rate")),
        seq_from=_fact(statement, "seq_from", "ms"), seq_to=_fact(statement, "seq_to", "ms"),
        rate_from=_fact(statement, "rate_from", "rate"), rate_to=_fact(statement, "rate_to", "rate"))


def _unmeasured(subject: str, metric: str) -> PostClaim:
    return PostClaim(subjects=[subject], metric=metric, code="not_measured", estimate=Estimate())


def _heads(ctx: ReportContext) -> dict[str, PostClaim]:
    return {c.subjects[0]: c for s in document(ctx).statements("post.latency_headings") for c in s.claims}


def latency_claims(ctx: ReportContext) -> list[LatencyClaims]:
    """Per candidate whose latency the post states (``post.latency_claim`` of the document), its claims."""
    heads, out = _heads(ctx), []
    for statement in document(ctx).statements("post.latency_claim"):
        for subject in statement.subjects:
            ratio = latency_ratio(ctx, subject)
            one = _one(ctx, statement, subject, code(subject), heads)
            out.append(one.model_copy(update={"p99_note": _p99_note(ctx, subject) if ratio else None}))
    return out


def latency_statements(ctx: ReportContext, key: str) -> list[LatencyClaims]:
    """The document's latency statements of one message (``post.latency_claim``, ``post.c_latency_claim``), each
    said once for the candidates that share it (their names joined)."""
    heads, sep = _heads(ctx), ctx.terms["post"]["list_sep"]
    return [_one(ctx, s, s.subjects[0], sep.join(code(n) for n in s.subjects), heads)
            for s in document(ctx).statements(key) if s.subjects]


def pair_claims(ctx: ReportContext) -> list[LatencyClaims]:
    """Two candidates compared with each other: only where ``decisions.latency.pairs`` stores their verdict
    (``post.pair_claim`` of the document); ``name`` is the second over the first."""
    return [_one(ctx, s, s.subjects[0], code(s.subjects[0]), {}) for s in document(ctx).statements("post.pair_claim")]


def _p99_note(ctx: ReportContext, name: str) -> str | None:
    """Why the p99 columns carry no interval: fewer answered requests than the percentile needs, as the document's
    ``post.p99_note`` of ``name`` states it (the fewest requests and the count an interval needs)."""
    note = next((s for s in document(ctx).statements("post.p99_note") if s.subjects == [name]), None)
    if note is None:
        return None
    if note.fact("n") is None:
        return ctx.terms["post"]["p99_too_few_plain"]
    return fill(ctx.terms["post"]["p99_too_few"], n=_fact(note, "n", "int"), n_min=_fact(note, "n_min", "int"))


def ranking_claims(ctx: ReportContext) -> list[RankingClaims]:
    """Per candidate, its ranking claims as the document's ``post.ranking_line`` states them: the address swap's
    and the shim's combined verdicts (labelled by the metric that decided them), nDCG@10's own beside them where
    another metric decided."""
    out = []
    for statement in document(ctx).statements("post.ranking_line"):
        for name in statement.subjects:
            claims = statement.claims_of(name)
            naive = [stated(ctx, c, "delta") for c in claims if c.variant == "address_swap"]
            shim = [stated(ctx, c, "delta") for c in claims if c.variant == "shim"]
            out.append(RankingClaims(name=code(name), naive=naive[0], shim=shim[0],
                                     naive_ndcg=naive[1] if len(naive) > 1 else None,
                                     shim_ndcg=shim[1] if len(shim) > 1 else None,
                                     changed=_fact(statement, "changed", "int"),
                                     queries=_fact(statement, "queries", "int"),
                                     shim_changed=_fact(statement, "shim_changed", "int")))
    return out


def setup_fact(ctx: ReportContext, key: str, fact: str) -> object:
    """A fact one statement of the document cites (``post.setup_workload``'s batch size...); None: not stated."""
    found = next((s.fact(fact) for s in document(ctx).statements(key)), None)
    return found.value if found is not None else None


def _condition(ctx: ReportContext, name: str) -> str | None:
    """The queries a candidate's index decision holds for, as its document statement cites them."""
    line = next((s for s in document(ctx).statements("post.index_line") if name in s.subjects), None)
    found = line.fact("index_queries") if line is not None else None
    return str(found.value) if found is not None and found.value is not None else None


def index_claims(ctx: ReportContext) -> list[IndexClaim]:
    out = []
    for name in ctx.candidates:
        d = ctx.decisions.index.get(name)
        if d is None or d.decided_on == "options":  # the post's options line says it, once
            continue
        out.append(IndexClaim(name=code(name), choice=d.choice, **post_figures.index_figures(ctx, name),
                              condition=_condition(ctx, name)))
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
        closed, differ = post_figures.shim_counts(ctx, name)  # the document's post.shim_line
        out.append(ShimCoverage(name=code(name), closed=closed, differ=differ,
                                left=sep.join(probe_phrase(ctx, r.probe) for r in rest if r.legacy_status is None),
                                opened=sep.join(probe_phrase(ctx, p) for p in s.opened),
                                legacy_failed=sep.join(probe_phrase(ctx, r.probe) for r in rest
                                                       if r.legacy_status is not None)))
    return out


def parity_claim(ctx: ReportContext) -> ParityClaim | None:
    parity = ctx.summary.parity
    if not is_measured(parity) or not parity.rows:
        return None
    # the counts as the document's post.parity_line states them
    return ParityClaim(passed=parity.passed, rows=post_figures.printed(ctx, "post.parity_line", "rows"),
                       failed=post_figures.printed(ctx, "post.parity_line", "failed"),
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
    d = ctx.summary.target(dynamo)
    assert d is not None

    # the resident memory (its processes' sum) as the document's post.start_times states it
    if d.start_seconds is None and post_figures.memory(ctx, dynamo) is None:
        return None
    return EngineCost(dynamo=code(dynamo), vllm=code(vllm),
                      dynamo_start=post_figures.start(ctx, dynamo), vllm_start=post_figures.start(ctx, vllm),
                      dynamo_mib=post_figures.memory(ctx, dynamo), vllm_mib=post_figures.memory(ctx, vllm))


def restore_measured(ctx: ReportContext) -> bool:
    """Whether the legacy server was started again after the swap (the procedure's fourth step)."""
    restore = ctx.summary.restore
    return restore is not None and is_measured(restore) and restore.restored is not None
