"""summary.json's ``faults`` section: per server, its unusable answers by kind (measure.answer_faults).

Counted over the requests that are well-formed by construction: the workload's batches, the queries, the latency
runs, and the probes' answers where the answer itself failed (a 200 that cannot be used, a cut or missing answer);
a probe's 4xx or 5xx to a request built to be refused is the probe's verdict, not a fault of the server's answers.
"""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.wire.answer_faults import CORRUPT, count_kinds, other_length, usual_dim

PARTS = {"workload": ("workload_requests.jsonl",), "queries": ("query_requests.jsonl",),
         "latency": ("latency_requests.jsonl", "latency_sweep_requests.jsonl"), "probes": ("probes.jsonl",)}


def _records(attempt: Attempt, name: str, part: str, usual: int | None = None) -> list[dict[str, Any]]:
    """The answers of one capture; a probe's one-vector answer of another length than ``usual`` (the length of
    the server's workload answers) is marked as such, unless the probe asked for ``dimensions``."""
    out: list[dict[str, Any]] = []
    for file in PARTS[part]:
        if not attempt.has(f"{name}/{file}"):
            continue
        for record in attempt.read_jsonl(f"{name}/{file}"):
            if part != "probes":
                out.append(record)
                continue
            if record.get("not_applicable"):
                continue
            asked = isinstance(record.get("sent"), dict) and "dimensions" in record["sent"]
            for answer in [record, *(record.get("repeats") or [])]:
                if answer.get("status") not in (200, 0):
                    continue  # a refusal of a request built to be refused: the probe's verdict
                dim = answer.get("dim")
                if (usual is not None and not asked and answer.get("status") == 200 and not answer.get("error")
                        and isinstance(dim, int) and dim != usual):
                    answer = {**answer, "error": other_length(dim, usual)}
                out.append(answer)
    return out


def target_faults(attempt: Attempt, name: str) -> dict[str, Any] | None:
    """One server's figures, or None where nothing of it was captured."""
    answers = 0
    by_kind: dict[str, int] = {}
    by_part: dict[str, int] = {}
    usual = usual_dim(r.get("dim") for r in _records(attempt, name, "workload") if not r.get("error"))
    for part in PARTS:
        total, kinds = count_kinds(_records(attempt, name, part, usual))
        answers += total
        for kind, count in kinds.items():
            by_kind[kind] = by_kind.get(kind, 0) + count
        if kinds:
            by_part[part] = sum(kinds.values())
    if not answers:
        return None
    unusable = sum(by_kind.values())
    return {"answers": answers, "unusable": unusable, "share": round(unusable / answers, 4),
            "by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
            "corrupting": any(kind in CORRUPT for kind in by_kind), "by_part": by_part}


def faults_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    found = {name: target_faults(attempt, name) for name in experiment.target_order()}
    return {"by_target": {name: figures for name, figures in found.items() if figures is not None}}
