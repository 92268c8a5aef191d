"""The article's published figures beside this run's (vectors, contract, latency)."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.latency_ratios import latency_state
from embedswap.analysis.article import in_lang
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fence, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_common import Spread


def _vectors_table(ctx: ReportContext) -> str:
    """The article's vector figures beside this run's legacy server and primary candidate."""
    a = ctx.article
    t = ctx.terms
    vectors = ctx.summary.vectors
    cand = ctx.candidate
    comparison = vectors.comparison(cand)

    def mine(name: str | None, key: str, kind: str) -> str:
        info = vectors.of(name)
        if info is None or not is_measured(info):
            return ctx.label(False)
        if key == "first_l2":
            return fmt(info.norm.first if info.norm is not None else None, kind)
        return fmt(getattr(info, key), kind)

    av = a.vectors
    cos_run = (comparison.cosine or Spread()) if comparison is not None and is_measured(comparison) else None
    vec_rows = [
        [t["dimension"], fmt(av.legacy.dimension, "int"), fmt(av.candidate.dimension, "int"),
         mine(ctx.legacy, "dimension", "int"), mine(cand, "dimension", "int")],
        [t["first_l2"], fmt(av.legacy.first_l2, "norm"), fmt(av.candidate.first_l2, "norm"),
         mine(ctx.legacy, "first_l2", "norm"), mine(cand, "first_l2", "norm")],
        [fill(t["token_total"], n=f"{fmt(a.workload.documents, 'int')} / "
                f"{fmt(ctx.summary.workload.documents, 'int')}"),
         fmt(av.legacy.token_total, "int"), fmt(av.candidate.token_total, "int"),
         mine(ctx.legacy, "token_total", "int"), mine(cand, "token_total", "int")],
        [t["cosine_mmm"], MISSING, " · ".join(fmt(getattr(av.cosine, k), "cos4") for k in ("min", "median", "max")),
         MISSING, " · ".join(fmt(getattr(cos_run, k), "cos4") for k in ("min", "median", "max"))
         if cos_run is not None else ctx.label(False)],
    ]
    side_header = [t["item"], t["article_legacy"], t["article_candidate"],
                   fill(t["run_side"], name=code(ctx.legacy)), fill(t["run_side"], name=code(cand))]
    return md_table(side_header, vec_rows)


def _contract_table(ctx: ReportContext) -> str:
    """The article's four contract findings beside this run's answers to the same probes."""
    t = ctx.terms
    cand = ctx.candidate
    contract = ctx.summary.contract if isinstance(ctx.summary.contract, list) else []
    by_probe = {r.probe: r for r in contract}
    contract_rows = []
    for entry in ctx.article.contract:
        run = by_probe.get(entry.probe)
        if run is None:
            cells = [ctx.label(False)] * 3
        else:
            cells = [ctx.side_cell(run.side(ctx.legacy)), ctx.side_cell(run.side(cand)),
                     ctx.verdict_cell(run.verdict_for(cand))]
        contract_rows.append([
            f"{esc(in_lang(entry.request, ctx.lang))} ({code(entry.probe)})", esc(entry.legacy.in_lang(ctx.lang)),
            esc(entry.candidate.in_lang(ctx.lang)), *cells,
        ])
    return md_table([t["request"], t["article_legacy"], t["article_candidate"],
                               fill(t["run_side"], name=code(ctx.legacy)), fill(t["run_side"], name=code(cand)),
                               f"{t['verdict']} ({fill(t['run_side'], name=code(cand))})"],
                    contract_rows, ["l"] * 6)


def _latency_table(ctx: ReportContext, ac: str, c: str) -> str:
    """The article's latency figures, then this run's legacy server and primary candidate."""
    t = ctx.terms
    cand = ctx.candidate
    al = ctx.article.latency
    header = [t["target"], t["seq_p50"], t["seq_p99"], fill(t["conc_p50"], c=f"{ac}/{c}" if ac != c else c),
              fill(t["conc_p99"], c=f"{ac}/{c}" if ac != c else c),
              fill(t["conc_rate"], c=f"{ac}/{c}" if ac != c else c), t["per_repeat"], t["errors"]]
    lat_rows = []
    for key, name in (("legacy", t["article_legacy"]), ("candidate", t["article_candidate"])):
        v = getattr(al, key)
        lat_rows.append([fill(t["stats"]["article_single"], name=name), fmt(v.seq_p50_ms, "ms"), fmt(v.seq_p99_ms, "ms"),
                         fmt(v.conc_p50_ms, "ms"), fmt(v.conc_p99_ms, "ms"),
                         fmt(v.conc_docs_per_s, "rate"), fmt(v.docs_per_s_per_repeat, "rate"),
                         fmt(v.errors, "int")])
    for name in (ctx.legacy, cand):
        info = ctx.summary.latency.of(name)
        label_name = fill(t["run_side"], name=code(name))
        if info is None or latency_state(info) is False:
            lat_rows.append([label_name] + [ctx.label(False)] * 7)
            continue
        row = ctx.point_row(name, info, "")  # this run's figures with their intervals and n, as in section 5
        lat_rows.append([label_name, *row[2:7], row[8], row[9]])
    return md_table(header, lat_rows, ["l"] + ["r"] * 7)


def article(ctx: ReportContext) -> dict[str, Any] | None:
    """The article's published figures (data/article_000.json) beside this run's, or None without them."""
    a = ctx.article
    if a is None:
        return None
    env = a.environment
    ac = fmt(a.latency.concurrency, "raw")
    c = fmt(ctx.concurrency(), "raw")
    q = a.query_instruction
    return {
        "date": env.date, "hardware": env.hardware.in_lang(ctx.lang), "model": env.model,
        "dynamo": env.dynamo, "vllm": env.vllm, "kubernetes": env.kubernetes,
        "image": env.image, "legacy": env.legacy.in_lang(ctx.lang),
        "candidate_desc": env.candidate.in_lang(ctx.lang),
        # a model iterates as (field, value) in the file's order, which is the order the report prints
        "gpu_memory": {k: fmt(v, "raw") for k, v in env.gpu_memory_gb},
        "command": fence(env.command, "bash"),
        "workload": {k: fmt(v, "raw") for k, v in a.workload if not isinstance(v, list)},
        "vectors_table": _vectors_table(ctx), "contract_table": _contract_table(ctx),
        "latency_table": _latency_table(ctx, ac, c),
        "vectors_note": esc(a.vectors.note.in_lang(ctx.lang)),
        "query_cos_ignored": fmt(q.cosine_with_instruction_ignored, "raw"),
        "query_cos_plain": fmt(q.cosine_without_instruction, "raw"),
        "ratios": {k: fmt(v, "raw") for k, v in a.latency.published_ratios},
        "concurrency_differs": ac != c, "article_concurrency": ac, "concurrency": c,
        "model_differs": ctx.summary.model.spec != env.model,
        "memory": {role: gib_or_label(ctx, name) for role, name in (("legacy", ctx.legacy), ("candidate", ctx.candidate))},
        "source": esc(a.source.in_lang(ctx.lang)),
    }


def gib_or_label(ctx: ReportContext, name: str) -> str:
    """A server's peak memory in GiB, or 'not measured'."""
    value, _ = ctx.peak(name)
    return f"{fmt(value / 2**30, 'gib')} GiB" if value else ctx.label(False)
