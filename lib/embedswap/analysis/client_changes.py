"""'What to change in the client before migrating', derived by rule from the contract verdicts.

A rule maps a probe (by name) and a verdict to a change; evaluated per candidate, the first matching probe rule
wins, and ``no_retry_5xx`` applies to every retry-hazard the candidate causes in addition. Custom probes fall back
to ``review``. Each change also says what the client shim did about it (done: every probe of it answers 'same'
through the shim; or what remains). The report words each rule in its catalogue (``terms.changes.<rule>``).
"""

from __future__ import annotations

from collections.abc import Callable

from embedswap.analysis.common import api_shape, failed_status, roles, shim_rows, shimmed, verdict_of
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import ChangeHit, ClientChange, ShimLeft, ShimStatus
from embedswap.summary.types_sections import ShimRow
from embedswap.summary.types_vectors import ProbeRow

NOT_SAME = {"silent-divergence", "loud-failure", "retry-hazard", "format-difference", "empty-200"}
CHANGE_RULES: list[tuple[str, Callable[[str], bool], set[str]]] = [
    ("plain_differs", lambda p: p == "plain", NOT_SAME),
    ("drop_dimensions", lambda p: p.startswith("dimensions"), NOT_SAME),
    ("prepend_instruction", lambda p: p in ("input_type_query", "instruction_field", "v2_embed_query"), NOT_SAME),
    ("truncate", lambda p: p == "over_long_input", NOT_SAME),
    ("decode_encoding", lambda p: p.startswith("encoding"), NOT_SAME),
    ("cap_batch", lambda p: p == "large_batch", {"loud-failure", "retry-hazard"}),
    ("validate_input", lambda p: p in ("empty_list", "empty_string", "wrong_type", "non_json_body"), NOT_SAME),
    ("send_text", lambda p: p == "token_ids", NOT_SAME),
    ("model_name", lambda p: p == "unknown_model", NOT_SAME),
    ("strip_whitespace", lambda p: p == "whitespace_padded", NOT_SAME),
    ("normalise_unicode", lambda p: p == "unicode_mixed", NOT_SAME),
    ("batch_invariance", lambda p: p == "batch8_member", NOT_SAME),
    ("review", lambda p: True, NOT_SAME),
]
CROSS_RULES: list[tuple[str, set[str]]] = [("no_retry_5xx", {"retry-hazard"})]
# Rules keyed by the aspect that differs (contract.classify's ``aspects``), in addition to the probe's rule.
ASPECT_RULES: list[tuple[str, str]] = [("renormalise", "length"), ("count_tokens", "usage"),
                                       ("order_by_index", "order"),
                                       # the candidate's answer against its own request (measure.request_checks)
                                       ("check_embeddings", "no_embeddings"), ("index_complete", "index"),
                                       ("count_vectors", "count_asked"), ("check_model", "model_asked"),
                                       ("check_encoding", "encoding_asked"), ("usage_truncated", "usage_truncation")]
# An aspect rule that does not apply where the answer also points elsewhere: the candidate embedded another input
# (an ignored instruction: legacy counted the prompt's tokens, the candidate the bare query's), so its usage counts
# that input right and counting tokens client-side fixes nothing (issue 63: "count it in the client" where usage
# was present and equal to the tokenizer's count).
ASPECT_UNLESS = {"count_tokens": "direction"}
# A property of the candidate's API shape (issue 64): TEI's answer carries no usage. One change for the shape,
# stated once with the probes it touched, where the per-probe verdicts leave it uncompared (ProbeReading.shape)
SHAPE_RULE = "shape_usage"
# Rules that apply only when the candidate is the side that failed (status other than 200).
CANDIDATE_SIDE_RULES = {"cap_batch"}
# A candidate whose workload answers came back with data[] out of `index` order (the vectors section's
# ``index_order_ok``) or a probe whose did (aspect ``order``): the kit re-sorted them, a client reading data[]
# positionally would not. Listed last.
ORDER_RULE = "order_by_index"
RULE_ORDER = [SHAPE_RULE, *(k for k, _, _ in CHANGE_RULES), *(k for k, _ in CROSS_RULES),
              *(k for k, _ in ASPECT_RULES if k != ORDER_RULE)]


def _reordered(summary: SummaryBody) -> list[ChangeHit]:
    by_target = summary.vectors.by_target
    _, candidates = roles(summary)
    return [ChangeHit(probe="workload", candidate=name, verdict="index-order")
            for name in candidates if name in by_target and by_target[name].index_order_ok is False]


def _rescaled(summary: SummaryBody) -> list[ChangeHit]:
    """Candidates whose workload vectors differ from legacy's in length (vectors.comparisons.norm_ratio)."""
    comparisons = summary.vectors.comparisons
    _, candidates = roles(summary)
    return [ChangeHit(probe="workload", candidate=name, verdict="silent-divergence", aspects=["length"])
            for name in candidates
            if name in comparisons and comparisons[name].norm_ratio is not None and comparisons[name].norm_ratio.differs
            and not summary.plan.another_model(name)]  # another model's lengths are its own, not a rescaled answer


def _status(row: ProbeRow | ShimRow, name: str) -> int | None:
    side = row.by_target.get(name)
    return side.status if side is not None else None


def _hits(contract: list[ProbeRow]) -> dict[str, list[ChangeHit]]:
    """Rule -> the (probe, candidate, verdict) entries it matched."""
    found: dict[str, list[ChangeHit]] = {}
    for row in contract:
        probe = row.probe
        for candidate, verdict in row.verdicts.items():
            v = verdict.verdict
            if not v:
                continue
            status = _status(row, candidate)
            hit = ChangeHit(probe=probe, candidate=candidate, verdict=v)
            if verdict.aspects:  # what differs, for the advice's wording (plain_differs); else absent
                hit.aspects = list(verdict.aspects)
            for key, matches, verdicts in CHANGE_RULES:
                if matches(probe):
                    # a large batch that only the legacy server failed (the candidate answered it) changes nothing
                    if v in verdicts and not (key in CANDIDATE_SIDE_RULES and status == 200):
                        found.setdefault(key, []).append(hit)
                    break
            for key, verdicts in CROSS_RULES:
                # only a hazard the candidate causes changes the client (a legacy 5xx goes away with the swap)
                if v in verdicts and failed_status(row, candidate):
                    found.setdefault(key, []).append(hit)
            for key, aspect in ASPECT_RULES:
                if aspect in verdict.aspects and ASPECT_UNLESS.get(key) not in verdict.aspects:
                    found.setdefault(key, []).append(hit)
            if "usage" in verdict.shape:
                found.setdefault(SHAPE_RULE, []).append(hit)
    return found


def legacy_side_status(row: ProbeRow | ShimRow, legacy: str, name: str) -> int | None:
    """The legacy server's failing status when a difference remains only because legacy failed and ``name``
    answered 200 (it goes away with the swap); None otherwise."""
    status, other = _status(row, legacy), _status(row, name)
    if isinstance(status, int) and (status == 0 or status >= 500) and other == 200:
        return status
    return None


def _through_shim(summary: SummaryBody, hits: list[ChangeHit]) -> ShimStatus:
    """What the shim did about one change: probed at all, done, and the probes still different through it."""
    rows = {r.probe: r for r in shim_rows(summary)}
    through = set(shimmed(summary))
    legacy = summary.roles.legacy
    left: list[ShimLeft] = []
    probed = False
    for hit in hits:
        if hit.candidate not in through or hit.probe not in rows:
            continue
        row = rows[hit.probe]
        after = verdict_of(row, "verdicts", hit.candidate)
        if after is None:
            continue
        probed = True
        if after != "same":
            left.append(ShimLeft(probe=hit.probe, candidate=hit.candidate, verdict=after,
                                 legacy_status=legacy_side_status(row, legacy, hit.candidate)))
    return ShimStatus(probed=probed, done=probed and not left, left=left)


def client_changes(summary: SummaryBody) -> list[ClientChange]:
    """The client changes, in rule order (no_retry_5xx last): ``{rule, probes, params, shim}``.

    ``params`` holds what the sentence needs: the legacy server's truncation length (``limit_tokens``), the
    experiment's batch size (``batch``), and for ``review`` the probe and its verdicts.
    """
    contract = summary.contract
    if not isinstance(contract, list):
        return []
    found = _hits(contract)
    rescaled = _rescaled(summary)
    if rescaled:  # the workload's vectors say it too, whether or not a probe did
        found.setdefault("renormalise", []).extend(rescaled)
    legacy_tokens = {r.probe: r.legacy.prompt_tokens if r.legacy is not None else None for r in contract}
    batch = summary.workload.batch_size
    items: list[ClientChange] = []
    for key in RULE_ORDER:
        hits = found.get(key)
        if not hits:
            continue
        if key == "review":  # one item per reviewed probe
            for probe in dict.fromkeys(h.probe for h in hits):
                mine = [h for h in hits if h.probe == probe]
                verdicts = list(dict.fromkeys(h.verdict for h in mine))
                items.append(ClientChange(rule=key, probes=mine, params={"probe": probe, "verdicts": verdicts},
                                          shim=_through_shim(summary, mine)))
            continue
        params = {"batch": batch, "limit_tokens": legacy_tokens.get("over_long_input") if key == "truncate" else None}
        if key == SHAPE_RULE:  # the shapes that lack it, as configured (targets.<name>.api_shape)
            params = {"shape": ", ".join(dict.fromkeys(api_shape(summary, h.candidate) or "?" for h in hits))}
        items.append(ClientChange(rule=key, probes=hits, params=params, shim=_through_shim(summary, hits)))
    reordered = _reordered(summary) + found.get(ORDER_RULE, [])
    if reordered:  # the shim re-sorts by index (client.parse_response); not probed as a separate row
        items.append(ClientChange(rule=ORDER_RULE, probes=reordered, params={},
                                  shim=_through_shim(summary, reordered)))
    return items
