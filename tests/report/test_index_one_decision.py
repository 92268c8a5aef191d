"""One index decision per candidate (issue 62): the report's index sentence, the post's index line and the
another-model closing all say ``decisions.index.<c>.choice``, for every candidate of every rendered fixture and of
the index summary (two candidates: one keeps the index, one re-embeds), in every language."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from index_summary import summary_with_index

from embedswap.analysis.upgrade import read_summary
from embedswap.report import post_claims
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.sections.context import ReportContext
from embedswap.report.sections.index import _candidate
from embedswap.summary.model import Summary
from embedswap.summary.types_index import IndexDecision

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _summaries(complete_upgraded: dict[str, Any]) -> list[Summary]:
    found = [read_summary(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(FIXTURES.glob("summary_*.json"))]
    with_index = read_summary(summary_with_index(complete_upgraded))
    # the same summary with the options deciding one candidate (a map), as a model change's run stores it
    by_options = with_index.model_copy(deep=True)
    name = next(iter(by_options.decisions.index))
    by_options.decisions.index[name] = by_options.decisions.index[name].model_copy(
        update={"choice": "map", "map_kind": "affine", "decided_on": "options"})
    return [*found, with_index, by_options]


def _said(ctx: ReportContext, name: str, decision: IndexDecision) -> tuple[str, str]:
    """(the report's message key and option words, the post's index line choice or '')."""
    words = _candidate(ctx, name, decision)
    post = {c.name.strip("`"): c.choice for c in post_claims.index_claims(ctx)}
    return words["decision"], post.get(name, words["option"])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_report_and_the_post_say_the_one_index_decision(complete_upgraded: dict[str, Any], lang: str) -> None:
    walked = 0
    for summary in _summaries(copy.deepcopy(complete_upgraded)):
        ctx = ReportContext(summary, lang, {}, None, None, None, None)
        names = ctx.terms["index_options"]["names"]
        for name, decision in summary.decisions.index.items():
            key, post = _said(ctx, name, decision)
            if decision.decided_on == "options":
                # said once, as the options chose it: the report's by_options sentence; no sample line in the post
                assert (key, post) == ("by_options", names[decision.option]), (name, decision)
            else:
                assert key in (decision.choice, "re_embed_mixed") and post == decision.choice, (name, decision)
                assert key != "re_embed_mixed" or decision.choice == "re_embed"
            walked += 1
    assert walked >= 3  # the index summary's two candidates and the options-decided one at least

