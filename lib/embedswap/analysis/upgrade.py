"""Reading summary.json of any version: older files are upgraded to the current schema on load (as MTEB's result
files are), so every attempt ever written still renders and every reader sees one shape.

Version 1 (kits up to 2026-11): no ``decisions``, no reason codes, and the sections added after the first
summaries (ranking, shim, ablation, instruction, diagnosis) may be absent. Upgrading marks an absent section not
measured with reason ``section_absent``, attaches reason codes to every ``why``, and computes the decisions from the
measured sections (pure functions of the summary, so the result equals what the current kit would have stored).

Version 2 files decided before the latency ratio was stored once also carry its copies
(``decisions.latency.ratios.<c>.seq_p50``/``conc_docs_per_s``/``conc_p50``/``complete``, the median of the repeats,
and ``decisions.shown.ratios``) and call the interval's label ``verdict``: the copies are dropped (the pooled ratio
under ``intervals`` is the one value) and the label is renamed ``direction``.

Version 3 (issue 62) stores the per-candidate plan (``plan``) where version 2 stored the model evidence alone
(``models``): each candidate's plan is drawn from its stored model change by the one rule (``types_plan.plan_for``);
a summary without ``models`` (before issue 57) gets a plan not measured, every candidate read as the same model, as
its decisions were.

Version 3 also words the index decision once: ``decisions.index.<c>`` held the sample's cross search (``code``:
keep_index / adapter / re_embed / blocked) and, where the index options decided, their choice beside it
(``options``); it holds one ``choice`` (keep, map with its ``map_kind``, rescore, dual_read, re_embed, blocked) and
``decided_on``, the sample's code kept as ``sample``.

Contract rows from before each verdict named the legacy answer it was read against (no ``conformance``) were read
against ``compare_to`` whenever a probe named one; their verdicts get that ``baseline``.

Version 4 stores, beside a latency ratio decided on an interval widened by the host drift, that interval at the
ratio's 95 % (``decisions.latency.ratios.<c>.widened``), which the post prints under the drift label; a version-3
ratio with a bound above 1 gets it computed from its stored interval and bound, and the post is drawn again.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from embedswap.analysis import decide, decisions_config, decisions_json, post_decisions
from embedswap.analysis.concurrency_gain import concurrency_gains
from embedswap.analysis.faults import fault_decisions
from embedswap.analysis.index_decision import index_condition
from embedswap.analysis.latency_verdicts import widened_intervals
from embedswap.analysis.post_conclusion import CONTRACT, VECTORS
from embedswap.analysis.post_contract import KEYS as CONTRACT_KEYS
from embedswap.analysis.post_document import post_document
from embedswap.reasons import attach_reasons, not_measured
from embedswap.summary.model import Summary, SummaryError, validate_body, validate_summary
from embedswap.summary.types_decisions import LatencyRatio
from embedswap.summary.types_index import choice_of
from embedswap.summary.types_models import ModelChange
from embedswap.summary.types_plan import plan_for

__all__ = ["SummaryError", "load_summary", "read_summary", "upgrade_summary"]

SCHEMA_VERSION = 4
# sections a version-1 summary may lack
LATER_SECTIONS = ("ranking", "shim", "ablation", "instruction", "diagnosis")
# sections a version-1 or -2 summary may lack (the kits before them wrote none); the current kit writes every one
VERSION_3_SECTIONS = ("long_input", "timing", "index")
MEASURED_INDEX = ("keep_index", "re_embed", "adapter")  # index decisions made on searched cells


def upgrade_summary(summary: dict[str, Any]) -> dict[str, Any]:  # raw JSON of any version in, current JSON out
    """A copy of ``summary`` at the current schema version (a current one is returned as an equal copy)."""
    if not isinstance(summary, dict):
        raise SummaryError("summary.json does not hold a JSON object")
    version = summary.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SummaryError(f"summary.json has schema_version {version!r}; this kit reads up to {SCHEMA_VERSION}: "
                           "render it with the kit version that wrote it, or upgrade embedswap")
    out = copy.deepcopy(summary)
    for key in LATER_SECTIONS:
        if not isinstance(out.get(key), dict):
            out[key] = not_measured("section_absent")
    attach_reasons(out)
    _probe_baselines(out)
    if version < 3:
        for key in VERSION_3_SECTIONS:
            if not isinstance(out.get(key), dict):
                out[key] = not_measured("section_absent")
        _models_to_plan(out)
        _no_corrupting_flag(out)
        _fault_parts(out)
        _recorded_then(out)
    if version < 2 or not isinstance(out.get("decisions"), dict):
        out["decisions"] = decisions_json(decide(validate_body({**out, "schema_version": SCHEMA_VERSION})))
    elif version < 3:
        _decided_since(out)
    if version < 3:
        _one_index_vocabulary(out["decisions"])
    # before the post's decisions are drawn from them: they read the stored latency decisions as the model does
    _one_latency_ratio(out["decisions"])
    _concurrency_gains(out)
    if version < 4:
        _widened(out)
    if not {"shown", "post"} <= set(out["decisions"]):  # decided before the post's decisions existed
        parts = post_decisions(validate_body({**out, "schema_version": SCHEMA_VERSION}), out["decisions"])
        out["decisions"] = {**out["decisions"], "shown": parts.shown.model_dump(mode="python", exclude_unset=True),
                            "post": parts.post.model_dump(mode="python", exclude_unset=True)}
    if version < 3:
        _post_story(out)
    if isinstance(out.get("faults"), dict) and "faults" not in out["decisions"]:  # decided before issue 56
        body = validate_body({**out, "schema_version": SCHEMA_VERSION})
        judged = fault_decisions(body, decisions_config(body))
        if judged is not None:
            out["decisions"] = {**out["decisions"], "faults": judged.model_dump(mode="python")}
            if isinstance(out["decisions"].get("post"), dict):  # the post's statements read the faults: drawn again
                out["decisions"]["post"].pop("document", None)
    out["schema_version"] = SCHEMA_VERSION
    _post_document(out)
    return out


def _models_to_plan(summary: dict[str, Any]) -> None:
    """Version 2 -> 3, in place: ``models`` (the model evidence per candidate) becomes ``plan``. Evidence stored
    before it said where the candidate's model was read (issue 64) read it from the configuration where it names
    one, and had none otherwise."""
    models = summary.pop("models", None)
    if not isinstance(models, dict):
        summary["plan"] = not_measured("section_absent")
        return
    by_candidate = models.get("by_candidate") or {}
    for change in by_candidate.values():
        if isinstance(change, dict) and not change.get("candidate_model_source"):
            change["candidate_model_source"] = "configured" if change.get("candidate_model") else "not_stated"
    changes = {name: ModelChange.model_validate(change) for name, change in by_candidate.items()}
    head = {k: v for k, v in models.items() if k != "by_candidate"}
    summary["plan"] = {**head, "by_candidate": {name: plan_for(change).model_dump(mode="json", exclude_defaults=True)
                                                for name, change in changes.items()}}


def _no_corrupting_flag(summary: dict[str, Any]) -> None:
    """Version 2 -> 3, in place: the faults section's per-server ``corrupting`` flag is dropped (``decisions.faults``
    decides it from ``by_kind``; before issue 56 the flag also counted cut bodies, which are transport faults)."""
    faults = summary.get("faults")
    for entry in ((faults.get("by_target") or {}).values() if isinstance(faults, dict) else []):
        if isinstance(entry, dict):
            entry.pop("corrupting", None)


def _fault_parts(summary: dict[str, Any]) -> None:
    """Version 2 -> 3, in place: a server's faults stored before the per-part figures (issue 56) get their totals as
    one part, ``all`` (what the faults decision then read)."""
    faults = summary.get("faults")
    for entry in ((faults.get("by_target") or {}).values() if isinstance(faults, dict) else []):
        if isinstance(entry, dict) and not entry.get("parts"):
            entry["parts"] = {"all": {"answers": entry.get("answers", 0), "unusable": entry.get("unusable", 0),
                                      "by_kind": entry.get("by_kind") or {}}}


def _recorded_then(summary: dict[str, Any]) -> None:
    """Version 2 -> 3, in place, what the kit that wrote the summary knew without recording it: a server's version
    came from the kit's launcher (``version_source`` "kit": no server was asked then); an ablation row's lock is the
    configured one; a ranking that held the primary candidate alone (no ``by_candidate``) holds it there too."""
    for info in (summary.get("targets") or {}).values():
        if isinstance(info, dict) and info.get("version") and not info.get("version_source"):
            info["version_source"] = "kit"
    configs = ((summary.get("experiment") or {}).get("config") or {}).get("targets") or {}
    ablation = summary.get("ablation") if isinstance(summary.get("ablation"), dict) else {}
    for name, row in (ablation.get("by_target") or {}).items():
        if isinstance(row, dict) and "lock" not in row:
            row["lock"] = (configs.get(name) or {}).get("lock")
    ranking = summary.get("ranking") if isinstance(summary.get("ranking"), dict) else {}
    primary = (summary.get("roles") or {}).get("candidate")
    if ranking.get("measured") and primary and not ranking.get("by_candidate"):
        deltas = ranking.get("deltas") or {}
        ranking["by_candidate"] = {primary: {
            "measured": True, **{key: ranking.get(f"candidate_{key}") or {"measured": False} for key in ("naive", "shim")},
            "deltas": {key: deltas[f"candidate_{key}"] for key in ("naive", "shim") if f"candidate_{key}" in deltas}}}


def _stale_ranking(ranking: Any) -> bool:
    """Ranking decisions stored before the margins were two (``delta_max``), before MRR@10 or the stated alpha, or
    before a measured variant got its equivalence verdicts and language slices."""
    if not isinstance(ranking, dict):
        return False
    if not {"ndcg_margin", "recall_margin", "mrr_margin", "alpha"} <= set(ranking.get("tolerance") or {}):
        return True
    variants = [v for entry in (ranking.get("by_candidate") or {}).values() if isinstance(entry, dict)
                for k, v in entry.items() if k in ("naive", "shim") and isinstance(v, dict)]
    return any(v.get("tests") and not {"equivalence", "metrics", "slices"} <= set(v) for v in variants)


def _decided_since(out: dict[str, Any]) -> None:
    """Version 2 -> 3, in place: a decision the stored ones were made before is decided now, whole (a pure function
    of the summary): the ranking verdicts (see :func:`_stale_ranking`), the latency ratios' verdicts against the
    margins, the multimodal parity finding; the post's decisions (drawn from them, and before its per-candidate
    vectors verdict) are then drawn again."""
    decisions = out["decisions"]
    latency = decisions.get("latency") if isinstance(decisions.get("latency"), dict) else {}
    stale = {"ranking": _stale_ranking(decisions.get("ranking")),
             "latency": any(isinstance(e, dict) and "verdicts" not in e
                            for e in (latency.get("ratios") or {}).values()),
             "parity_multimodal": "parity_multimodal" not in decisions}
    post = decisions.get("post") if isinstance(decisions.get("post"), dict) else {}
    redraw = stale["ranking"] or stale["latency"] or any(
        isinstance(c, dict) and "vectors" not in c for c in post.get("conclusions") or [])
    if not (redraw or any(stale.values())):
        return
    fresh = decisions_json(decide(validate_body({**out, "schema_version": SCHEMA_VERSION})))
    for key in (k for k, old in stale.items() if old):
        if key in fresh:
            decisions[key] = fresh[key]
        else:
            decisions.pop(key, None)
    if redraw:
        decisions.pop("shown", None)
        decisions.pop("post", None)


def _one_index_vocabulary(decisions: dict[str, Any]) -> None:
    """Version 2 -> 3, in place: each ``decisions.index`` entry's two fields (``code``, the sample's cross search;
    ``options``, the index options' choice where they decided) become the one decision (``choice``, ``map_kind``,
    ``decided_on``) with the sample's code kept as its evidence (``sample``)."""
    for entry in (decisions.get("index") or {}).values():
        if not isinstance(entry, dict) or "code" not in entry:
            continue
        entry["sample"] = entry.pop("code")
        option = entry.pop("options", None)
        choice, kind = choice_of(option or entry["sample"])
        entry.update(choice=choice, decided_on="options" if option else "sample",
                     **({"map_kind": kind} if kind is not None else {}))


def _post_story(out: dict[str, Any]) -> None:
    """Version 2 -> 3 (decisions stored before issue 63), in place: the index decisions get the queries they hold for, and the post
    its article comparison and shim trades, from the stored latency and ranking decisions."""
    decisions = out["decisions"]
    index = decisions.get("index") if isinstance(decisions.get("index"), dict) else {}
    if any(isinstance(d, dict) and "condition" not in d and d.get("sample") in MEASURED_INDEX for d in index.values()):
        condition = index_condition(validate_body({**out, "schema_version": SCHEMA_VERSION})).model_dump()
        for d in index.values():
            if isinstance(d, dict) and d.get("sample") in MEASURED_INDEX:
                d.setdefault("condition", condition)
    post = decisions.get("post")
    if isinstance(post, dict) and not {"article", "shim_trades"} <= set(post):
        parts = post_decisions(validate_body({**out, "schema_version": SCHEMA_VERSION}), decisions)
        post.setdefault("article", [a.model_dump(mode="python") for a in parts.post.article or []])
        post.setdefault("shim_trades", [t.model_dump(mode="python") for t in parts.post.shim_trades or []])


def _post_document(out: dict[str, Any]) -> None:
    """Decisions stored before the post was a document (issue 63), or before its conclusion and closing sentences
    or its contract paragraphs were statements of it, in place: ``decisions.post.document`` drawn from the
    decisions stored (the last migration: it reads them as the current model does)."""
    post = out["decisions"].get("post")
    document = post.get("document") if isinstance(post, dict) else None
    if not isinstance(post, dict) or (_holds_conclusions(document) and _holds_contract(document)
                                      and not _split_headings(document)):
        return
    typed = validate_summary(out)
    post["document"] = post_document(typed, typed.decisions).model_dump(mode="python", exclude_unset=True)


def _holds_conclusions(document: Any) -> bool:
    """Whether a stored post document holds its conclusion's vectors sentence and the host it was measured on: every
    document drawn since the conclusion's sentences and the post's figures were statements does (both are always
    said); one drawn before them is drawn again, or the post could not word its conclusion or print its figures."""
    if not isinstance(document, dict):
        return False
    keys = [str(s.get("key", "")) for section in document.get("sections") or [] if isinstance(section, dict)
            for s in section.get("statements") or [] if isinstance(s, dict)]
    # the host statement, always said, came with the post's other figures (the tables, the cosines, the index's
    # recall and cost, the start times), and its CPU count with the whole numbers (the workload's, the contract
    # table's, the shim's and parity's counts, the memory): a document without them does not state them, and is
    # drawn again
    host = [f.get("key") for section in document.get("sections") or [] if isinstance(section, dict)
            for s in section.get("statements") or [] if isinstance(s, dict) and s.get("key") == "post.host"
            for f in s.get("facts") or [] if isinstance(f, dict)]
    return any(k.startswith(f"{VECTORS}.") for k in keys) and "cpu_count" in host


def _split_headings(document: Any) -> bool:
    """Whether a stored document says one latency heading twice: drawn before headings equal as printed (code and
    direction, no figure) were one statement, its candidates would print as twins; drawn again."""
    said = [tuple((c.get("code"), c.get("direction")) for c in s.get("claims") or [] if isinstance(c, dict))[:1]
            for section in document.get("sections") or [] if isinstance(section, dict)
            for s in section.get("statements") or [] if isinstance(s, dict) and s.get("key") == "post.latency_headings"]
    return len(said) != len(set(said))


def _holds_contract(document: Any) -> bool:
    """Whether a stored post document holds its contract paragraphs: every document drawn since they were
    statements cites, in its conclusion's contract sentence, the group each count is of (``group``), and holds a
    paragraph wherever a group compared anything; one drawn before is drawn again."""
    if not isinstance(document, dict):
        return False
    statements = [s for section in document.get("sections") or [] if isinstance(section, dict)
                  for s in section.get("statements") or [] if isinstance(s, dict)]
    said = next((s for s in statements if str(s.get("key", "")).startswith(f"{CONTRACT}.")), {})
    facts = [f for f in said.get("facts") or [] if isinstance(f, dict)]
    if any(f.get("key") == "compared" for f in facts) and not any(f.get("key") == "group" for f in facts):
        return False
    compared = any(f.get("key") == "compared" and isinstance(f.get("value"), int) and f["value"] > 0 for f in facts)
    return not compared or any(s.get("key") in CONTRACT_KEYS for s in statements)


def _probe_baselines(summary: dict[str, Any]) -> None:
    """Contract rows written before each verdict named its baseline (rows without ``conformance``), in place: a
    row with ``compare_to`` was then always read against the legacy server's answer to that probe, so its verdicts
    say so (the report shows that reference beside them, as it did)."""
    rows = summary.get("contract")
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or "conformance" in row or not row.get("compare_to"):
            continue
        for verdict in (row.get("verdicts") or {}).values():
            if isinstance(verdict, dict) and verdict.get("verdict") is not None:
                verdict.setdefault("baseline", row["compare_to"])


# the copies of the latency ratio older version-2 decisions stored beside the pooled one
_RATIO_COPIES = ("seq_p50", "conc_docs_per_s", "conc_p50", "complete")


def _one_latency_ratio(decisions: dict[str, Any]) -> None:
    """Older version-2 decisions, in place: the ratio's copies dropped, each interval's ``verdict`` (where it lies
    against 1, not a decision) renamed ``direction``."""
    latency = decisions.get("latency") if isinstance(decisions.get("latency"), dict) else {}
    lock = latency.get("lock") if isinstance(latency.get("lock"), dict) else {}
    for entry in (latency.get("ratios") or {}).values():
        for key in _RATIO_COPIES:
            entry.pop(key, None)
        _rename_direction(entry.get("intervals"))
    for variant in lock.get("variants") or []:
        _rename_direction(variant.get("intervals"))
    if isinstance(decisions.get("shown"), dict):
        decisions["shown"].pop("ratios", None)


def _concurrency_gains(out: dict[str, Any]) -> None:
    """Latency decisions stored before what concurrency gained each server was (``concurrency``), in place: it is
    computed from the stored latency section as the pipeline computes it (the same bootstrap and seeds where the
    points keep their requests, ``not_measured`` where a point is absent), and the post document, which states it,
    is drawn again."""
    latency = out["decisions"].get("latency")
    if not isinstance(latency, dict) or "concurrency" in latency:
        return
    body = validate_body({**out, "schema_version": SCHEMA_VERSION})
    gains = concurrency_gains(body, decisions_config(body))
    latency["concurrency"] = {name: g.model_dump(mode="python", exclude_unset=True) for name, g in gains.items()}
    if isinstance(out["decisions"].get("post"), dict):
        out["decisions"]["post"].pop("document", None)


def _widened(out: dict[str, Any]) -> None:
    """Latency ratios decided on an interval widened by the host drift before that interval was stored
    (``widened``), in place: it is computed from the stored interval and bound as the pipeline computes it, and the
    post document, whose drift-labelled claims printed the verdict's narrower (1 - 2 alpha) interval, is drawn
    again."""
    latency = out["decisions"].get("latency")
    latency = latency if isinstance(latency, dict) else {}
    ratios = [*(latency.get("ratios") or {}).values(),
              *(p.get("ratio") for p in latency.get("pairs") or [] if isinstance(p, dict))]
    stale = [r for r in ratios if isinstance(r, dict) and "widened" not in r and r.get("verdicts")
             and isinstance(r.get("drift"), dict) and isinstance(r["drift"].get("bound"), (int, float))
             and r["drift"]["bound"] > 1]
    if not stale:
        return
    body = validate_body({**out, "schema_version": SCHEMA_VERSION})
    alpha = decisions_config(body).alpha
    for entry in stale:
        typed = LatencyRatio.model_validate(entry)
        widening = widened_intervals(typed.intervals, typed.drift.bound if typed.drift else None, alpha)
        entry["widened"] = {run: point.model_dump(mode="python") for run, point in widening.items()}
    if isinstance(out["decisions"].get("post"), dict):
        out["decisions"]["post"].pop("document", None)


def _rename_direction(intervals: dict[str, Any] | None) -> None:
    for point in (intervals or {}).values():
        for figure in point.values():
            if isinstance(figure, dict) and "verdict" in figure:
                figure["direction"] = figure.pop("verdict")


def read_summary(data: dict[str, Any], source: str = "summary.json") -> Summary:
    """The typed summary of an in-memory summary.json of any version: upgraded once, validated once."""
    return validate_summary(upgrade_summary(data), source=source)


def load_summary(path: Path) -> Summary:
    """summary.json from disk as the typed :class:`~embedswap.summary.model.Summary` (upgraded, then validated: a
    file of another shape raises SummaryError naming the field's path)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SummaryError(f"{path}: not valid JSON ({exc})") from None
    return read_summary(data, source=str(path))
