"""The post's contract paragraphs as statements of the post document (issue 63): per group of candidates with the
same vectors, what they did otherwise than the legacy server (``post.contract_group``: the counts, the quiet
differences, the refusals, the shape-only ones, those the legacy server itself failed), what tells the members
apart (``post.separator_error_class``: the 4xx/5xx paragraph with each server's own error; ``post.separator_answers``),
each fact with its path in summary.json (``decisions.post.conclusions.<i>``, ``decisions.post.groups.<j>``,
``contract.<r>``). A group's lists are what every member shares, cited at its first member's list.

Groups whose paragraphs are equal as printed share one statement (the same facts, probes as a set: the sentence
lists them in the contract's order). :func:`contract_problems` checks the statements against the conclusions
their subjects hold. A group's counts are its first member's (as the conclusion's contract sentence counts it);
members that answered otherwise are told apart by the separators, not by the counts."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.common import is_measured
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions
from embedswap.summary.types_fact import Fact
from embedswap.summary.types_post import CandidateConclusion, CandidateGroup, Separator
from embedswap.summary.types_post_document import PostDocument, Statement

GROUP = "post.contract_group"
ERROR_CLASS = "post.separator_error_class"
ANSWERS = "post.separator_answers"
KEYS = (GROUP, ERROR_CLASS, ANSWERS)
# a paragraph's probe lists: the fact's key -> the conclusion lists it is drawn from (a refusal and a 5xx are one
# sentence, "refused or answered with an error")
LISTS: dict[str, tuple[str, ...]] = {"silent": ("silent",), "refused": ("refused", "retry"),
                                     "accepted": ("accepted",), "shape": ("shape",),
                                     "legacy_failed": ("legacy_failed",)}
# every other fact's key -> the last part of the path it must be read from (a key names what its source holds)
FIELDS: dict[str, str] = {"compared": "compared", "differ": "differ", "client": "client_error",
                          "server": "server_error", "origin": "origin", "client_says": "error", "server_says": "error"}


def _shared(first: tuple[int, CandidateConclusion], present: list[CandidateConclusion], key: str) -> list[Fact]:
    """The probes of ``key`` every member answered that way, each cited at the first member's list (a probe only
    some members answer so is a separator's, said apart)."""
    i, c = first
    sets = [{p for name in LISTS[key] for p in getattr(m, name)} for m in present]
    out: list[Fact] = []
    for name in LISTS[key]:
        for k, probe in enumerate(getattr(c, name)):
            if all(probe in s for s in sets) and all(f.value != probe for f in out):
                out.append(Fact(key=key, value=probe, source=f"decisions.post.conclusions.{i}.{name}.{k}"))
    return out


def _ranking(summary: SummaryBody, decisions: Decisions, members: list[str]) -> list[Fact]:
    """What the quiet difference's "whether that changes search ranking was not measured" rests on: the ranking
    section not measured, or the members with no ranking decision (none: every member's ranking is stated in the
    ranking section)."""
    if not is_measured(summary.ranking):
        return [Fact(key="ranking", value=False, source="ranking.measured")]
    return [Fact(key="ranking", value=None, source=f"decisions.ranking.by_candidate.{m}")
            for m in members if decisions.ranking.of(m) is None]


def _group(summary: SummaryBody, decisions: Decisions, g: CandidateGroup,
           found: dict[str, tuple[int, CandidateConclusion]]) -> Statement | None:
    first = found.get(g.members[0]) if g.members else None
    if first is None or not first[1].compared:  # nothing compared: no paragraph
        return None
    i, c = first
    present = [found[m][1] for m in g.members if m in found]
    facts = [Fact(key="compared", value=c.compared, source=f"decisions.post.conclusions.{i}.compared"),
             Fact(key="differ", value=c.differ, source=f"decisions.post.conclusions.{i}.differ")]
    silent = _shared(first, present, "silent")
    facts += silent + (_ranking(summary, decisions, g.members) if silent else [])
    for key in ("refused", "accepted", "shape", "legacy_failed"):
        facts += _shared(first, present, key)
    return Statement(key=GROUP, subjects=list(g.members), facts=facts)


def _says(summary: SummaryBody, key: str, probe: str | None, name: str | None) -> list[Fact]:
    """The error a server returned to a probe, as stored (``contract.<r>.by_target.<name>.error``); none: it said
    nothing."""
    rows = summary.contract if isinstance(summary.contract, list) else []
    for r, row in enumerate(rows):
        side = row.by_target.get(name or "") if row.probe == probe else None
        if side is not None and side.error:
            return [Fact(key=key, value=side.error, source=f"contract.{r}.by_target.{name}.error")]
    return []


def _separator(summary: SummaryBody, g: CandidateGroup, j: int, k: int, s: Separator) -> Statement:
    path = f"decisions.post.groups.{j}.separators.{k}"
    facts = [Fact(key="client", value=s.client_error, source=f"{path}.client_error"),
             Fact(key="server", value=s.server_error, source=f"{path}.server_error")]
    facts += [Fact(key="probes", value=p, source=f"{path}.probes.{m}") for m, p in enumerate(s.probes)]
    if s.kind == "error_class":
        first = s.probes[0] if s.probes else None
        facts.append(Fact(key="origin", value=s.origin, source=f"{path}.origin"))
        facts += _says(summary, "client_says", first, s.client_error) + _says(summary, "server_says", first,
                                                                              s.server_error)
    return Statement(key=ERROR_CLASS if s.kind == "error_class" else ANSWERS, subjects=list(g.members), facts=facts)


def _said(s: Statement) -> Any:
    """What a paragraph prints, without whom: its facts (counts and names, printed as stored), probes as a set."""
    return s.key, frozenset((f.key, f.value) for f in s.facts)


def contract_statements(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """The contract section's statements in the post's order: per group, its paragraph, then what separates its
    members (the 4xx/5xx ones first); groups whose paragraphs are equal said once."""
    found = {c.name: (i, c) for i, c in enumerate(decisions.post.conclusions)}
    out: list[Statement] = []
    said: dict[Any, Statement] = {}
    for j, g in enumerate(decisions.post.groups):
        paragraph = _group(summary, decisions, g, found)
        if paragraph is None:
            continue
        first = said.get(_said(paragraph))
        if first is not None:  # each member's counts are the first's: the key holds them
            first.subjects = [*first.subjects, *paragraph.subjects]
        else:
            said[_said(paragraph)] = paragraph
            out.append(paragraph)
        for kind in ("error_class", "answers"):
            out += [_separator(summary, g, j, k, s) for k, s in enumerate(g.separators) if s.kind == kind]
    return out


def _field(f: Fact) -> tuple[str, ...]:
    """The fields a fact of this key may be read from."""
    if f.key == "ranking":  # the section not measured, or a member's decision that is not there
        return ("measured",) if f.value is False else ("by_candidate",)
    return LISTS.get(f.key) or (FIELDS.get(f.key) or f.key,)


def _field_problems(s: Statement) -> list[str]:
    out = []
    for f in s.facts:
        parts = f.source.split(".")
        named = parts[-2] if parts[-1].isdigit() or (f.key == "ranking" and f.value is None) else parts[-1]
        if named not in _field(f) or f.key not in (*LISTS, *FIELDS, "probes", "ranking"):
            out.append(f"{s.key}: {f.key} {f.value!r} cites '{f.source}', which holds {named}, not {f.key}")
    return out


def _group_problems(s: Statement, decisions: Decisions) -> list[str]:
    """Each group a paragraph speaks for holds what it says: its first member's counts (what the paragraph prints
    for a group; the separators say where its members part) and, of each list, the probes all its members share
    (none left out, none a member lacks)."""
    found = {c.name: c for c in decisions.post.conclusions}
    groups = [g for g in decisions.post.groups if set(g.members) & set(s.subjects)]
    out = []
    if sorted(m for g in groups for m in g.members) != sorted(s.subjects) or not all(m in found for m in s.subjects):
        out.append(f"{s.key}: {s.subjects} are not whole groups of concluded candidates")
        return out
    for g in groups:
        first = found[g.members[0]]
        for key in ("compared", "differ"):
            fact = s.fact(key)
            if fact is None or fact.value != getattr(first, key):
                out.append(f"{s.key}: {first.name} {key} is {getattr(first, key)}, the statement says "
                           f"{None if fact is None else fact.value}")
        mine = [found[m] for m in g.members]
        for key, names in LISTS.items():
            said = {f.value for f in s.facts if f.key == key}
            shared = set.intersection(*({p for n in names for p in getattr(c, n)} for c in mine))
            if said != shared:
                out.append(f"{s.key}: {g.members} {key} are {sorted(shared)}, the statement says "
                           f"{sorted(map(str, said))}")
    return out


def contract_problems(decisions: Decisions, document: PostDocument) -> list[str]:
    """The contract paragraphs against the conclusions: each fact's key names what its source holds (a quiet
    difference is never cited from the refusals), and every subject of a paragraph holds what it says."""
    out: list[str] = []
    for s in document.statements():
        if s.key in KEYS:
            out += _field_problems(s)
        if s.key == GROUP:
            out += _group_problems(s, decisions)
    return out
