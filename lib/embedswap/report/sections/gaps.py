"""What was not measured and what stayed unconfirmed, collected from every section of the summary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from embedswap.report.format import esc
from embedswap.report.sections.context import ReportContext
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_common import Reason, Section

# The summary's sections in report order.
SECTION_KEYS = ("targets", "vectors", "ranking", "contract", "shim", "latency", "ablation", "parity")
# The sections that count in the status line and are listed where the summary holds no record of them
# (``Section.absent``); the instruction section is neither.
STATUS_SECTIONS = ("ranking", "shim", "ablation")


def _absent(node: Section | None) -> bool:
    return node is not None and node.absent


def _fields(node: BaseModel) -> Iterator[tuple[str, Any]]:
    """A model's fields that summary.json holds, by their JSON keys, in the order the summary writes them."""
    for name, field in type(node).model_fields.items():
        if name in node.model_fields_set:
            yield field.alias or name, getattr(node, name)


def _entry(node: dict[str, Any]) -> Section:
    """A not-measured entry inside an open part of the summary (a dict), as the section model words it."""
    reason = node.get("reason")
    if not (isinstance(reason, dict) and reason.get("code")):
        return Section(measured=False, why=str(node["why"]))
    return Section(measured=False, why=str(node["why"]),
                   reason=Reason(code=reason["code"], params=reason.get("params") or {}))


def not_measured_items(summary: SummaryBody) -> list[dict[str, Any]]:
    """Every ``{"measured": false, "why": ...}`` in the summary with its path (role aliases and sections an older
    summary did not have are skipped); ``node`` is the entry itself, for its reason code."""
    items: list[dict[str, Any]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, BaseModel):
            fields = dict(_fields(node))
        elif isinstance(node, dict):  # open: a part the summary keeps as written (a configuration, a record)
            fields = node
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])
            return
        else:
            return
        if fields.get("measured") is False and fields.get("why"):
            entry = node if isinstance(node, BaseModel) else _entry(node)
            if not (len(path) == 1 and _absent(entry if isinstance(entry, Section) else None)):
                items.append({"section": path[0] if path else "", "path": ".".join(path[1:]),
                              "why": str(fields["why"]), "node": entry})
            return
        aliases = {"legacy", "candidate"} if "by_target" in fields else set()
        if "by_candidate" in fields:  # ranking: the primary candidate's variants are copies of by_candidate's
            aliases = {"candidate_naive", "candidate_shim"}
        for key, value in fields.items():
            if key not in aliases:
                walk(value, [*path, str(key)])

    for key in SECTION_KEYS:
        walk(getattr(summary, key), [key])
    return items


def _not_measured(ctx: ReportContext, latency: dict, parity: dict, shim: dict) -> list[dict[str, str]]:
    sections = ctx.terms["sections"]
    out = []
    for name in ctx.names:  # a server that failed to start first: everything else of it follows from that
        error = ctx.failure(name)
        if error:
            out.append({"section": sections["targets"], "path": name, "why": error})
    for key in STATUS_SECTIONS:
        section = getattr(ctx.summary, key)
        if _absent(section):
            out.append({"section": sections[key], "path": "", "why": ctx.why(section)})
    out += [{"section": sections.get(i["section"], i["section"]), "path": i["path"], "why": ctx.why(i["node"])}
            for i in not_measured_items(ctx.summary) if (i["section"], i["path"]) != ("parity", "multimodal")]
    for entry in latency["sweep"]["why"]:
        out.append({"section": sections["latency"], "path": f"{entry['name']}.sweep", "why": entry["why"]})
    for entry in latency["memory"]:
        if entry["why"]:
            out.append({"section": sections["latency"], "path": f"{entry['name']}.rss_peak_bytes",
                        "why": entry["why"]})
    if shim["state"]:  # a candidate left out while another one was probed through the shim
        for entry in shim["why"]:
            out.append({"section": sections["shim"], "path": entry["name"], "why": entry["why"]})
    for entry in parity["not_run"]:
        out.append({"section": sections["parity"], "path": f"not_run.{entry['name']}", "why": entry["why"]})
    return out


def gaps(ctx: ReportContext, status: dict[str, Any], latency: dict[str, Any], contract: dict[str, Any],
         parity: dict[str, Any], ranking: dict[str, Any], shim: dict[str, Any]) -> dict[str, Any]:
    """The 'what was not measured' section, built from the other sections' values."""
    sections = ctx.terms["sections"]
    unconfirmed = [{"section": sections["latency"], "path": f"{entry['name']}.{entry['point']}", "why": entry["text"]}
                   for entry in latency["unconfirmed"]]
    for path in ctx.summary.non_finite:
        section, _, rest = path.partition(".")
        unconfirmed.append({"section": sections.get(section, section), "path": rest,
                            "why": esc(ctx.words.reason("figure_not_finite"))})
    for engine in status["engines"]:
        info = ctx.summary.target(engine["name"])
        if info is not None and info.measured and not info.version:
            unconfirmed.append({"section": sections["targets"], "path": f"{engine['name']}.version",
                                "why": ctx.words.labels["version"]})
    return {"not_measured": _not_measured(ctx, latency, parity, shim), "unconfirmed": unconfirmed,
            "not_compared": contract.get("not_compared") or [], "multimodal": parity["multimodal"],
            "ranking_meaningless": ranking["meaningless"] and ranking["state"],
            "mixed_index": ranking["state"] and not ranking["meaningless"],
            "lock_note": latency["lock_note"]}
