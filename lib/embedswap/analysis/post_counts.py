"""The whole numbers the post prints outside its claims, as facts of its document (issue 63), beside the decimals
of :mod:`embedswap.analysis.post_figures`: the workload's counts, the contract table's statuses, dimensions and
token counts, the shim's and the parity gate's counts, the p99 note's request counts, the engines' memory and the
truncation limit of the client's to-do list. Each is a :class:`Fact` with its path in summary.json, so the renderer
prints it from the document and :func:`embedswap.report.post_checks.source_problems` holds it to what is stored.

A count that summary.json stores as a list or per process is cited through the resolver that reads it
(``len:``, ``sum:``, ``count:`` of :func:`embedswap.report.post_checks.resolve`), never recounted beside it."""

from __future__ import annotations


from embedswap.analysis.article import load_article
from embedswap.analysis.common import is_measured, roles
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions
from embedswap.summary.types_fact import Fact
from embedswap.summary.types_post_document import Statement

# the latency settings the workload sentence prints (summary.latency.config, as the user wrote them)
LATENCY_SETTINGS = ("sequential_requests", "concurrent_requests", "concurrency", "repeats")
# the fields of one server's answer the contract table prints as numbers
ANSWER_FIELDS = ("status", "dim", "prompt_tokens")
# the row's own legacy answer (a route the legacy server lacks), apart from a server named "legacy"
LEGACY_ANSWER = "(legacy)"


def workload_facts(summary: SummaryBody) -> list[Fact]:
    """The workload sentence's and the procedure's counts beyond documents, batch size and queries: documents per
    language, the latency settings (prefixed ``latency_``) and the repeats the procedure names."""
    work = summary.workload
    config = summary.latency.config or {}
    facts = [Fact(key=f"languages.{k}", value=v, source=f"workload.languages.{k}") for k, v in work.languages.items()]
    facts += [Fact(key=f"latency_{k}", value=config.get(k), source=f"latency.config.{k}") for k in LATENCY_SETTINGS]
    facts.append(Fact(key="repeats", value=work.repeats, source="workload.repeats"))
    return facts


def contract_table(summary: SummaryBody, decisions: Decisions) -> Statement | None:
    """Every number of the contract table's answers: per probe it shows (one a candidate answered differently, or
    one the article lists) and server ``<probe>.<server>.<field>`` (the legacy server's own answer to a route it
    lacks as ``<probe>.(legacy).<field>``)."""
    rows = summary.contract if isinstance(summary.contract, list) else []
    shown = {a.probe for c in decisions.post.conclusions for a in c.answers if a.outcome in ("differs", "legacy_failed")}
    shown |= set(_article_probes())
    facts = []
    for i, row in enumerate(rows):
        if row.probe not in shown:
            continue
        sides = [(name, side, f"contract.{i}.by_target.{name}") for name, side in row.by_target.items()]
        if row.legacy is not None:
            sides.append((LEGACY_ANSWER, row.legacy, f"contract.{i}.legacy"))
        for name, side, path in sides:
            facts += [Fact(key=f"{row.probe}.{name}.{k}", value=getattr(side, k), source=f"{path}.{k}")
                      for k in ANSWER_FIELDS if getattr(side, k) is not None]
    return Statement(key="post.contract_table", facts=facts) if facts else None


def _article_probes() -> list[str]:
    """The probes the article's contract table lists (embedswap/data/article_000.json)."""
    return [entry.probe for entry in load_article().contract]


def shim_lines(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """Per candidate probed through the shim with a difference before or after it: how many differences it
    closed of how many (``decisions.shim``)."""
    _, candidates = roles(summary)
    out = []
    for name in candidates:
        s = decisions.shim.get(name)
        if s is None or not (s.differ_before or s.opened):
            continue
        base = f"decisions.shim.{name}"
        out.append(Statement(key="post.shim_line", subjects=[name], facts=[
            Fact(key="closed", value=len(s.closed), source=f"len:{base}.closed"),
            Fact(key="differ", value=s.differ_before, source=f"{base}.differ_before")]))
    return out


def parity_line(summary: SummaryBody) -> Statement | None:
    """The parity gate's rows and how many of them failed."""
    parity = summary.parity
    if not is_measured(parity) or not parity.rows:
        return None
    return Statement(key="post.parity_line", facts=[
        Fact(key="rows", value=len(parity.rows), source="len:parity.rows"),
        Fact(key="failed", value=sum(not r.passed for r in parity.rows), source="count:parity.rows:pass=false")])


def p99_notes(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """Per candidate whose p99 ratio had too few answered requests for an interval: the fewest requests of its
    points that were not estimable and the count a 95 % interval needs (none: the note without figures)."""
    _, candidates = roles(summary)
    out = []
    for name in candidates:
        ratio = decisions.latency.ratios.get(name)
        if ratio is None or not any(p.p99.direction == "too_few" for p in ratio.intervals.values()):
            continue
        found = [(run, p.p99) for run, p in decisions.latency.points.get(name, {}).items() if not p.p99.estimable]
        least = min(found, key=lambda x: x[1].n, default=None)
        base = f"decisions.latency.points.{name}.{least[0]}.p99" if least is not None else ""
        facts = [Fact(key=k, value=getattr(least[1], k), source=f"{base}.{k}") for k in ("n", "n_min")] \
            if least is not None else []
        out.append(Statement(key="post.p99_note", subjects=[name], facts=facts))
    return out


def memory_facts(summary: SummaryBody) -> list[Fact]:
    """Each server's resident memory in bytes (its processes' sum where it stores them per process), which the
    engine cost sentence prints in MiB."""
    out = []
    for name, t in summary.targets.items():
        if t.rss_bytes_by_process:
            out.append(Fact(key=f"{name}.rss_bytes", value=sum(t.rss_bytes_by_process.values()),
                            source=f"sum:targets.{name}.rss_bytes_by_process"))
        elif t.rss_bytes:
            out.append(Fact(key=f"{name}.rss_bytes", value=t.rss_bytes, source=f"targets.{name}.rss_bytes"))
    return out


def todo_facts(decisions: Decisions) -> Statement | None:
    """The truncation limit the client's to-do item names (the legacy server's own), where a change states one."""
    facts = [Fact(key="limit_tokens", value=c.params["limit_tokens"],
                  source=f"decisions.client_changes.{i}.params.limit_tokens")
             for i, c in enumerate(decisions.client_changes) if c.rule == "truncate" and c.params.get("limit_tokens")]
    return Statement(key="post.todo", facts=facts) if facts else None


def long_inputs(summary: SummaryBody) -> Statement | None:
    """The long-input sentence's figures: the long document's tokens and, per server, the status, the limit and
    the closest cosine its handling names (``<server>.<field>``; the cosine as ``<server>.closest``)."""
    section = summary.long_input
    if section.absent or not section.measured:
        return None
    facts = [Fact(key="document_tokens", value=section.document_tokens, source="long_input.document_tokens")]
    for name, f in section.by_target.items():
        base = f"long_input.by_target.{name}"
        facts += [Fact(key=f"{name}.status", value=f.status, source=f"{base}.status"),
                  Fact(key=f"{name}.limit", value=f.limit, source=f"{base}.limit"),
                  Fact(key=f"{name}.closest", value=f.cosine, source=f"{base}.cosine")]
    return Statement(key="post.long_inputs", facts=facts)


def fault_lines(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """Per server with unusable answers or transport events, the figures its conclusion line prints: unusable of
    answers, their share, each kind's count, the transport margin, and each event's count, sends and the statuses
    its sends got (``events.<i>.retried.<j>``, ``events.<i>.others.<j>``)."""
    faults = summary.faults
    if faults.absent:
        return []
    out = []
    for name, entry in faults.by_target.items():
        if not (entry.unusable or entry.events):
            continue
        base = f"faults.by_target.{name}"
        facts = [Fact(key=k, value=getattr(entry, k), source=f"{base}.{k}") for k in ("unusable", "answers", "share")]
        facts += [Fact(key=f"by_kind.{k}", value=n, source=f"{base}.by_kind.{k}") for k, n in entry.by_kind.items()]
        if decisions.faults is not None:
            facts.append(Fact(key="fault_margin", value=decisions.faults.margin, source="decisions.faults.margin"))
        for i, e in enumerate(entry.events):
            at = f"{base}.events.{i}"
            facts += [Fact(key=f"events.{i}.{k}", value=getattr(e, k), source=f"{at}.{k}") for k in ("count", "sends")]
            facts += [Fact(key=f"events.{i}.{k}.{j}", value=v, source=f"{at}.{k}.{j}")
                      for k in ("retried", "others") for j, v in enumerate(getattr(e, k))]
        out.append(Statement(key="post.faults", subjects=[name], facts=facts))
    return out
