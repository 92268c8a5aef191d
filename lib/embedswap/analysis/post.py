"""The post's conclusions (``decisions.post``): the decision per candidate, candidates that the same vectors grouped,
what separates the members of a group, what the run cannot say, and the versions against the article's.

A difference the legacy server itself causes (it failed, the candidate answered) is not charged to the candidate:
the swap removes it. Candidates are grouped when their document vectors are the same (equal sha256, or equal
per-document cosines to the legacy server when the summary holds no sha256): they then share the post's rows and
sentences, and what still tells them apart is a separator (a 4xx where the other answers 5xx, another probe
answered differently, throughput)."""

from __future__ import annotations

import re
from typing import Any

from embedswap.analysis.article import load_article
from embedswap.analysis.common import api_shape, is_measured, roles, shim_rows
from embedswap.analysis.post_story import article_comparisons, shim_trades
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import LatencyDecisions, PointIntervals, RankingDecision
from embedswap.summary.types_faults import FaultDecisions
from embedswap.summary.types_post import (CandidateConclusion, CandidateGroup, PostDecision, ProbeAnswer, Separator,
                                          VectorsCode, VersionRow)
from embedswap.summary.types_vectors import ProbeRow

DEFAULT_THRESHOLD = 0.999


def _status(row: ProbeRow, name: str) -> int | None:
    side = row.by_target.get(name)
    if side is None and name == "legacy":
        side = row.legacy
    return side.status if side is not None and side.measured else None


def _failed(status: int | None) -> bool:
    return isinstance(status, int) and (status == 0 or status >= 500)


def _error_kind(status: int | None) -> str:
    if not isinstance(status, int):
        return "none"
    if status == 0 or status >= 500:
        return "server"
    return "client" if status >= 400 else "ok"


def _answers(summary: SummaryBody, legacy: str, name: str) -> list[ProbeAnswer]:
    rows = summary.contract if isinstance(summary.contract, list) else []
    shim = {r.probe: r for r in shim_rows(summary)}
    out = []
    for row in rows:
        verdict = row.verdicts.get(name)
        v = verdict.verdict if verdict is not None else None
        status, base = _status(row, name), _status(row, legacy)
        if v is None:
            outcome = "not_measured"
        elif v in ("same", "not-applicable", "another-model"):
            outcome = "same"
        elif _failed(base) and not _failed(status):
            outcome = "legacy_failed"
        else:
            outcome = "differs"
        through = shim.get(row.probe)
        after = through.verdicts.get(name) if through is not None else None
        out.append(ProbeAnswer(probe=row.probe, status=status, verdict=v, outcome=outcome,
                               shim_verdict=after.verdict if after is not None else None))
    return out


def _conclusion(summary: SummaryBody, legacy: str, name: str, ranking: RankingDecision | None
                ) -> CandidateConclusion:
    answers = _answers(summary, legacy, name)
    lists: dict[str, list[str]] = {k: [] for k in ("silent", "refused", "accepted", "retry", "shape",
                                                   "legacy_failed", "shim_left")}
    for a in answers:
        if a.outcome == "legacy_failed":
            lists["legacy_failed"].append(a.probe)
        if a.outcome != "differs":
            continue
        v, kind = a.verdict, _error_kind(a.status)
        if v == "nondeterministic":  # neither refused nor accepted: the server's faults headline names it
            continue
        key = ("silent" if v == "silent-divergence" else "shape" if v in ("format-difference", "metadata-difference")
               else "retry" if kind == "server" else "refused" if kind == "client" else "accepted")
        lists[key].append(a.probe)
        if a.shim_verdict not in (None, "same"):
            lists["shim_left"].append(a.probe)
    comparison = summary.vectors.comparison(name)
    cosine = comparison.cosine.min if is_measured(comparison) and comparison.cosine is not None else None
    threshold = summary.parity.threshold("text") or DEFAULT_THRESHOLD
    compared = sum(a.outcome in ("same", "differs") for a in answers)
    differ = sum(a.outcome == "differs" for a in answers)
    decided = ranking.of(name) if ranking is not None else None
    reindex = decided is not None and decided.decision == "reindex"
    vectors = vectors_verdict(summary, legacy, name, cosine, threshold)
    theirs, shape = api_shape(summary, legacy), api_shape(summary, name)
    shape = shape if shape is not None and theirs is not None and shape != theirs else None
    if not compared and cosine is None and vectors != "another_model":
        code = "not_measured"
    elif vectors == "another_model":
        code = "another_model"
    elif vectors == "differ" or reindex:
        code = "not_swappable"
    elif differ == 0 and shape is None:  # another API shape is a client change however alike the answers
        code = "drop_in"
    else:
        code = "client_changes"
    return CandidateConclusion(name=name, code=code, compared=compared, differ=differ, **lists, cosine_min=cosine,
                               threshold=threshold, vectors=vectors, answers=answers, api_shape=shape)


def _gate(summary: SummaryBody, name: str) -> bool | None:
    """The parity gate's verdict on one server (step 05, against the fp32 reference); None where it has none."""
    row = next((r for r in summary.parity.rows if getattr(r, "backend", None) == name), None)
    passed = getattr(row, "passed", None) if row is not None else None
    return passed if isinstance(passed, bool) else None


def vectors_verdict(summary: SummaryBody, legacy: str, name: str, cosine: float | None,
                    threshold: float) -> VectorsCode:
    """Whether the candidate's document vectors differ from the legacy server's: the one verdict the conclusion,
    the post's vectors sentence and its heading read. Byte-identical vectors (equal sha256) are the same. Where
    step 05 gated both servers against the fp32 reference (the article's 0.999 is meant so), both passing is the
    same and only the candidate failing differs; otherwise (a gate both fail, or no gate) the lowest per-document
    cosine to the legacy server against the threshold decides: a departure both share is not a difference."""
    if summary.plan.another_model(name):  # not the same model: its vectors are not compared with the legacy server's
        return "another_model"
    mine, theirs = _vectors_key(summary, name), _vectors_key(summary, legacy)
    if mine is not None and mine[0] == "sha256" and mine == theirs:
        return "same"
    gate, legacy_gate = _gate(summary, name), _gate(summary, legacy)
    if gate is True and legacy_gate is True:
        return "same"
    if gate is False and legacy_gate is True:
        return "differ"
    if cosine is None:
        return "not_measured" if gate is None else ("differ" if gate is False and legacy_gate is None else "same")
    return "same" if cosine >= threshold else "differ"


def _vectors_key(summary: SummaryBody, name: str) -> tuple[str, Any] | None:
    target = summary.vectors.by_target.get(name)
    sha = getattr(target, "sha256", None) if target is not None else None
    if sha:
        return "sha256", sha
    comparison = summary.vectors.comparison(name)
    if not is_measured(comparison) or not comparison.per_document:
        return None
    return "cosine", tuple((d.doc_id, None if d.cosine is None else round(float(d.cosine), 6)) for d in comparison.per_document)


def _software(summary: SummaryBody, name: str) -> str:
    """What a server says of its software: its version routes' and naming headers' parts (``server: vllm``), not
    the model names it serves or echoes (a model may be called anything)."""
    target = summary.target(name)
    said = target.said if target is not None else {}
    return " ".join(value for part, value in said.items() if part.startswith(("/", "header ")))


def _engine(summary: SummaryBody, name: str) -> tuple[str, str]:
    """A server's kind and the text that names its engine: its name, its version and what it says of its
    software."""
    target = summary.target(name)
    kind = (target.config.kind or target.kind or "") if target is not None else ""
    version = (target.version or "") if target is not None else ""
    return kind, f"{name} {version} {_software(summary, name)}".lower()


def _is_dynamo(summary: SummaryBody, name: str) -> bool:
    kind, text = _engine(summary, name)
    return kind == "dynamo" or "dynamo" in text


def _separators(summary: SummaryBody, legacy: str, members: list[str],
                points: dict[str, dict[str, PointIntervals]]) -> list[Separator]:
    out: list[Separator] = []
    first = members[0]
    for other in members[1:]:
        a = {x.probe: x for x in _answers(summary, legacy, first)}
        b = {x.probe: x for x in _answers(summary, legacy, other)}
        probes = [p for p in a if p in b and {_error_kind(a[p].status), _error_kind(b[p].status)}
                  == {"client", "server"}]
        if probes:
            client = first if _error_kind(a[probes[0]].status) == "client" else other
            server = other if client == first else first
            origin = server if _is_dynamo(summary, server) and _engine(summary, client)[0] == "vllm" else None
            out.append(Separator(kind="error_class", probes=probes, client_error=client, server_error=server,
                                 origin=origin))
        others = [p for p in a if p in b and p not in probes and a[p].verdict != b[p].verdict]
        if others:
            out.append(Separator(kind="answers", probes=others, client_error=first, server_error=other))
    rates: dict[str, float | None] = {}
    for name in members:
        entry = points.get(name, {}).get("concurrent")
        interval = entry.docs_per_s if entry is not None else None
        if interval is None:
            point = summary.latency.of(name)
            conc = point.concurrent if point is not None and is_measured(point) else None
            rates[name] = conc.docs_per_s if conc is not None else None
        else:
            rates[name] = interval.value
    if any(v is not None for v in rates.values()):
        # the figures only: which one is faster is the pair verdict's to say (decisions.latency.pairs, the same
        # margins and host drift as against the legacy server), never two intervals that do not overlap
        out.append(Separator(kind="throughput", rates=rates))
    return out


def _groups(summary: SummaryBody, legacy: str, candidates: list[str],
            points: dict[str, dict[str, PointIntervals]]) -> list[CandidateGroup]:
    keyed: dict[Any, list[str]] = {}
    basis: dict[Any, str] = {}
    for name in candidates:
        vectors = _vectors_key(summary, name)
        key: Any = vectors if vectors is not None else name
        keyed.setdefault(key, []).append(name)
        basis[key] = vectors[0] if vectors is not None else "alone"
    out = []
    for key, members in keyed.items():
        if len(members) == 1:
            out.append(CandidateGroup(members=members, basis="alone"))
            continue
        unknown = []
        if any(_is_dynamo(summary, m) for m in members):
            unknown.append("several_workers")
        out.append(CandidateGroup(members=members, basis=basis[key],
                                  separators=_separators(summary, legacy, members, points), unknown=unknown))
    return out


def _article_versions() -> dict[str, str]:
    env = load_article().environment
    return {"dynamo": env.dynamo, "vllm": env.vllm}


_BARE_VERSION = re.compile(r"\s*v?([0-9][\w.+-]*)\s*")


def _versions(summary: SummaryBody, names: list[str]) -> list[VersionRow]:
    article = _article_versions()
    patterns = {"dynamo": re.compile(r"(?:ai-)?dynamo[ =]+v?([0-9][\w.]*)", re.IGNORECASE),
                "vllm": re.compile(r"\bvllm[ =]+v?([0-9][\w.]*)", re.IGNORECASE)}
    out = []
    for component, pattern in patterns.items():
        found, server, present = None, None, False
        for name in names:
            target = summary.target(name)
            version = (target.version or "") if target is not None else ""
            kind, text = _engine(summary, name)
            dynamo = _is_dynamo(summary, name)
            is_it = dynamo if component == "dynamo" else kind == "vllm" or "vllm" in text
            present = present or is_it
            match = pattern.search(version)
            if match is None and is_it and target is not None and target.version_source == "server":
                # the server's own bare version (vLLM's /version: {"version": "0.32.0"}) is that of the engine
                # that answers: the Dynamo frontend where it is one, else vLLM itself
                match = _BARE_VERSION.fullmatch(version) if dynamo == (component == "dynamo") else None
            if match and found is None:
                found, server = match.group(1), name
            elif is_it and server is None:
                server = name
        if not present:
            continue
        out.append(VersionRow(component=component, article=article[component], run=found, server=server,
                              same=None if found is None else found == article[component]))
    return out


def _not_measured(summary: SummaryBody, candidates: list[str]) -> list[str]:
    out = []
    kinds = {_engine(summary, n)[0] for n in candidates}
    if any(_is_dynamo(summary, n) for n in candidates):
        if "vllm" not in kinds:
            out.append("vllm_alone")
        out.append("several_workers")
    if not is_measured(summary.ranking):
        out.append("ranking")
    if not is_measured(summary.ablation):
        out.append("lock_ablation")
    if not is_measured(summary.parity):
        out.append("parity")
    if summary.environment is None or not summary.environment.gpu:
        out.append("gpu")
    out.append("reranker_speech")
    return out


def post_decision(summary: SummaryBody, latency: LatencyDecisions, ranking: RankingDecision | None,
                  faults: FaultDecisions | None) -> PostDecision:
    """``decisions.post``; ``latency``, ``ranking`` and ``faults`` are those decisions as
    :func:`embedswap.analysis.decide` computes them (the intervals separate members; a re-index decides; None: no
    ranking decision stored, or no faults section)."""
    legacy, candidates = roles(summary)
    return PostDecision(conclusions=[_conclusion(summary, legacy, n, ranking) for n in candidates],
                        groups=_groups(summary, legacy, candidates, latency.points),
                        versions=_versions(summary, [legacy, *candidates]),
                        not_measured=_not_measured(summary, candidates),
                        article=article_comparisons(summary, latency, article_engines(summary, legacy, candidates),
                                                    set(faults.corrupting()) if faults is not None else set()),
                        shim_trades=shim_trades(summary, ranking))


def article_engines(summary: SummaryBody, legacy: str, candidates: list[str]) -> list[str]:
    """The candidates that run the article's engine (a Dynamo graph over vLLM, or vLLM alone) in place of a legacy
    server that does not: only their latency is set against the article's figures (the article swapped a
    home-made server for that engine; an A/A run, or vLLM against vLLM, is not its subject)."""
    def article_engine(name: str) -> bool:
        kind, text = _engine(summary, name)
        return _is_dynamo(summary, name) or kind == "vllm" or "vllm" in text

    return [] if article_engine(legacy) else [n for n in candidates if article_engine(n)]
