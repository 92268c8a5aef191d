"""summary.json's ``matryoshka`` and ``restore`` sections: a reduced-dimension variant and the restored legacy server."""

from __future__ import annotations

from typing import Any


from embedswap.summary.sections.captured import target_missing
from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.answers.classify import classify
from embedswap.reasons import not_measured


def matryoshka_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    """`dimensions` probes on the base engine and on the variant started with the Matryoshka override, and whether
    the variant's cut vector matches the legacy server's cut-and-renormalise."""
    if experiment.matryoshka is None:
        return not_measured("no_matryoshka")
    base, variant = experiment.matryoshka.base, experiment.matryoshka.variant
    sides = {role: {r["probe"]: r for r in attempt.read_jsonl(f"{n}/probes.jsonl")} if attempt.has(f"{n}/probes.jsonl")
             else None for role, n in (("legacy", experiment.legacy), ("base", base), ("variant", variant))}
    if sides["variant"] is None or sides["legacy"] is None:
        return target_missing(attempt, variant) or not_measured("no_matryoshka_probes", name=variant)
    rows = []
    for probe in ("dimensions_native", "dimensions_reduced"):
        legacy = sides["legacy"].get(probe) or {}
        with_override = sides["variant"].get(probe) or {}
        without = (sides["base"] or {}).get(probe) or {}
        row: dict[str, Any] = {
            "probe": probe,
            "sent": with_override.get("sent"),
            "legacy": {"status": legacy.get("status"), "dim": legacy.get("dim")},
            "without_override": {"status": without.get("status"), "dim": without.get("dim"),
                                 "error": without.get("error")},
            "with_override": {"status": with_override.get("status"), "dim": with_override.get("dim"),
                              "error": with_override.get("error")},
            "cosine_to_legacy_cut": None,
        }
        if legacy.get("vector") is not None and with_override.get("vector") is not None:
            row["cosine_to_legacy_cut"] = classify(legacy, with_override).cosine
        rows.append(row)
    works = all(r["with_override"]["status"] == 200 for r in rows)
    return {"measured": True, "base": base, "variant": variant, "override_works": works, "rows": rows,
            "command": (attempt.read_json(f"{variant}/target.json").get("commands")
                        if attempt.has(f"{variant}/target.json") else None)}


def restore_section(experiment: Experiment, attempt: Attempt) -> dict[str, Any]:
    if not experiment.sequencing.restore_legacy:
        return not_measured("restore_off")
    relative = f"{experiment.legacy}/restore.json"
    if not attempt.has(relative):
        return not_measured("restore_not_run")
    record = attempt.read_json(relative)
    again = f"{experiment.legacy}/restore"
    if attempt.has(f"{again}/latency_stats.json"):  # the legacy server measured again (A-B-A)
        from embedswap.summary.sections.latency import latency_stats_with_requests

        record["latency"] = {"measured": True, **latency_stats_with_requests(attempt, again),
                             "source": f"captures/{again}/latency_requests.jsonl"}
    return {"measured": True, **record, "source": f"captures/{relative}"}
