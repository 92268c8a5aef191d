"""summary.json's ``contract`` section: each probe's answers and the verdict per candidate."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import DEFAULT_PROBE_PATH
from embedswap.answers.classify import classify
from embedswap.answers.repeats import spread
from embedswap.reasons import not_measured


def _probe_side(record: dict[str, Any] | None, threshold: float) -> dict[str, Any]:
    if record is None:
        return {"status": None, "measured": False}
    keep = ("status", "error", "encoding", "dim", "n_vectors", "prompt_tokens", "latency_ms", "tokenizer_tokens",
            "model", "token_limit")
    vector = record.get("vector")
    # the first vector's L2 length: cosine cannot see a scaled or sliced-without-renormalising answer, this can
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64))) if vector else None
    if record.get("not_applicable"):  # the target's API shape cannot say this probe: nothing was sent
        return {"measured": True, "status": None, "not_applicable": True, "api_shape": record.get("api_shape"),
                "not_applicable_field": record.get("not_applicable_field")}
    repeats = spread(record, threshold)
    return {"measured": True, **{k: record.get(k) for k in keep}, "norm": norm,
            **({"repeats": repeats.record()} if repeats is not None else {}),
            **({"prefix_cache": record["prefix_cache"]} if record.get("prefix_cache") else {})}


def contract_section(experiment: Experiment, attempt: Attempt) -> list[dict[str, Any]] | dict[str, Any]:
    probes: dict[str, dict[str, dict[str, Any]]] = {}
    order: list[str] = []
    descriptions: dict[str, tuple[str, Any]] = {}
    for name in experiment.target_order():
        if not attempt.has(f"{name}/probes.jsonl"):
            continue
        for record in attempt.read_jsonl(f"{name}/probes.jsonl"):
            if record["probe"] not in order:
                order.append(record["probe"])
                descriptions[record["probe"]] = (record.get("description", ""), record.get("sent"))
            probes.setdefault(record["probe"], {})[name] = record
    if not order:
        return not_measured("no_probe_captures")
    threshold = experiment.parity.text_threshold
    rows = []
    for probe in order:
        answers = probes[probe]
        legacy = answers.get(experiment.legacy)
        first = next(iter(answers.values()))
        compare_to = first.get("compare_to")
        if compare_to:  # a route the legacy server lacks: its answer to the named probe is the reference
            legacy = probes.get(compare_to, {}).get(experiment.legacy)
        row: dict[str, Any] = {
            "probe": probe,
            "description": descriptions[probe][0],
            "sent": descriptions[probe][1],
            "path": first.get("path", DEFAULT_PROBE_PATH),
            "compare_to": compare_to,
            "legacy": _probe_side(legacy, threshold),
            "candidate": _probe_side(answers.get(experiment.primary_candidate), threshold),
            "by_target": {n: _probe_side(answers.get(n), threshold) for n in experiment.target_order()},
            "verdicts": {},
        }
        for name in experiment.candidates:
            candidate = answers.get(name)
            if legacy is None or candidate is None:
                row["verdicts"][name] = {"verdict": None, "detail": "not measured on both servers", "cosine": None}
            else:
                row["verdicts"][name] = classify(legacy, candidate, threshold).record()
        primary = row["verdicts"][experiment.primary_candidate]
        row.update(verdict=primary["verdict"], detail=primary["detail"], cosine=primary["cosine"],
                   aspects=primary.get("aspects", []),
                   **({"detail_reason": primary["detail_reason"]} if "detail_reason" in primary else {}))
        rows.append(row)
    return rows
