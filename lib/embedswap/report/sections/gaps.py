"""What was not measured and what stayed unconfirmed, collected from every section of the summary."""

from __future__ import annotations

from typing import Any

from embedswap.report.format import esc
from embedswap.report.sections.context import ReportContext

# The summary's sections in report order.
SECTION_KEYS = ("targets", "vectors", "ranking", "contract", "shim", "latency", "ablation", "parity")
# The later sections that count in the status line and are listed when an older summary lacks them (the loader
# marks them absent, reason section_absent); the instruction section is neither, as before.
STATUS_SECTIONS = ("ranking", "shim", "ablation")
ABSENT = "section_absent"


def _absent(node: Any) -> bool:
    return isinstance(node, dict) and (node.get("reason") or {}).get("code") == ABSENT


def not_measured_items(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``{"measured": false, "why": ...}`` in the summary with its path (role aliases and sections an older
    summary did not have are skipped); ``node`` is the entry itself, for its reason code."""
    items: list[dict[str, Any]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            if node.get("measured") is False and node.get("why"):
                if not (len(path) == 1 and _absent(node)):
                    items.append({"section": path[0] if path else "", "path": ".".join(path[1:]),
                                  "why": str(node["why"]), "node": node})
                return
            aliases = {"legacy", "candidate"} if "by_target" in node else set()
            if "by_candidate" in node:  # ranking: the primary candidate's variants are copies of by_candidate's
                aliases = {"candidate_naive", "candidate_shim"}
            for key, value in node.items():
                if key not in aliases:
                    walk(value, [*path, str(key)])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])

    for key in SECTION_KEYS:
        walk(summary.get(key), [key])
    return items


def _not_measured(ctx: ReportContext, latency: dict, parity: dict, shim: dict) -> list[dict[str, str]]:
    sections = ctx.terms["sections"]
    out = []
    for name in ctx.names:  # a server that failed to start first: everything else of it follows from that
        error = ctx.failure(name)
        if error:
            out.append({"section": sections["targets"], "path": name, "why": error})
    for key in STATUS_SECTIONS:
        if _absent(ctx.raw.get(key)):
            out.append({"section": sections[key], "path": "", "why": ctx.why(ctx.raw[key])})
    out += [{"section": sections.get(i["section"], i["section"]), "path": i["path"], "why": ctx.why(i["node"])}
            for i in not_measured_items(ctx.raw) if (i["section"], i["path"]) != ("parity", "multimodal")]
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
    for path in ctx.raw.get("non_finite") or []:
        section, _, rest = path.partition(".")
        unconfirmed.append({"section": sections.get(section, section), "path": rest,
                            "why": esc(ctx.words.reason("figure_not_finite"))})
    for engine in status["engines"]:
        info = (ctx.raw.get("targets") or {}).get(engine["name"]) or {}
        if info.get("measured") and not info.get("version"):
            unconfirmed.append({"section": sections["targets"], "path": f"{engine['name']}.version",
                                "why": ctx.words.labels["version"]})
    return {"not_measured": _not_measured(ctx, latency, parity, shim), "unconfirmed": unconfirmed,
            "not_compared": contract.get("not_compared") or [], "multimodal": parity["multimodal"],
            "ranking_meaningless": ranking["meaningless"] and ranking["state"],
            "mixed_index": ranking["state"] and not ranking["meaningless"],
            "lock_note": latency["lock_note"]}
