"""Decisions drawn from a summary's measured sections, stored in ``summary.json`` under ``decisions``.

Each module here reads typed-enough summary sections and returns language-neutral codes and figures: the client
changes a migration needs (:mod:`.client_changes`), whether search ranking stays the legacy one, with a paired
test (:mod:`.ranking_verdict`, :mod:`.ranking_tests`), per language (:mod:`.slices`, also the document cosine), the
latency ratios with their intervals, their verdicts against the margins (error gate, host drift) and the lock's share
of the concurrent gap (:mod:`.latency_ratios`, :mod:`.latency_verdicts`, :mod:`.host_drift`, :mod:`.intervals`,
:mod:`.latency_intervals`), what the client
shim closed or left open (:mod:`.shim_outcome`), what article 003's parity matrix found (:mod:`.parity_matrix`), the multimodal part (:mod:`.parity_multimodal`)
why a server's vectors differ (:mod:`.diagnosis`) and its unusable answers judged by kind and rate (:mod:`.faults`). The report only formats what is stored; a user's CI reads the
same codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from embedswap.analysis import (capacity, client_changes, diagnosis, faults, index_decision, index_options,
                                latency_ratios,
                                latency_shown, parity_matrix, parity_multimodal, post, post_document, ranking_verdict, shim_outcome,
                                slices)
from embedswap.config.decisions import DecisionsConfig
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import Decisions, LatencyDecisions, RankingDecision
from embedswap.summary.types_faults import FaultDecisions
from embedswap.summary.types_post import LatencyShown, PostDecision


@dataclass(frozen=True)
class PostParts:
    """The two decisions drawn from the stored ones (``shown``, ``post``): what the migrations add to decisions stored
    without them."""
    shown: LatencyShown
    post: PostDecision


def decisions_config(summary: SummaryBody) -> DecisionsConfig:
    """``decisions`` of the experiment the summary carries, else the defaults: the one place a summary's margins are
    validated (a summary keeps experiment.yaml as the user wrote it). A ``decisions`` block that does not validate
    raises: deciding with other margins than the ones the user wrote would be a silent wrong answer."""
    configured = summary.experiment.config.get("decisions")  # open: experiment.yaml as the user wrote it
    return DecisionsConfig.model_validate(configured) if isinstance(configured, dict) else DecisionsConfig()


def decide(summary: SummaryBody, config: DecisionsConfig | None = None) -> Decisions:
    """Every decision of one summary (the ``decisions`` section), against ``config`` (the experiment's typed
    ``decisions``; None: the block the summary carries, validated here once and passed down). A
    :class:`~embedswap.summary.model.Summary` that already has decisions is read the same way (they are not
    consulted). Stored with :func:`decisions_json`."""
    config = config if config is not None else decisions_config(summary)
    # in dependency order: each decision reads the summary and the decisions above it only
    judged = faults.fault_decisions(summary, config)
    vectors = slices.vector_decisions(summary, config)
    changes = client_changes.client_changes(summary)
    latency = latency_ratios.latency_decisions(summary, config)
    ranking = ranking_verdict.ranking_verdicts(summary, config)
    options = index_options.index_options_decisions(summary, config)  # empty where no options were measured
    index = index_decision.index_decisions(summary, config, latency.points, options)
    decided = Decisions(
        client_changes=changes,
        ranking=ranking,
        latency=latency,
        index=index,
        shim=shim_outcome.shim_outcomes(summary),
        parity_matrix=parity_matrix.matrix_findings(summary),
        parity_multimodal=parity_multimodal.multimodal_finding(summary),
        diagnosis=diagnosis.diagnosis_decisions(summary),
        diagnosis_queries=diagnosis.diagnosis_query_decisions(summary),
        # the post's conclusions, and the figures it shows, last: they read the decisions above
        shown=latency_shown.latency_shown(summary, latency.points),
        post=post.post_decision(summary, latency, ranking, judged),
    )
    # set only when there is one: summary.json has no ``capacity``/``vectors``/... key otherwise
    if summary.capacity is not None:
        decided.capacity = capacity.capacity_decisions(summary, config)
    if vectors:
        decided.vectors = vectors
    if judged is not None:
        decided.faults = judged
    if options:
        decided.index_options = options
    # the post's statements, last of all: they read every decision above (the index's condition, the faults)
    decided.post.document = post_document.post_document(summary, decided)
    return decided


def post_decisions(summary: SummaryBody, stored: dict[str, Any]) -> PostParts:
    """``shown`` and ``post`` alone, from the latency, ranking and faults decisions a summary already stores (one
    decided before they existed); ``stored`` is that summary's ``decisions`` as JSON, read here into the models (the
    faults decided now where the summary stores none: a pure function of its faults section)."""
    latency = LatencyDecisions.model_validate(stored.get("latency") or {})
    ranking = RankingDecision.model_validate(stored["ranking"]) if stored.get("ranking") else None
    judged = (FaultDecisions.model_validate(stored["faults"]) if stored.get("faults")
              else faults.fault_decisions(summary, decisions_config(summary)))
    return PostParts(shown=latency_shown.latency_shown(summary, latency.points),
                     post=post.post_decision(summary, latency, ranking, judged))


def decisions_json(decisions: Decisions) -> dict[str, Any]:  # the JSON boundary: summary.json's section as a dict
    """The ``decisions`` section as summary.json stores it: only the keys the analysis set (an absent optional
    key stays absent, as before the model)."""
    return decisions.model_dump(mode="python", by_alias=True, exclude_unset=True)
