"""A minimal valid typed summary from the few keys a test cares about, so analysis tests stay short.

``summary_body({"roles": {...}, "ranking": {...}})`` fills every other required key with a placeholder: the info
objects (experiment, model, workload, roles) are merged key by key over theirs, a section given is taken whole (a
section not given is not measured). Validation is the model's own: a key the model does not know fails here too."""
from __future__ import annotations

import copy
import json
from typing import Any

from embedswap.analysis import decide, decisions_json
from embedswap.reasons import not_measured
from embedswap.summary.model import Summary, SummaryBody, validate_body
from embedswap.analysis import upgrade
from embedswap.analysis.upgrade import read_summary
from memo import memoised

# merged key by key: a test names only the field it means (a model spec, a candidate list)
INFO = {"experiment": {"name": "synthetic", "date": "2026-11-30", "folder": "experiments/synthetic",
                       "attempt": "2026-11-30T09-00-00"},
        "model": {"spec": "package:x"},
        "workload": {"documents": 0},
        "roles": {"legacy": "legacy"}}
# taken whole when given (a measured section must not inherit the placeholder's why)
SECTIONS = ("vectors", "contract", "instruction", "ablation", "parity", "ranking", "shim")


def body_dict(partial: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary as a dict: ``partial`` over the placeholders (what :func:`summary_body` validates)."""
    partial = copy.deepcopy(partial or {})
    out: dict[str, Any] = {"schema_version": 4, "generated": "2026-11-30T09:00:00"}
    for key, base in INFO.items():
        out[key] = {**base, **partial.pop(key, {})}
    for key in SECTIONS:
        out[key] = not_measured("section_absent")
    out["latency"] = {}
    out.update(partial)
    return out


def summary_body(partial: dict[str, Any] | None = None) -> SummaryBody:
    """The typed :class:`SummaryBody` of ``partial`` over the placeholders (see the module's docstring)."""
    return SummaryBody.model_validate(body_dict(partial))


def typed_summary(summary: dict[str, Any]) -> Summary:
    """A whole summary.json dict of any version (a fixture, changed by the test) as the report reads it: upgraded,
    then the typed :class:`Summary`."""
    return read_summary(summary)


def decisions_of(summary: dict[str, Any]) -> dict[str, Any]:
    """The ``decisions`` a whole summary.json dict of any version has, as stored (``summary["decisions"] = ...``).
    Once per distinct summary in a test process (memo.py): the capacity and index summaries' builders and the tests
    that change them the same way in each language decided the same summary again, ~0.6 s a time (issue 61)."""
    def compute() -> dict[str, Any]:
        # upgrade's module attribute: the upgrade memo of tests/conftest.py, not the function bound at import
        return decisions_json(decide(validate_body(upgrade.upgrade_summary(summary))))

    try:
        key = json.dumps(summary, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):  # not JSON: nothing to remember
        return compute()
    return memoised("decisions", key, compute)


def as_typed(summary: Summary | dict[str, Any]) -> Summary:
    """What a test hands the kit's readers: a fixture's summary.json dict read as the report reads it (upgraded, then
    typed); a typed summary as it is. The kit's readers take the typed summary only (issue 62)."""
    return summary if isinstance(summary, Summary) else read_summary(summary)


def post_redrawn(summary: Summary) -> Summary:
    """``summary`` (changed in place by a test: its verdicts set by hand) with the post's decisions and its
    document drawn again from its decisions, as :func:`embedswap.analysis.decide` draws them from its own."""
    from embedswap.analysis.post import post_decision
    from embedswap.analysis.post_document import post_document

    d = summary.decisions
    d.post = post_decision(summary, d.latency, d.ranking if d.ranking.by_candidate else None, d.faults)
    d.post.document = post_document(summary, d)
    return summary
