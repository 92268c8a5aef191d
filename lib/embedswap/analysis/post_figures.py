"""The figures the post prints outside its claims, as statements of its document (issue 63): the latency table's
cells, the vectors table, each group's least cosine and its threshold, the host's memory, each server's version
and what it says of itself (quoted), the index's recall, cost and retained share, the index options' rule and
cost, and the servers' start times. Each is a :class:`Fact` with its path in summary.json (or the article's data),
so the renderer prints it from the document and :func:`embedswap.report.post_checks.source_problems` holds it to
what is stored there.

:data:`FACT_KINDS` and :data:`CELL_KINDS` name how each fact is printed (a kind of ``report.format.fmt``): the
renderer and the check of the printed text read the same tables."""

from __future__ import annotations

from embedswap.analysis.article import article_value
from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.post_counts import memory_facts
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions
from embedswap.summary.types_fact import Fact
from embedswap.summary.types_post_document import Statement

# the latency table's columns: (run, field of decisions.shown, the article's field), and each field's print kind
LATENCY_CELLS = (("sequential", "p50_ms", "seq_p50_ms"), ("sequential", "p99_ms", "seq_p99_ms"),
                 ("concurrent", "p50_ms", "conc_p50_ms"), ("concurrent", "p99_ms", "conc_p99_ms"),
                 ("concurrent", "docs_per_s", "conc_docs_per_s"))
# how a fact is printed (report/format.py's kinds): a sentence's fact by its key, a table's cell (a dotted key)
# by its last part; "bytes_mib" and "signed2" are the index options' own (MiB of bytes, a signed 2-decimal ms)
FACT_KINDS = {"seq_from": "ms", "seq_to": "ms", "rate_from": "rate", "rate_to": "rate", "ndcg_legacy": "score",
              "ndcg_candidate": "score", "ndcg_shim": "score", "cosine_min": "cos4", "threshold": "raw",
              "cosine": "cos4", "memory_gib": "gib", "hnsw_recall": "cos4", "hours_per_replica": "s",
              "replicas": "int", "window_hours": "s", "retained": "cos4", "recall_floor": "score",
              "ndcg_margin": "score", "docs_per_s": "s", "corpus_size": "int", "fit_s": "score",
              "overhead_ms": "signed2", "storage_bytes": "bytes_mib",
              "seq_p50": "raw", "conc_docs_per_s": "raw",  # the article's published ratios, as published
              "cpu_count": "int", "share": "pct1", "fault_margin": "pct1", "gain_margin": "ratio2"}
CELL_KINDS = {"p50_ms": "ms", "p99_ms": "ms", "docs_per_s": "rate", "seq_p50_ms": "ms", "seq_p99_ms": "ms",
              "conc_p50_ms": "ms", "conc_p99_ms": "ms", "conc_docs_per_s": "rate", "dimension": "int",
              "token_total": "int", "first_l2": "norm", "min": "cos4", "median": "cos4", "max": "cos4",
              "start_seconds": "s", "rss_bytes": "bytes_mib0", "closest": "cos", "limit": "int", "gain": "ratio2", "gain_low": "ratio2",
              "gain_high": "ratio2"}
# statements that cite figures where the renderer places them (a table's cells, a group's cosine): two alike are
# not twin sentences (post_checks.twin_problems)
FIGURE_KEYS = ("post.latency_table", "post.vectors_table", "post.vectors_group", "post.host", "post.start_times",
               "post.index_options_line", "post.setup_server", "post.contract_table", "post.shim_line",
               "post.parity_line", "post.p99_note", "post.todo", "post.long_inputs", "post.faults")


def fact_kind(key: str) -> str:
    """How the fact ``key`` is printed (``raw`` where the tables name none)."""
    return CELL_KINDS.get(key.rsplit(".", 1)[-1], "raw") if "." in key else FACT_KINDS.get(key, "raw")


def latency_table(summary: SummaryBody, decisions: Decisions) -> Statement:
    """Every cell of the latency table: the article's two rows (``article.<side>.<field>``) and each server's shown
    point (``<name>.<run>.<field>``; None where the point is not stored)."""
    facts = _article_facts([*((f"article.{side}.{field}", f"latency.{side}.{field}")
                              for side in ("legacy", "candidate") for _, _, field in LATENCY_CELLS),
                            ("article.repeats", "workload.repeats")])  # the article rows' "3-repeat median"
    # the concurrency the header's columns name: the first measured concurrent point's, else the setting
    found = next(((n, info.concurrent) for n, info in summary.latency.by_target.items()
                  if is_measured(info) and info.concurrent is not None), None)
    facts.append(Fact(key="concurrency", value=found[1].concurrency,
                      source=f"latency.by_target.{found[0]}.concurrent.concurrency") if found is not None
                 else Fact(key="concurrency", value=summary.latency.config.get("concurrency"),
                           source="latency.config.concurrency"))
    for name in decisions.shown.by_target:
        for run, field, _ in LATENCY_CELLS:
            point = decisions.shown.at(name, run)
            facts.append(Fact(key=f"{name}.{run}.{field}", value=getattr(point, field) if point is not None else None,
                              source=f"decisions.shown.by_target.{name}.{run}.{field}"))
    return Statement(key="post.latency_table", facts=facts)


def _article_facts(wanted: list[tuple[str, str]]) -> list[Fact]:
    """Figures of the article's data (embedswap/data/article_000.json), each ``(key, path)``, from the typed load
    (read once per process)."""
    out = []
    for key, path in wanted:
        data = article_value(path)
        out.append(Fact(key=key, value=data if isinstance(data, (int, float, str)) else None, source=f"article:{path}"))
    return out


def vectors_table(summary: SummaryBody) -> Statement | None:
    """The vectors table's figures: the article's (``article.<side>.<field>``, ``article.cosine.<stat>``) and this
    run's legacy server and primary candidate (``<name>.<field>``, ``<name>.cosine.<stat>``)."""
    vectors = summary.vectors
    if not is_measured(vectors):
        return None
    facts = _article_facts([*((f"article.{side}.{field}", f"vectors.{side}.{field}")
                              for side in ("legacy", "candidate") for field in ("dimension", "first_l2", "token_total")),
                            *((f"article.cosine.{k}", f"vectors.cosine.{k}") for k in ("min", "median", "max")),
                            ("article.documents", "workload.documents")])
    facts.append(Fact(key="documents", value=summary.workload.documents, source="workload.documents"))
    legacy, _ = roles(summary)
    for name in (legacy, summary.roles.candidate):
        info = vectors.of(name)
        if info is None or not is_measured(info):
            continue
        base = f"vectors.by_target.{name}"
        facts += [Fact(key=f"{name}.dimension", value=info.dimension, source=f"{base}.dimension"),
                  Fact(key=f"{name}.first_l2", value=info.norm.first if info.norm is not None else None,
                       source=f"{base}.norm.first"),
                  Fact(key=f"{name}.token_total", value=info.token_total, source=f"{base}.token_total")]
    comparison = vectors.comparison(summary.roles.candidate)
    if comparison is not None and is_measured(comparison) and comparison.cosine is not None:
        facts += [Fact(key=f"{summary.roles.candidate}.cosine.{k}", value=getattr(comparison.cosine, k),
                       source=f"vectors.comparisons.{summary.roles.candidate}.cosine.{k}")
                  for k in ("min", "median", "max")]
    return Statement(key="post.vectors_table", facts=facts)


def vectors_groups(decisions: Decisions) -> list[Statement]:
    """Per group of candidates with the same vectors: its members' least cosine against the legacy server and the
    threshold (its first member's)."""
    post = decisions.post
    where = {c.name: i for i, c in enumerate(post.conclusions)}
    out = []
    for g in post.groups:
        at = [(where[m], post.conclusions[where[m]]) for m in g.members if m in where]
        measured = [(i, c) for i, c in at if c.cosine_min is not None]
        least = min(measured, key=lambda x: x[1].cosine_min or 0.0, default=None)
        first = at[0] if at and g.members and g.members[0] in where else None
        facts = []
        if least is not None:
            facts.append(Fact(key="cosine", value=least[1].cosine_min,
                              source=f"decisions.post.conclusions.{least[0]}.cosine_min"))
        if first is not None and first[1].threshold is not None:
            facts.append(Fact(key="threshold", value=first[1].threshold,
                              source=f"decisions.post.conclusions.{first[0]}.threshold"))
        out.append(Statement(key="post.vectors_group", subjects=list(g.members), facts=facts))
    return out


def host(summary: SummaryBody) -> Statement:
    """The host the figures were measured on, as the status line prints it."""
    env = summary.environment
    return Statement(key="post.host", facts=[Fact(key="memory_gib", value=env.memory_gib if env else None,
                                                  source="environment.memory_gib"),
                                             Fact(key="cpu_count", value=env.cpu_count if env else None,
                                                  source="environment.cpu_count")])


def servers(summary: SummaryBody) -> list[Statement]:
    """Each server's line of the setup: its version and what it says of itself, quoted as stored."""
    return [Statement(key="post.setup_server", subjects=[name], facts=[
        Fact(key="version", value=t.version, source=f"targets.{name}.version"),
        Fact(key="statement", value=t.statement, source=f"targets.{name}.statement")])
        for name, t in summary.targets.items()]


def start_times(summary: SummaryBody) -> Statement:
    """Each server's start time and resident memory (the engine cost sentence prints the candidates')."""
    return Statement(key="post.start_times", facts=[
        *(Fact(key=f"{name}.start_seconds", value=t.start_seconds, source=f"targets.{name}.start_seconds")
          for name, t in summary.targets.items()), *memory_facts(summary)])


def index_facts(decisions: Decisions, name: str) -> list[Fact]:
    """What the index sentence of ``name`` prints beside its choice: HNSW recall, the re-embed's cost and the
    adapter's retained share, where stored."""
    d = decisions.index.get(name)
    if d is None:
        return []
    base = f"decisions.index.{name}"
    facts = [Fact(key="hnsw_recall", value=d.hnsw_recall, source=f"{base}.hnsw_recall")] \
        if d.hnsw_recall is not None else []
    if d.cost is not None:
        facts += [Fact(key=k, value=getattr(d.cost, k), source=f"{base}.cost.{k}")
                  for k in ("hours_per_replica", "replicas", "window_hours")]
    if d.adapter is not None and d.adapter.retained:
        facts.append(Fact(key="retained", value=d.adapter.retained, source=f"{base}.adapter.retained"))
    return facts


def index_options(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """Per candidate whose index options were measured: the rule's recall floor and nDCG margin, and the chosen
    option's cost (the re-embed's from ``decisions.index``, a map's or re-score's as the options measured it)."""
    out = []
    for name, options in summary.index.options.items():
        d = decisions.index_options.get(name)
        if d is None or not options.measured:
            continue
        base = f"decisions.index_options.{name}"
        facts = [Fact(key=k, value=getattr(d, k), source=f"{base}.{k}") for k in ("recall_floor", "ndcg_margin")]
        cost = decisions.index[name].cost if d.code == "re_embed" and name in decisions.index else None
        if cost is not None:
            facts += [Fact(key=k, value=getattr(cost, k), source=f"decisions.index.{name}.cost.{k}")
                      for k in ("hours_per_replica", "replicas", "window_hours", "docs_per_s", "corpus_size")]
        at = next((i for i, o in enumerate(options.options) if o.option == d.code), None)
        if d.code != "re_embed" and at is not None:
            option = options.options[at]
            facts += [Fact(key=k, value=getattr(option, k), source=f"index.options.{name}.options.{at}.{k}")
                      for k in ("fit_s", "overhead_ms", "storage_bytes")]
        out.append(Statement(key="post.index_options_line", subjects=[name], facts=facts))
    return out
