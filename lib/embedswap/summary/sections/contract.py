"""summary.json's ``contract`` section: each probe's answers and the verdict per candidate."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.summary.types_plan import Plan
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import DEFAULT_PROBE_PATH
from embedswap.answers.classify import classify, departures
from embedswap.answers.repeats import representative, spread
from embedswap.reasons import explain, not_measured, reason
from embedswap.stats.vectors import pair_cosine
from embedswap.wire.api_shapes import ANSWER_LACKS


def api_shape(experiment: Experiment, name: str) -> str:
    """The API shape a target speaks (only an external target names one; the kit's servers speak OpenAI's)."""
    return str(getattr(experiment.targets[name], "api_shape", "openai"))


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


# probes that send the `plain` probe's text (`$doc`) with one option changed: a server's answer to them should be its
# own plain answer. For a candidate of another model the vectors cannot be compared across the two servers, so these
# are compared within each server (issue 57): a server whose answer moves away from its own plain answer where the
# other's does not answers the request otherwise (token ids are left out: they are the legacy tokenizer's ids)
WITHIN_PLAIN = ("dimensions_native", "encoding_base64", "encoding_float", "batch8_member", "whitespace_padded",
                "unknown_model")


def within_server(probe: str, legacy: dict[str, Any] | None, candidate: dict[str, Any] | None,
                  plain: dict[str, dict[str, Any]], legacy_name: str, name: str, threshold: float
                  ) -> dict[str, float] | None:
    """Each server's answer to ``probe`` against its own answer to ``plain`` (cosine of the first vectors), where
    both servers answered both with a vector: ``{"legacy": ..., "candidate": ...}``; None otherwise."""
    if probe not in WITHIN_PLAIN or legacy is None or candidate is None:
        return None
    out = {}
    for side, record, own in (("legacy", legacy, plain.get(legacy_name)), ("candidate", candidate, plain.get(name))):
        if own is None:
            return None
        vector, base = representative(record, threshold).get("vector"), representative(own, threshold).get("vector")
        if not vector or not base or len(vector) != len(base):
            return None
        out[side] = round(float(pair_cosine(vector, base)), 6)
    return out


def _within_verdict(found: dict[str, Any], within: dict[str, float] | None, threshold: float) -> dict[str, Any]:
    """An ``another-model`` answer read within each server: the same behaviour keeps the verdict; one server's
    answer moving away from its own plain answer where the other's does not is a ``silent-divergence``."""
    if within is None or found.get("verdict") != "another-model":
        return found
    found = {**found, "within": within}
    if (within["legacy"] >= threshold) == (within["candidate"] >= threshold):
        return found
    params = {"legacy": f"{within['legacy']:.6f}", "candidate": f"{within['candidate']:.6f}"}
    return {**found, "verdict": "silent-divergence", "aspects": [*found.get("aspects", []), "within_server"],
            "detail": explain("detail_within_differs", **params),
            "detail_reason": reason("detail_within_differs", **params)}


ROUTE_NOT_SERVED = (404, 405)  # the legacy server has no such route (405: the path exists for another method)


def baseline(same_request: dict[str, Any] | None, candidate: dict[str, Any] | None, compare_to: str | None,
             fallback: dict[str, Any] | None) -> tuple[str | None, dict[str, Any] | None]:
    """(name of the probe whose legacy answer it is, that answer) a candidate's answer is read against.

    The legacy server's answer to the same request, always, but in one case: the probe names another probe
    (``compare_to``), the legacy server does not serve this route at all (404/405, or it was not sent there) *and*
    the candidate does (200); then the legacy server's answer to the named probe is the reference (the row says
    so). Two servers that both lack the route answer alike, whatever the other probe got."""
    served = candidate is not None and candidate.get("status") == 200
    lacks = same_request is None or same_request.get("status") in ROUTE_NOT_SERVED
    if compare_to and fallback is not None and served and lacks:
        return compare_to, fallback
    return None, same_request


def contract_section(experiment: Experiment, attempt: Attempt, plan: Plan | None = None
                     ) -> list[dict[str, Any]] | dict[str, Any]:
    """The probe rows, each candidate's read as its ``plan`` says (sections.plan): a candidate whose probes are read
    against its own answers (another model) is compared on status and shape (answers.classify's ``read_against``)
    and, where a probe repeats ``plain``'s text, within each server (:func:`within_server`). No plan: every
    candidate against the legacy server's answers."""
    plan = plan or Plan(measured=False)
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
        first = next(iter(answers.values()))
        compare_to = first.get("compare_to")
        same_request = answers.get(experiment.legacy)
        fallback = probes.get(compare_to, {}).get(experiment.legacy) if compare_to else None
        baselines = {name: baseline(same_request, answers.get(name), compare_to, fallback)
                     for name in experiment.candidates}
        primary_base = baselines.get(experiment.primary_candidate, (None, None))
        row: dict[str, Any] = {
            "probe": probe,
            "description": descriptions[probe][0],
            "sent": descriptions[probe][1],
            "path": first.get("path", DEFAULT_PROBE_PATH),
            "compare_to": compare_to,
            "legacy": _probe_side(primary_base[1] if primary_base[1] is not None else same_request, threshold),
            "candidate": _probe_side(answers.get(experiment.primary_candidate), threshold),
            "by_target": {n: _probe_side(answers.get(n), threshold) for n in experiment.target_order()},
            "conformance": {n: found for n, r in answers.items()
                            if not r.get("not_applicable") and (found := departures(representative(r, threshold)))},
            "verdicts": {},
        }
        for name in experiment.candidates:
            candidate = answers.get(name)
            against, legacy = baselines[name]
            if legacy is None or candidate is None:
                row["verdicts"][name] = {"verdict": None, "detail": "not measured on both servers", "cosine": None}
            else:
                read_against = plan.probes_against(name)
                found = {**classify(legacy, candidate, threshold, read_against=read_against,
                                    shape_lacks=ANSWER_LACKS.get(api_shape(experiment, name), frozenset())).record(),
                         **({"baseline": against} if against else {})}
                if read_against == "own" and against is None:
                    found = _within_verdict(found, within_server(probe, legacy, candidate, probes.get("plain", {}),
                                                                 experiment.legacy, name, threshold), threshold)
                row["verdicts"][name] = found
        primary = row["verdicts"][experiment.primary_candidate]
        row.update(verdict=primary["verdict"], detail=primary["detail"], cosine=primary["cosine"],
                   aspects=primary.get("aspects", []),
                   **({"detail_reason": primary["detail_reason"]} if "detail_reason" in primary else {}))
        rows.append(row)
    return rows
