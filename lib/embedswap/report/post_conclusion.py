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
from embedswap.report.format import code, fmt
from embedswap.report.post_claims import document
from embedswap.report.post_contract import group_indexes, group_label
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_post_document import Statement


def _one(statements: list[Statement], table: str) -> tuple[Statement, str]:
    """The one statement of ``table`` and its code."""
    found = [(s, c) for s in statements if (c := keyed_code(s, table)) is not None]
    if len(found) != 1:  # the conclusion says each once: a document without it was not drawn by this kit
        raise ReportError(f"the post document states {table} {len(found)} times, not once")
    return found[0]


def _closings(ctx: ReportContext, statements: list[Statement], groups: list[dict[str, Any]],
              probes: Callable[[list[str]], str]) -> list[dict[str, Any]]:
    """Each closing statement as its sentence reads it: its groups' names (members of one group joined by " · ",
    groups by the list separator), its code, the probes the shim leaves different, whether it is a tie."""
    out = []
    for s in statements:
        closing = keyed_code(s, CLOSINGS)
        if closing is None:
            continue
        mine = group_indexes(ctx, s.subjects)
        words = dict(groups[mine[0]]) if mine else {"separators": []}
        words.update(label=group_label(ctx, s.subjects), code=closing,
                     shim_left=probes([str(f.value) for f in s.facts if f.key == "shim_left"]),
                     dynamo_pair=s.fact("same_vectors") is not None)
        out.append(words)
    return out


def _contract_lines(ctx: ReportContext, s: Statement) -> list[dict[str, Any]]:
    """The ``differs`` sentence's groups from the contract statement's facts (each group cited, then its counts):
    groups with equal counts named side by side ("each"), those with no difference left out."""
    groups: list[dict[str, Any]] = []
    for f in s.facts:
        if f.key == "group":
            groups.append({"label": group_label(ctx, [str(f.value)])})
        elif f.key in ("compared", "differ") and groups:
            groups[-1][f.key] = fmt(f.value, "int")
    lines: list[dict[str, Any]] = []
    for g in groups:
        if g.get("differ", "0") in ("0", fmt(None, "int")):
            continue
        same = next((line for line in lines if (line["compared"], line["differ"]) == (g["compared"], g["differ"])),
                    None)
        if same is None:
            lines.append({**g, "each": False})
        else:  # same counts, not the same answers: named side by side, "each"
            same["label"] += ctx.terms["post"]["list_sep"] + g["label"]
            same["each"] = True
    return lines


def _vectors_figures(s: Statement) -> dict[str, str]:
    """The vectors sentence's figures from its facts: the lowest cosine cited, the threshold cited."""
    cosines = [float(f.value) for f in s.facts if f.key == "cosine_min" and isinstance(f.value, (int, float))]
    threshold = s.fact("threshold")
    return {"vectors_cosine": fmt(min(cosines) if cosines else None, "cos4"),
            "vectors_threshold": fmt(threshold.value if threshold is not None else None, "raw")}


def conclusion_words(ctx: ReportContext, groups: list[dict[str, Any]],
                     probes: Callable[[list[str]], str]) -> dict[str, Any]:
    """The skeleton's ``vectors_state`` with its figures, ``contract_state`` with its ``contract_lines``,
    ``shape_lines`` and ``closing_groups``, from the document (``groups``: the post's group words, in
    ``decisions.post.groups``' order; ``probes``: probes in running prose)."""
    statements = list(document(ctx).statements())
    shapes = [c for c in ctx.decisions.post.conclusions if c.api_shape]
    vectors, vectors_state = _one(statements, VECTORS)
    contract, contract_state = _one(statements, CONTRACT)
    return {"vectors_state": vectors_state, "contract_state": contract_state,
            **_vectors_figures(vectors), "contract_lines": _contract_lines(ctx, contract),
            "shape_lines": ", ".join(f"{code(c.name)} ({code(c.api_shape)})" for c in shapes),
            "closing_groups": _closings(ctx, statements, groups, probes)}
