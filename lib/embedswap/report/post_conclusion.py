"""The post's conclusion and closing sentences as the post document states them (``decisions.post.document``,
:mod:`embedswap.analysis.post_conclusion`): which message of ``post.vectors_conclusions``,
``post.contract_conclusions`` and ``post.closings`` is said, and of whom, is the document's; here the skeleton only
gets the words around it (the candidates' names, the probes in the language), so the markdown cannot say what
the checks on the document did not see."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.post_conclusion import CLOSINGS, CONTRACT, VECTORS, keyed_code
from embedswap.report.errors import ReportError
from embedswap.report.format import code
from embedswap.report.post_claims import document
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_post_document import Statement


def _one(statements: list[Statement], table: str) -> str:
    found = [c for c in (keyed_code(s, table) for s in statements) if c is not None]
    if len(found) != 1:  # the conclusion says each once: a document without it was not drawn by this kit
        raise ReportError(f"the post document states {table} {len(found)} times, not once")
    return found[0]


def _closings(ctx: ReportContext, statements: list[Statement], groups: list[dict[str, Any]],
              probes: Callable[[list[str]], str]) -> list[dict[str, Any]]:
    """Each closing statement as its sentence reads it: its groups' names (members of one group joined by " · ",
    groups by the list separator), its code, the probes the shim leaves different, whether it is a tie."""
    where = {m: i for i, g in enumerate(ctx.decisions.post.groups) for m in g.members}
    out = []
    for s in statements:
        closing = keyed_code(s, CLOSINGS)
        if closing is None:
            continue
        mine = list(dict.fromkeys(where[m] for m in s.subjects if m in where))
        words = dict(groups[mine[0]]) if mine else {"separators": []}
        words.update(label=ctx.terms["post"]["list_sep"].join(groups[i]["label"] for i in mine), code=closing,
                     shim_left=probes([str(f.value) for f in s.facts if f.key == "shim_left"]),
                     dynamo_pair=s.fact("same_vectors") is not None)
        out.append(words)
    return out


def conclusion_words(ctx: ReportContext, groups: list[dict[str, Any]],
                     probes: Callable[[list[str]], str]) -> dict[str, Any]:
    """The skeleton's ``vectors_state``, ``contract_state``, ``shape_lines`` and ``closing_groups``, from the
    document (``groups``: the post's group paragraphs, in ``decisions.post.groups``' order; ``probes``: probes
    in running prose)."""
    statements = list(document(ctx).statements())
    shapes = [c for c in ctx.decisions.post.conclusions if c.api_shape]
    return {"vectors_state": _one(statements, VECTORS), "contract_state": _one(statements, CONTRACT),
            "shape_lines": ", ".join(f"{code(c.name)} ({code(c.api_shape)})" for c in shapes),
            "closing_groups": _closings(ctx, statements, groups, probes)}
