"""Summaries for the post's statements of issue 63 (tests/report/test_post_story.py): the complete summary with an
index part searched with the shim's queries (or the address swap's), index options both candidates decide alike,
a CPU host, and the stored latency and ranking verdicts set as a run would store them, the post's decisions then
drawn again from them (as ``decide`` draws them from its own)."""

from __future__ import annotations

import copy
import json
from typing import Any

from embedswap.analysis import decide, decisions_json
from embedswap.analysis.upgrade import read_summary
from embedswap.summary.model import Summary, validate_body
from embedswap.summary.types_equivalence import Verdict
from index_summary import summary_with_index
from typed_summary import post_redrawn

OPTIONS = ("re_embed", "keep", "orthogonal", "affine", "rescore", "dual_read")


def _interval(value: float) -> dict[str, Any]:
    return {"value": value, "low": value, "high": value, "n": 24}


def options(per_fold: int) -> dict[str, Any]:
    """One candidate's measured index options, every option as good as the re-embed: ``per_fold`` of 10 or fewer
    leaves them undecided (every option returns the whole fold), more decides the cheapest (keep)."""
    return {"measured": True, "folds": 5, "k": 10, "rescore_depth": 100, "dual_read_share": 0.5,
            "documents": per_fold * 5, "documents_per_fold": per_fold, "queries": 24, "training_pairs": 32,
            "mlp_min_pairs": 1000, "options": [
                {"option": o, "recall_at_10": _interval(1.0), "ndcg_at_10": _interval(0.68),
                 "ndcg_delta": _interval(0.0), "query_ms": 0.5, "overhead_ms": 0.0 if o == "re_embed" else 0.1,
                 "storage_bytes": 0 if o == "keep" else 61440} for o in OPTIONS]}


_STORIES: dict[tuple[Any, ...], dict[str, Any]] = {}


def story(complete_upgraded: dict[str, Any], *, queries: str | None = "shim", per_fold: int | None = None,
          gpu: str | None = None, same_ranking: bool = False) -> dict[str, Any]:
    """A copy of ``_story``'s summary, decided once per distinct input in a test process (deciding takes ~2 s: 35
    tests of test_post_story.py ask for the same few; none of them patches a decision)."""
    key = (json.dumps(complete_upgraded, sort_keys=True, allow_nan=True), queries, per_fold, gpu, same_ranking)
    if key not in _STORIES:
        _STORIES[key] = _story(complete_upgraded, queries=queries, per_fold=per_fold, gpu=gpu,
                               same_ranking=same_ranking)
    return copy.deepcopy(_STORIES[key])


def _story(complete_upgraded: dict[str, Any], *, queries: str | None, per_fold: int | None, gpu: str | None,
           same_ranking: bool) -> dict[str, Any]:
    """The complete summary with an index part searched with ``queries`` (None: not configured, the default),
    index options of ``per_fold`` documents per fold for both candidates (None: none), on a 2-core host
    (``gpu``: its GPU, else none), ``same_ranking``: dynamo ranks exactly as vllm (as two candidates over one
    engine do); decisions computed."""
    summary = summary_with_index(complete_upgraded)
    if same_ranking:
        ranking = summary["ranking"]["by_candidate"]
        ranking["dynamo"] = copy.deepcopy(ranking["vllm"])
    if queries is not None:
        summary["experiment"]["config"]["index"]["queries"] = queries
    if per_fold is not None:
        summary["index"]["options"] = {n: options(per_fold) for n in ("vllm", "dynamo")}
    summary["environment"] = {**summary["environment"], "cpu_count": 2, "gpu": gpu}
    summary["decisions"] = decisions_json(decide(validate_body(summary)))
    return summary


def with_verdicts(data: dict[str, Any], *, latency: tuple[str, str | None] | None = None,
                  ranking: tuple[tuple[str, str | None], str] | None = None) -> Summary:
    """``data`` read, with every candidate's stored latency verdicts set to ``latency`` (code, direction) and its
    nDCG@10 verdicts to ``ranking`` ((the address swap's code, direction), the shim's code); the post's decisions
    drawn again from them."""
    out = read_summary(copy.deepcopy(data))
    d = out.decisions
    for ratio in d.latency.ratios.values():
        for point in ratio.verdicts.values():
            if latency is not None:
                point.p50 = Verdict(code=latency[0], direction=latency[1], margin=1.1)  # type: ignore[arg-type]
                point.docs_per_s = Verdict(code=latency[0], direction=latency[1], margin=1.1)  # type: ignore[arg-type]
    for c in d.ranking.by_candidate.values():
        if ranking is not None:
            (naive, direction), shim = ranking
            c.naive.metrics["ndcg_at_10"] = Verdict(code=naive, direction=direction, margin=0.02)  # type: ignore[arg-type]
            c.shim.metrics["ndcg_at_10"] = Verdict(code=shim, margin=0.02)  # type: ignore[arg-type]
            for variant in (c.naive, c.shim):  # a combined verdict nDCG@10 decided is nDCG@10's, as a run stores it
                combined = variant.equivalence
                if combined is not None and (combined.slices or ["ndcg_at_10"])[0] == "ndcg_at_10":
                    variant.equivalence = variant.metrics["ndcg_at_10"].but(slices=combined.slices)
    return post_redrawn(out)
