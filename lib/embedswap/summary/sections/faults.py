"""summary.json's ``faults`` section: per server and part, its answers and the unusable ones by kind
(wire.answer_faults), and the transport events a reader needs in words.

Counted over the requests that are well-formed by construction: the workload's batches, the queries, the latency
runs, and the probes. A probe's 4xx or 5xx to a request built to be refused is the probe's verdict, not a fault:
it counts as an answer (the transport delivered it) and never as unusable. A request sent once more after a stale
keep-alive connection (``stale_retry`` on its record) counts once, by its second answer, which is what a client
sees; the first try is kept as an event. A probe that got no answer on any send (:func:`never_answered`) is that
probe's verdict too, not a transport fault: kept as an event (``every_send``), counted in no part. The decision on
these figures is ``decisions.faults`` (analysis.faults).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.wire.answer_faults import TRANSPORT, count_kinds, fault_kind, other_length, usual_dim

PARTS = {"workload": ("workload_requests.jsonl",), "queries": ("query_requests.jsonl",),
         "latency": ("latency_requests.jsonl", "latency_sweep_requests.jsonl"), "probes": ("probes.jsonl",)}
EVENTS_KEPT = 20  # a server that drops many requests is told by its rates; the first events name what happened


# a probe whose every try got no answer is told from an intermittent drop only where it was tried more than once
DETERMINISTIC_MIN_TRIES = 2


def _answers(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [record, *(record.get("repeats") or [])]


def never_answered(record: dict[str, Any]) -> bool:
    """A probe whose every send, and every send once more after a stale connection, got no answer (issue 64): how
    the server answers that request (the empty string dropped each time), so the probe's own verdict names it; it
    is no transport fault and counts in no rate."""
    answers = _answers(record)
    tries = len(answers) + sum(1 for a in answers if a.get("stale_retry"))
    return tries >= DETERMINISTIC_MIN_TRIES and not any(a.get("status") for a in answers)


def _records(attempt: Attempt, name: str, part: str, usual: int | None = None) -> list[dict[str, Any]]:
    """The answers of one capture; a probe's refusal counts as a usable answer, and a one-vector answer of another
    length than ``usual`` (the server's workload answers) is marked as such, unless the probe asked for
    ``dimensions``."""
    out: list[dict[str, Any]] = []
    for file in PARTS[part]:
        if not attempt.has(f"{name}/{file}"):
            continue
        for record in attempt.read_jsonl(f"{name}/{file}"):
            if part != "probes":
                out.append(record)
                continue
            if record.get("not_applicable") or never_answered(record):
                continue
            asked = isinstance(record.get("sent"), dict) and "dimensions" in record["sent"]
            for answer in _answers(record):
                if answer.get("status") not in (200, 0, None):
                    out.append({"status": 200, "error": None})  # a refusal arrived: the probe's verdict
                    continue
                dim = answer.get("dim")
                if (usual is not None and not asked and answer.get("status") == 200 and not answer.get("error")
                        and isinstance(dim, int) and dim != usual):
                    answer = {**answer, "error": other_length(dim, usual)}
                out.append(answer)
    return out


def _events(attempt: Attempt, name: str) -> list[dict[str, Any]]:
    """What a reader needs in words: per probe, its sends that got no whole answer (and what the others got); per
    other part, the requests sent once more after a stale keep-alive connection."""
    out: list[dict[str, Any]] = []
    for part, files in PARTS.items():
        stale: list[int] = []
        for file in files:
            if not attempt.has(f"{name}/{file}"):
                continue
            for record in attempt.read_jsonl(f"{name}/{file}"):
                answers = _answers(record)
                if part != "probes" or record.get("not_applicable"):
                    stale += [a.get("status") or 0 for a in answers if a.get("stale_retry")]
                    continue
                # one event per probe (one sentence): the sends that met a fault, named by the kind of the answers
                # that never came, else by the stale connection their first try met
                hit = [a for a in answers if a.get("stale_retry") or not a.get("status")]
                if not hit:
                    continue
                kinds = [k for a in hit if not a.get("status")
                         and (k := fault_kind(a.get("status"), a.get("error"))) in TRANSPORT]
                out.append({"part": part, "kind": Counter(kinds).most_common(1)[0][0] if kinds else "stale_connection",
                            "count": len(hit), "sends": len(answers), "probe": record.get("probe"),
                            "path": record.get("sent_path") or record.get("path"),
                            "retried": [a.get("status") or 0 for a in answers if a.get("stale_retry")],
                            "others": sorted({a.get("status") or 0 for a in answers
                                              if a.get("status") and not a.get("stale_retry")}),
                            **({"every_send": True} if never_answered(record) else {})})
        if stale:
            out.append({"part": part, "kind": "stale_connection", "count": len(stale), "retried": sorted(set(stale))})
    return out[:EVENTS_KEPT]


def target_faults(attempt: Attempt, name: str) -> dict[str, Any] | None:
    """One server's figures, or None where nothing of it was captured."""
    by_kind: Counter[str] = Counter()
    parts: dict[str, dict[str, Any]] = {}
    usual = usual_dim(r.get("dim") for r in _records(attempt, name, "workload") if not r.get("error"))
    for part in PARTS:
        total, kinds = count_kinds(_records(attempt, name, part, usual))
        if total:
            parts[part] = {"answers": total, "unusable": sum(kinds.values()), "by_kind": kinds}
        by_kind.update(kinds)
    answers = sum(p["answers"] for p in parts.values())
    if not answers:
        return None
    unusable = sum(by_kind.values())
    events = _events(attempt, name)
    return {"answers": answers, "unusable": unusable, "share": round(unusable / answers, 4),
            # silent corruption (a CORRUPT kind) is a finding at any count, transport faults by rate: both are
            # decisions.faults' to say (analysis.faults), not a flag here
            "by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
            "by_part": {p: v["unusable"] for p, v in parts.items() if v["unusable"]}, "parts": parts,
            **({"events": events} if events else {})}


def faults_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    found = {name: target_faults(attempt, name) for name in experiment.target_order()}
    return {"by_target": {name: figures for name, figures in found.items() if figures is not None}}
