"""The post's figures outside its claims, printed from the post document's facts (issue 63,
:mod:`embedswap.analysis.post_figures`): the latency table's cells, the vectors table, a group's least cosine and
threshold, the host's memory, the index's recall and cost, the start times. What is measured (whether a row or a
cell is shown at all) is layout and still read from the summary; every number printed is a document fact's, in the
kind :func:`~embedswap.analysis.post_figures.fact_kind` names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.analysis.post_counts import ANSWER_FIELDS, LATENCY_SETTINGS
from embedswap.analysis.post_figures import LATENCY_CELLS, fact_kind
from embedswap.analysis.article import Article
from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, esc, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.index_options import MAPS, MIB, option_tables
from embedswap.report.sections.faults import event_words
from embedswap.report.sections.long_input import handling
from embedswap.summary.types_post_document import Statement
from embedswap.summary.types_faults import FaultEvent
from embedswap.summary.types_long_input import LongInputFinding
from embedswap.summary.types_vectors import ProbeSide


def _statement(ctx: ReportContext, key: str, subjects: list[str] | None = None) -> Statement | None:
    document = ctx.decisions.post.document
    found = document.statements(key) if document is not None else iter(())
    return next((s for s in found if subjects is None or s.subjects == subjects), None)


def value(ctx: ReportContext, key: str, fact: str, subjects: list[str] | None = None) -> Any:
    """The value of ``fact`` as the document's ``key`` statement (of ``subjects``) states it; None: not stated."""
    statement = _statement(ctx, key, subjects)
    found = statement.fact(fact) if statement is not None else None
    return found.value if found is not None else None


def as_printed(key: str, found: Any) -> str:
    """A fact's value as the post prints it, in the kind its key names (the index options' two own kinds
    included)."""
    kind = fact_kind(key)
    if kind == "signed2" and isinstance(found, (int, float)):
        return f"{found:+.2f}"
    if kind == "bytes_mib" and isinstance(found, (int, float)):
        return f"{found / MIB:.2f}"
    if kind == "bytes_mib0" and isinstance(found, (int, float)):  # the engines' memory: whole MiB
        return fmt(found / MIB, "int")
    if kind == "pct1" and isinstance(found, (int, float)):  # a share as a percentage, its % sign the sentence's
        return fmt(found * 100, "s")
    if kind == "ratio2" and isinstance(found, (int, float)):  # a ratio's figure; its sign (×, 배) the catalogue's
        return f"{found:.2f}"
    return fmt(found, kind)


def printed(ctx: ReportContext, key: str, fact: str, subjects: list[str] | None = None) -> str:
    """A fact of the document as the post prints it."""
    return as_printed(fact, value(ctx, key, fact, subjects))


def latency_rows(ctx: ReportContext, article: Article | None) -> list[list[str]]:
    """The latency table's rows: the article's two (its statistic, labelled so) and each server's shown point."""
    p = ctx.terms["post"]
    rows = []
    if article is not None:
        for side, label in (("legacy", p["article_legacy"]), ("candidate", p["article_candidate"])):
            rows.append([fill(p["article_statistic"], label=label,
                              repeats=printed(ctx, "post.latency_table", "article.repeats")),
                         *(printed(ctx, "post.latency_table", f"article.{side}.{f}") for _, _, f in LATENCY_CELLS)])
    for name in ctx.names:
        cells = [f"{name}.{run}.{field}" for run, field, _ in LATENCY_CELLS]
        if all(value(ctx, "post.latency_table", c) is None for c in cells):
            continue
        rows.append([fill(p["this_run"], name=code(name)), *(printed(ctx, "post.latency_table", c) for c in cells)])
    return rows


def vectors_table(ctx: ReportContext) -> str:
    """The article's vector figures beside this run's legacy server and primary candidate (the full report's
    table, report/sections/article.py, printed from the document)."""
    a, t, vectors, cand = ctx.article, ctx.terms, ctx.summary.vectors, ctx.candidate
    assert a is not None

    def cell(fact: str) -> str:
        return printed(ctx, "post.vectors_table", fact)

    def mine(name: str | None, field: str) -> str:
        info = vectors.of(name)
        return cell(f"{name}.{field}") if info is not None and is_measured(info) else ctx.label(False)

    comparison = vectors.comparison(cand)
    stats = ("min", "median", "max")
    rows = [[t[label], cell(f"article.legacy.{field}"), cell(f"article.candidate.{field}"),
             mine(ctx.legacy, field), mine(cand, field)] for label, field in (("dimension", "dimension"),
                                                                              ("first_l2", "first_l2"))]
    rows.append([fill(t["token_total"], n=f"{cell('article.documents')} / {cell('documents')}"),
                 cell("article.legacy.token_total"), cell("article.candidate.token_total"),
                 mine(ctx.legacy, "token_total"), mine(cand, "token_total")])
    rows.append([t["cosine_mmm"], MISSING, " · ".join(cell(f"article.cosine.{k}") for k in stats), MISSING,
                 " · ".join(cell(f"{cand}.cosine.{k}") for k in stats)
                 if comparison is not None and is_measured(comparison) else ctx.label(False)])
    header = [t["item"], t["article_legacy"], t["article_candidate"], fill(t["run_side"], name=code(ctx.legacy)),
              fill(t["run_side"], name=code(cand))]
    return md_table(header, rows)


def group_figures(ctx: ReportContext, members: list[str]) -> dict[str, str]:
    """A group's least cosine against the legacy server and its threshold, as its vectors statement states them."""
    return {f: printed(ctx, "post.vectors_group", f, members) for f in ("cosine", "threshold")}


def host(ctx: ReportContext, env: dict[str, Any]) -> dict[str, Any]:
    """The host's description with its CPU count and memory as the document states them."""
    return {**env, "memory_gib": printed(ctx, "post.host", "memory_gib"), "cpu_count": printed(ctx, "post.host",
                                                                                                "cpu_count")}


def servers(ctx: ReportContext, st: dict[str, Any]) -> dict[str, Any]:
    """The status of report/sections/status.py with each server's version and what it says of itself (the setup's
    server lines) as the document's ``post.setup_server`` quotes them."""
    engines = []
    for e in st["engines"]:
        version = value(ctx, "post.setup_server", "version", [e["name"]])
        stated = {**e["stated"], "version": esc(version) if version else None,
                  "statement": value(ctx, "post.setup_server", "statement", [e["name"]])}
        engines.append({**e, "stated": stated})
    return {**st, "engines": engines}


def start(ctx: ReportContext, name: str) -> str | None:
    """A server's start time as the document states it; None: not stored."""
    found = value(ctx, "post.start_times", f"{name}.start_seconds")
    return fmt(found, "s") if found is not None else None


def index_figures(ctx: ReportContext, name: str) -> dict[str, str | None]:
    """What the index sentence of ``name`` prints beside its choice, from its document statement."""
    line = next((s for s in ctx.decisions.post.document.statements("post.index_line") if name in s.subjects),
                None) if ctx.decisions.post.document is not None else None

    def one(fact: str) -> str | None:
        found = line.fact(fact) if line is not None else None
        return as_printed(fact, found.value) if found is not None else None

    return {"hnsw_recall": one("hnsw_recall"), "hours": one("hours_per_replica"), "replicas": one("replicas"),
            "window": one("window_hours"), "retained": one("retained")}


def index_options(ctx: ReportContext) -> list[dict[str, Any]]:
    """The full report's index options per candidate (report/sections/index_options.py), their rule's floor and
    margin and the chosen option's cost printed from the document's ``post.index_options_line``."""
    out = []
    words = ctx.terms["index_options"]
    for o, name in zip(option_tables(ctx), [n for n in ctx.summary.index.options
                                           if n in ctx.decisions.index_options
                                           and ctx.summary.index.options[n].measured]):
        decision = ctx.decisions.index_options[name]

        def cell(fact: str) -> str:
            return printed(ctx, "post.index_options_line", fact, [name])

        rule = fill(words["rules"][decision.basis or "recall_at_10"], floor=cell("recall_floor"),
                    margin=cell("ndcg_margin"))
        out.append({**o, "floor": cell("recall_floor"), "rule": rule, "cost": _cost(ctx, name, o["cost"], cell)})
    return out


def _cost(ctx: ReportContext, name: str, stated: str, cell: Callable[[str], str]) -> str:
    """The chosen option's cost sentence with the document's figures (as report/sections/index_options.py words
    it: ``stated`` where it prints no figure)."""
    chosen = ctx.decisions.index_options[name].code
    words = ctx.terms["index_options"]["costs"]
    if chosen == "re_embed" and value(ctx, "post.index_options_line", "hours_per_replica", [name]) is not None:
        return fill(words["re_embed"], hours=cell("hours_per_replica"), replicas=cell("replicas"),
                    window=cell("window_hours"), rate=cell("docs_per_s"), corpus=cell("corpus_size"))
    key = "map" if chosen in MAPS else chosen
    if chosen == "re_embed" or not stated or key not in words:
        return stated
    return fill(words[key], fit=cell("fit_s"), overhead=cell("overhead_ms"), mib=cell("storage_bytes"))


def versions(ctx: ReportContext) -> list[dict[str, Any]]:
    """The versions line: each component's article and run version as the document's ``post.versions`` states
    them (whether they are the same, and the server that reported it, are the decision's)."""
    names = ctx.terms["post"]["component"]
    out = []
    for v in ctx.decisions.post.versions:
        run = value(ctx, "post.versions", f"{v.component}_run")
        out.append({"component": names.get(v.component, v.component),
                    "article": value(ctx, "post.versions", f"{v.component}_article"),
                    "run": run or ctx.label(None), "same": v.same, "server": code(v.server) if v.server else ""})
    return out


def workload(ctx: ReportContext, stated: dict[str, Any]) -> dict[str, Any]:
    """The setup of report/sections/status.py with the workload sentence's and the procedure's counts as the
    document's ``post.setup_workload`` states them (documents per language, the latency settings, the repeats)."""
    key = "post.setup_workload"
    statement = _statement(ctx, key)
    languages = [f for f in statement.facts if f.key.startswith("languages.")] if statement is not None else []
    return {**stated, "languages": ", ".join(f"{f.key.removeprefix('languages.')} {as_printed(f.key, f.value)}"
                                            for f in languages) or MISSING,
            "repeats": printed(ctx, key, "repeats"),
            "latency": {**stated["latency"], **{k: printed(ctx, key, f"latency_{k}") for k in LATENCY_SETTINGS}}}


def answer(ctx: ReportContext, probe: str, name: str, side: ProbeSide | None) -> ProbeSide | None:
    """One server's answer to a probe with the numbers the contract table prints (status, dimension, tokens) as
    the document's ``post.contract_table`` states them (``name`` ``(legacy)``: the row's own legacy answer)."""
    if side is None:
        return None
    stated = {k: value(ctx, "post.contract_table", f"{probe}.{name}.{k}") for k in ANSWER_FIELDS}
    return side.model_copy(update=stated)


def shim_counts(ctx: ReportContext, name: str) -> tuple[str, str]:
    """(closed, of how many differences) as the document's ``post.shim_line`` of ``name`` states them."""
    return printed(ctx, "post.shim_line", "closed", [name]), printed(ctx, "post.shim_line", "differ", [name])


def memory(ctx: ReportContext, name: str) -> str | None:
    """A server's resident memory in MiB as the document's ``post.start_times`` states it; None: not stored."""
    found = value(ctx, "post.start_times", f"{name}.rss_bytes")
    return as_printed(f"{name}.rss_bytes", found) if found else None


def todo_limit(ctx: ReportContext) -> str | None:
    """The truncation limit the to-do item names, as the document's ``post.todo`` states it; None: none stated."""
    found = value(ctx, "post.todo", "limit_tokens")
    return as_printed("limit_tokens", found) if found is not None else None


def long_input(ctx: ReportContext, stated: dict[str, Any]) -> dict[str, Any]:
    """The long-input section of report/sections/long_input.py with the figures the conclusion's sentence prints
    (the document's tokens, each server's status, limit and closest cosine) as the document's ``post.long_inputs``
    states them."""
    section = ctx.summary.long_input
    if stated.get("state") is not True:
        return stated

    def found(name: str) -> LongInputFinding:
        return section.by_target[name].model_copy(update={
            field: value(ctx, "post.long_inputs", f"{name}.{key}")
            for field, key in (("status", "status"), ("limit", "limit"), ("cosine", "closest"))})

    legacy = ctx.summary.roles.legacy
    differing = [n for n, f in section.by_target.items() if f.same_as_legacy is False]
    return {**stated, "tokens": printed(ctx, "post.long_inputs", "document_tokens"),
            "legacy": None if legacy not in section.by_target else
            {"name": section.by_target[legacy].target, "handling": handling(ctx, found(legacy))},
            "differing": [{**d, "handling": handling(ctx, found(n)),
                           "status": printed(ctx, "post.long_inputs", f"{n}.status")}
                          for d, n in zip(stated["differing"], differing)]}


def faults(ctx: ReportContext, heads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conclusion's fault lines (report/sections/faults.py's conclusion_headlines) with every figure they print
    (unusable of answers, the share, each kind's count, the margin, each event's count, sends and statuses) as the
    document's ``post.faults`` of that server states it."""
    by_code = {code(n): n for n in ctx.names}
    words, sep = ctx.terms.get("fault_kinds", {}), ctx.terms["post"]["list_sep"]
    out = []
    for h in heads:
        name = by_code[h["name"]]
        entry = ctx.summary.faults.of(name)
        assert entry is not None

        def p(fact: str) -> str:
            return printed(ctx, "post.faults", fact, [name])

        def stated(i: int, e: FaultEvent) -> FaultEvent:
            said = {k: value(ctx, "post.faults", f"events.{i}.{k}", [name]) for k in ("count", "sends")}
            lists = {k: [value(ctx, "post.faults", f"events.{i}.{k}.{j}", [name]) for j in range(len(getattr(e, k)))]
                     for k in ("retried", "others")}
            return e.model_copy(update={**said, **lists})

        out.append({**h, "share": f"{p('share')}%", "unusable": p("unusable"), "answers": p("answers"),
                    "kinds": sep.join(f"{words.get(k, k)} {p(f'by_kind.{k}')}" for k in entry.by_kind),
                    "margin": f"{p('fault_margin')}%" if h.get("margin") is not None else None,
                    "events": [event_words(ctx, stated(i, e)) for i, e in enumerate(entry.events)
                               if not e.every_send]})
    return out
