"""The post's contract paragraphs as the post document states them (``decisions.post.document``, section
``contract``; :mod:`embedswap.analysis.post_contract` decides them): each statement becomes the words its messages
read (``g`` for a group's paragraph, ``s`` for what separates its members), its figures and probes from the facts it
cites only. Candidates sharing a statement are named by group: members of one group joined by " · ", groups by the
list separator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embedswap.analysis.post_contract import ERROR_CLASS, GROUP, KEYS
from embedswap.report.format import code, fmt
from embedswap.report.post_claims import document
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_post_document import Statement

Probes = Callable[[list[str]], str]  # probes in running prose, in the contract's order


def group_indexes(ctx: ReportContext, subjects: list[str]) -> list[int]:
    """The indexes in ``decisions.post.groups`` of the groups ``subjects`` belong to, in the order they name them."""
    where = {m: i for i, g in enumerate(ctx.decisions.post.groups) for m in g.members}
    return list(dict.fromkeys(where[m] for m in subjects if m in where))


def group_label(ctx: ReportContext, subjects: list[str]) -> str:
    """The groups ``subjects`` belong to, each with all its members, in the order the subjects name them."""
    groups = ctx.decisions.post.groups
    return ctx.terms["post"]["list_sep"].join(" · ".join(code(m) for m in groups[i].members)
                                              for i in group_indexes(ctx, subjects))


def _values(s: Statement, key: str) -> list[str]:
    return [str(f.value) for f in s.facts if f.key == key]


def _said(s: Statement, key: str) -> str | None:
    """A server's own error as cited, quoted (None: it said nothing)."""
    found = s.fact(key)
    return code(str(found.value)) if found is not None and found.value else None


def _group(ctx: ReportContext, s: Statement, probes: Probes) -> dict[str, Any]:
    counts = {k: fmt(f.value if (f := s.fact(k)) is not None else None, "int") for k in ("compared", "differ")}
    return {"label": group_label(ctx, s.subjects), **counts,
            # "whether that changes search ranking was not measured" is said where a fact says so
            "ranking": s.fact("ranking") is None,
            **{k: probes(_values(s, k)) for k in ("silent", "refused", "accepted", "shape", "legacy_failed")}}


def _separator(s: Statement, probes: Probes) -> dict[str, Any]:
    listed = _values(s, "probes")
    origin = s.fact("origin")
    return {"probes": probes(listed), "first": probes(listed[:1]) if listed else "",
            "client": code(str(f.value)) if (f := s.fact("client")) is not None else "",
            "server": code(str(f.value)) if (f := s.fact("server")) is not None else "",
            "origin": code(str(origin.value)) if origin is not None and origin.value else None,
            "client_says": _said(s, "client_says"), "server_says": _said(s, "server_says")}


def contract_paragraphs(ctx: ReportContext, probes: Probes) -> list[dict[str, Any]]:
    """The contract section's paragraphs in the document's order: ``kind`` (group, error_class, answers) and the
    words of its messages."""
    out = []
    for s in document(ctx).statements():
        if s.key not in KEYS:
            continue
        kind = "group" if s.key == GROUP else "error_class" if s.key == ERROR_CLASS else "answers"
        out.append({"kind": kind, **(_group(ctx, s, probes) if kind == "group" else _separator(s, probes))})
    return out
