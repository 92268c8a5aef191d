"""Reason codes: why a part of the summary was not measured, language-neutral.

Every ``{"measured": false, "why": ...}`` the kit writes carries ``reason: {code, params}`` beside its English
``why``; the report words the code in each language (``[reasons]`` of ``report/catalogue/<lang>.toml``). The codes
are read off the English sentence by the patterns below, so one table serves the summaries this version writes and
those older versions wrote (whose ``why`` has the same sentences): :func:`attach_reasons` runs on both. A ``why``
that matches no pattern (an exception's or a server's own message) stays as recorded: it is data, not the kit's
sentence.
"""

from __future__ import annotations

import re
from typing import Any

# code -> the English sentence, {name} placeholders (the exact text the kit's summary builders write)
REASONS: dict[str, str] = {
    "section_absent": "summary.json has no such section (made by a kit from before the section existed)",
    "target_not_captured": "'{name}' was not captured in this attempt",
    "target_failed": "'{name}' failed: {error}",
    "no_document_vectors": "no document vectors for '{name}'",
    "no_document_vectors_file": "no document vectors for '{name}' (captures/{path})",
    "no_query_vectors_file": "no query vectors for '{name}' (captures/{path})",
    "vectors_missing": "vectors of '{legacy}' or '{name}' missing",
    "dimensions_differ": "dimensions differ ({legacy} vs {candidate})",
    "no_probe_captures": "no probe captures in this attempt",
    "latency_incomplete": "latency runs did not complete",
    "no_ablation_variants": "no ablation variants in experiment.yaml (`ablations:`)",
    "no_matryoshka": "no `matryoshka:` variant in experiment.yaml",
    "no_matryoshka_probes": "no probe captures for '{name}' or the legacy server",
    "restore_off": "sequencing.restore_legacy is off",
    "restore_not_run": "step 02 did not restore the legacy server in this attempt",
    "parity_not_run": "step 05 (parity) has not run in this attempt",
    "no_client_prefixed_queries": "no client-prefixed query vectors for the legacy server '{name}' (captures/{path})",
    "no_query_captures": "no query captures for '{name}'",
    "capture_shape": "captures/{path} has shape {shape}, expected {expected}",
    "query_dimensions_differ": "'{name}': documents have {documents} dimensions, queries {queries}",
    "no_queries": "the workload has no queries",
    "no_qrels": "the workload has no relevance judgements (qrels)",
    "candidate_not_captured": "candidate not captured",
    "no_legacy_probe_captures": "no probe captures for the legacy server '{name}'",
    "no_shim_probes": "no candidate was probed through the shim (captures/<candidate>/shim_probes.jsonl)",
    "not_probed_through_shim": "'{name}' was not probed through the shim",
    "no_document_vectors_captured": "no document vectors captured",
    "no_vectors": "no vectors",
    "images_not_embedded": "{n} workload record(s) carry an image ({ids}), but no backend here embeds images (no "
                           "multimodal model runs here): text+image rows not measured; the text+image gate is covered "
                           "by unit tests on recorded vectors",
    "no_images": "the workload has no image inputs and no multimodal model runs here",
    "sweep_server_exited": "skipped: the server process had exited",
    "sweep_no_answers": "skipped: the server answered none of the article points' requests",
}


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
    return re.compile(f"^{regex}$", re.S)


# most specific first: a longer fixed text wins over a shorter one that would also match
_PATTERNS = sorted(((code, _pattern(text)) for code, text in REASONS.items()),
                   key=lambda item: -len(re.sub(r"\{\w+\}", "", REASONS[item[0]])))


def reason_of(why: str) -> dict[str, Any] | None:
    """``{code, params}`` of an English reason sentence, or None for a free text."""
    for code, pattern in _PATTERNS:
        match = pattern.match(why.strip())
        if match:
            return {"code": code, "params": match.groupdict()}
    return None


def explain(code: str, **params: Any) -> str:
    """The English sentence of a code (what ``why`` holds)."""
    return REASONS[code].format(**params)


def not_measured(code: str, **params: Any) -> dict[str, Any]:
    """A part that was not measured: ``{measured: false, why, reason}``."""
    return {"measured": False, "why": explain(code, **params), "reason": {"code": code, "params": params}}


def attach_reasons(node: Any) -> None:
    """Give every ``why`` (and ``sweep_note``) in a summary its reason code where it has one, in place."""
    if isinstance(node, dict):
        why = node.get("why")
        if isinstance(why, str) and why and "reason" not in node:
            reason = reason_of(why)
            if reason:
                node["reason"] = reason
        note = node.get("sweep_note")
        if isinstance(note, str) and note and "sweep_reason" not in node:
            reason = reason_of(note)
            if reason:
                node["sweep_reason"] = reason
        for value in node.values():
            attach_reasons(value)
    elif isinstance(node, list):
        for value in node:
            attach_reasons(value)
