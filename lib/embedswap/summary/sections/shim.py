"""The shim section: the contract probes again, through the client migration shim, classified against legacy.

Reads ``captures/<candidate>/shim_probes.jsonl`` (written by ``embedswap.measure.capture.capture_shim_probes``) and
``captures/<legacy>/probes.jsonl``, and classifies each probe with ``embedswap.answers.classify`` exactly as the
contract section does for the bare candidate. Each row also carries the bare candidate's verdict
(``naive_verdicts``), so the report can show before/after: which differences the shim closes and which remain.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import DEFAULT_PROBE_PATH
from embedswap.answers.classify import classify
from embedswap.reasons import not_measured

_SIDE_KEYS = ("status", "error", "encoding", "dim", "n_vectors", "prompt_tokens", "latency_ms")




def _side(record: dict[str, Any] | None) -> dict[str, Any]:
    if record is None:
        return {"status": None, "measured": False}
    return {"measured": True, **{k: record.get(k) for k in _SIDE_KEYS}}


def _verdict(legacy: dict[str, Any] | None, other: dict[str, Any] | None, threshold: float,
             against_request: bool = False) -> dict[str, Any]:
    if legacy is None or other is None:
        return {"verdict": None, "detail": "not measured on both servers", "cosine": None}
    return classify(legacy, other, threshold, against_request=against_request).record()


def _records(attempt: Attempt, relative: str) -> dict[str, dict[str, Any]]:
    if not attempt.has(relative):
        return {}
    return {r["probe"]: r for r in attempt.read_jsonl(relative)}


def shim_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    """``{"measured", "rows", "counts", "config"}``; rows like the contract section's, verdicts for the shim.

    Row keys: probe, description, sent, legacy, candidate (the primary candidate through the shim), by_target
    (legacy + every candidate through the shim), verdicts / naive_verdicts (per candidate: through the shim /
    bare), shim (per candidate: rewrites, attempts, whether the shim answered itself), and verdict, detail,
    cosine, naive_verdict for the primary candidate.
    """
    legacy = _records(attempt, f"{experiment.legacy}/probes.jsonl")
    if not legacy:
        return not_measured("no_legacy_probe_captures", name=experiment.legacy)
    shimmed = {name: _records(attempt, f"{name}/shim_probes.jsonl") for name in experiment.candidates}
    naive = {name: _records(attempt, f"{name}/probes.jsonl") for name in experiment.candidates}
    if not any(shimmed.values()):
        return not_measured("no_shim_probes")
    threshold = experiment.parity.text_threshold
    # the shim is a /v1/embeddings client: probes of other routes (vLLM's /v2/embed) are not sent through it
    order = [p for p, r in legacy.items() if r.get("path", DEFAULT_PROBE_PATH) == DEFAULT_PROBE_PATH]
    for records in shimmed.values():
        order += [p for p in records if p not in order]
    primary = experiment.primary_candidate
    rows = []
    counts: dict[str, dict[str, dict[str, int]]] = {
        name: {"naive": Counter(), "shim": Counter()} for name in experiment.candidates if shimmed[name]
    }
    for probe in order:
        base = legacy.get(probe)
        first = base or next(r[probe] for r in shimmed.values() if probe in r)
        row: dict[str, Any] = {
            "probe": probe,
            "description": first.get("description", ""),
            "sent": first.get("sent"),
            "legacy": _side(base),
            "candidate": _side(shimmed[primary].get(probe)),
            "by_target": {experiment.legacy: _side(base),
                          **{n: _side(shimmed[n].get(probe)) for n in experiment.candidates}},
            "verdicts": {},
            "naive_verdicts": {},
            "shim": {},
        }
        for name in experiment.candidates:
            through = shimmed[name].get(probe)
            row["verdicts"][name] = _verdict(base, through, threshold)
            # the bare candidate read as the contract section reads it (its departures that legacy shares aside)
            row["naive_verdicts"][name] = _verdict(base, naive[name].get(probe), threshold, against_request=True)
            info = (through or {}).get("shim") or {}
            row["shim"][name] = {"rewrites": info.get("rewrites"), "attempts": info.get("attempts"),
                                 "local": info.get("local"), "sent_upstream": info.get("sent_upstream")}
            if name in counts:
                for kind, key in (("shim", "verdicts"), ("naive", "naive_verdicts")):
                    verdict = row[key][name]["verdict"]
                    if verdict is not None:
                        counts[name][kind][verdict] += 1
        main = row["verdicts"][primary]
        row.update(verdict=main["verdict"], detail=main["detail"], cosine=main["cosine"],
                   naive_verdict=row["naive_verdicts"][primary]["verdict"])
        rows.append(row)
    config = {name: attempt.read_json(f"{name}/shim_config.json") if attempt.has(f"{name}/shim_config.json") else None
              for name in experiment.candidates}
    return {
        "measured": bool(shimmed[primary]),
        **({} if shimmed[primary] else
           {k: v for k, v in not_measured("not_probed_through_shim", name=primary).items() if k != "measured"}),
        "rows": rows,
        "counts": {name: {kind: dict(c) for kind, c in kinds.items()} for name, kinds in counts.items()},
        "config": config,
        "sources": {name: f"captures/{name}/shim_probes.jsonl" for name in experiment.candidates if shimmed[name]},
    }
