"""The post document's conclusion and closing statements (issue 63): which message of ``post.vectors_conclusions``,
``post.contract_conclusions`` and ``post.closings`` the post says, about whom, and the stored facts each rests on
(``decisions.post.conclusions.<i>`` and ``decisions.post.groups.<j>``, ``decisions.faults``), so that the checks on
the document see them and the renderer only words them.

A statement's key is its message's full key (``post.closings.drop_in``): the code it ends with is the decision,
drawn from the facts it cites alone (:data:`CODES`), so the checks on the document draw it again from the facts
(which resolve to their sources) and find a code that its sources do not hold.
Candidates whose closings are equal (the same code, the same probes left through the shim) share one statement;
a group that shares its vectors under a one-worker Dynamo (``several_workers`` unknown) keeps its own, as its tie
sentence names its members."""

from __future__ import annotations

from collections.abc import Callable

from embedswap.analysis.common import roles
from embedswap.analysis.post_story import CONCURRENCY, concurrency_code
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions
from embedswap.summary.types_fact import Fact
from embedswap.summary.types_post import CandidateConclusion, CandidateGroup
from embedswap.summary.types_post_document import Statement

VECTORS = "post.vectors_conclusions"
CONTRACT = "post.contract_conclusions"
CLOSINGS = "post.closings"
# the group's unknown that makes two members a Dynamo over the same vLLM (report's close_tie sentence)
SEVERAL_WORKERS = "several_workers"


def keyed_code(s: Statement, table: str) -> str | None:
    """The code a statement of a keyed message ends with (``post.closings.drop_in`` -> ``drop_in``); None for a
    statement of another message."""
    prefix = table + "."
    return s.key[len(prefix):] if s.key.startswith(prefix) else None


def closing_code(facts: list[Fact]) -> str:
    """A closing's code from the facts it cites, its members' conclusion codes: theirs where they share one;
    members with the same vectors but different conclusions need the client changed for at least one of them."""
    found = list(dict.fromkeys(f.value for f in facts if f.key == "code"))
    return str(found[0]) if len(found) == 1 else "client_changes"


Indexed = dict[str, tuple[int, CandidateConclusion]]  # a candidate's conclusion and its index in the stored list


def _indexed(decisions: Decisions) -> Indexed:
    return {c.name: (i, c) for i, c in enumerate(decisions.post.conclusions)}


def _first(group: CandidateGroup, found: Indexed) -> tuple[int, CandidateConclusion] | None:
    """The group's first member's conclusion: what a group's contract counts are (its members answered alike)."""
    return found.get(group.members[0]) if group.members else None


def vectors_code(facts: list[Fact]) -> str:
    """The vectors sentence's code from the facts it cites: the vectors' stored verdict per candidate
    (``conclusions[].vectors``), never the conclusion's code (a candidate can be not swappable for its ranking while
    its vectors are byte-identical); ``none`` where no cosine was measured; ``unreliable`` where a server corrupts
    answers (the answers that came back whole say nothing about the others)."""
    verdicts = {f.value for f in facts if f.key == "vectors"}
    return ("another_model" if "another_model" in verdicts else
            "none" if not any(f.key == "cosine_min" for f in facts) else
            "differ" if "differ" in verdicts else
            "unreliable" if any(f.key == "fault" for f in facts) else "same")


def contract_code(facts: list[Fact]) -> str:
    """The contract sentence's code from the facts it cites: each group's counts (its first member's: its members
    answered alike); candidates speaking another API shape than the legacy server (``api_shape``, issue 64) answer
    alike beyond the shape, which is not "same"."""
    def counts(key: str) -> list[int]:
        return [f.value for f in facts if f.key == key and isinstance(f.value, int)]
    return ("none" if not any(counts("compared")) else "differs" if any(counts("differ")) else
            "api_shape" if any(f.key == "api_shape" for f in facts) else "same")


def _vectors(summary: SummaryBody, decisions: Decisions) -> Statement:
    post = decisions.post
    found = _indexed(decisions)
    facts = [Fact(key="vectors", value=c.vectors, source=f"decisions.post.conclusions.{i}.vectors")
             for i, c in enumerate(post.conclusions)]
    # the cosines of the grouped candidates: the sentence prints their lowest
    facts += [Fact(key="cosine_min", value=c.cosine_min, source=f"decisions.post.conclusions.{i}.cosine_min")
              for i, c in (found[m] for g in post.groups for m in g.members if m in found) if c.cosine_min is not None]
    first = _first(post.groups[0], found) if post.groups else None
    if first is not None and first[1].threshold is not None:  # the threshold a ``differ`` sentence prints
        facts.append(Fact(key="threshold", value=first[1].threshold,
                          source=f"decisions.post.conclusions.{first[0]}.threshold"))
    for name in decisions.faults.corrupting() if decisions.faults is not None else []:
        facts.append(Fact(key="fault", value="corrupting", source=f"decisions.faults.by_target.{name}.code"))
    return Statement(key=f"{VECTORS}.{vectors_code(facts)}", subjects=roles(summary)[1], facts=facts)


def _contract(summary: SummaryBody, decisions: Decisions) -> Statement:
    found = _indexed(decisions)
    facts: list[Fact] = []
    for j, g in enumerate(decisions.post.groups):
        first = _first(g, found)
        if first is not None:  # the group the counts are of (the sentence names it), then its counts
            i, c = first
            facts += [Fact(key="group", value=g.members[0], source=f"decisions.post.groups.{j}.members.0"),
                      Fact(key="compared", value=c.compared, source=f"decisions.post.conclusions.{i}.compared"),
                      Fact(key="differ", value=c.differ, source=f"decisions.post.conclusions.{i}.differ")]
    facts += [Fact(key="api_shape", value=c.api_shape, source=f"decisions.post.conclusions.{i}.api_shape")
              for i, c in enumerate(decisions.post.conclusions) if c.api_shape]
    return Statement(key=f"{CONTRACT}.{contract_code(facts)}", subjects=roles(summary)[1], facts=facts)


def conclusion_statements(summary: SummaryBody, decisions: Decisions) -> list[Statement]:
    """The conclusion's vectors and contract sentences, in the post's order."""
    return [_vectors(summary, decisions), _contract(summary, decisions)]


def _closing(j: int, g: CandidateGroup, found: Indexed) -> Statement:
    present = [found[m] for m in g.members if m in found]
    facts = [Fact(key="code", value=c.code, source=f"decisions.post.conclusions.{i}.code") for i, c in present]
    left: set[str] = set()
    for i, c in present:  # what the shim leaves different, each probe once (the union over the members)
        for k, probe in enumerate(c.shim_left):
            if probe not in left:
                left.add(probe)
                facts.append(Fact(key="shim_left", value=probe, source=f"decisions.post.conclusions.{i}.shim_left.{k}"))
    if len(g.members) > 1 and SEVERAL_WORKERS in g.unknown:  # the tie sentence: these members, said apart
        facts.append(Fact(key="unknown", value=SEVERAL_WORKERS,
                          source=f"decisions.post.groups.{j}.unknown.{g.unknown.index(SEVERAL_WORKERS)}"))
        facts += [Fact(key="same_vectors", value=m, source=f"decisions.post.groups.{j}.members.{k}")
                  for k, m in enumerate(g.members)]
    return Statement(key=f"{CLOSINGS}.{closing_code(facts)}", subjects=list(g.members), facts=facts)


def closing_statements(decisions: Decisions) -> list[Statement]:
    """One closing per group of candidates with the same vectors; groups whose closings are equal said once."""
    found = _indexed(decisions)
    out: list[Statement] = []
    said: dict[tuple[object, ...], Statement] = {}
    for j, g in enumerate(decisions.post.groups):
        s = _closing(j, g, found)
        # the probes as a set: the sentence lists them in the contract's order
        key = (s.key, frozenset(f.value for f in s.facts if f.key == "shim_left"), s.fact("same_vectors") is not None)
        first = said.get(key)
        if first is None or key[2]:  # a tie names its own members
            said.setdefault(key, s)
            out.append(s)
        else:  # each member's own code stays cited
            first.subjects = [*first.subjects, *s.subjects]
            first.facts = [*first.facts, *(f for f in s.facts if f.key == "code")]
    return out


# each keyed table's code, drawn from the statement's facts (the decision here, and the check)
# the keyed statements whose code the facts they cite give (the concurrency note's: analysis/post_story.py)
CODES: dict[str, Callable[[list[Fact]], str]] = {VECTORS: vectors_code, CONTRACT: contract_code, CLOSINGS: closing_code,
                                                 CONCURRENCY: concurrency_code}
