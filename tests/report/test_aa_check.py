"""The A/A checker of tests/support/aa_check.py (issue 54), without servers: its sections' checks pass a summary in
which nothing differs and name the probe, the shim setting or the section of one that differs somewhere; its post
checks (tests/support/aa_post.py, issue 63) read the stored post document, not the markdown: an A/A-like summary
passes, and one broken on purpose (a conclusion that is not drop-in, a statement that says a difference, a document
that is not its summary's, a post not written or not rendered) fails, named. The A/A runs on real servers are
tests/e2e/test_aa_e2e.py and its engine siblings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from aa_check import aa_failures, summary_failures
from aa_post import post_failures
from embedswap.analysis.post_document import post_document
from embedswap.analysis.upgrade import read_summary
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from typed_summary import post_redrawn


def _summary() -> dict[str, Any]:
    """The fields aa_failures reads, as an A/A run stores them."""
    same = {"verdict": "same", "detail": "", "aspects": []}
    return {
        "contract": [{"probe": p, "verdicts": {"same": dict(same)}} for p in ("plain", "v2_embed_query")]
        + [{"probe": "token_ids", "verdicts": {"same": {"verdict": "not-applicable"}}}],
        "shim": {"config": {"same": {"strip_dimensions": False, "prepend_query_instruction": False,
                                     "max_input_tokens": None, "model_override": None, "drop_fields": [],
                                     "force_float": False, "renormalise": False, "reject_empty_strings": False,
                                     "non_retryable_statuses": []}},
                 "rows": [{"probe": "plain", "verdicts": {"same": dict(same)}}]},
        "vectors": {"comparisons": {"same": {"measured": True, "per_document": [{"doc_id": "d1", "cosine": 1.0}]}},
                    "by_target": {"old": {"sha256": "ab"}, "same": {"sha256": "ab"}}},
        "decisions": {"post": {"conclusions": [{"name": "same", "code": "drop_in", "compared": 3, "differ": 0}]},
                      "shim": {"same": {"opened": []}}, "index": {"same": {"choice": "keep", "sample": "keep_index"}},
                      "vectors": {"same": {"overall": {"code": "equivalent"}}},
                      "latency": {"ratios": {"same": {"verdict": {"code": "inconclusive"}, "verdicts": {
                          "sequential": {"p50": {"code": "equivalent"}, "docs_per_s": {"code": "inconclusive"}}}}}}},
    }


def test_nothing_differs_passes() -> None:
    assert summary_failures(_summary(), "old", "same") == []


def test_each_difference_is_named() -> None:
    summary = _summary()
    summary["contract"][1]["verdicts"]["same"] = {"verdict": "loud-failure", "detail": "candidate rejected it (404)"}
    summary["shim"]["config"]["same"]["force_float"] = True
    summary["decisions"]["shim"]["same"]["opened"] = ["same_text_twice"]
    summary["decisions"]["post"]["conclusions"][0].update(code="client_changes", differ=1, refused=["v2_embed_query"])
    summary["decisions"]["index"]["same"]["choice"] = "re_embed"
    summary["decisions"]["latency"]["ratios"]["same"]["verdicts"]["sequential"]["docs_per_s"] = {
        "code": "different", "direction": "slower"}
    summary["vectors"]["by_target"]["same"]["sha256"] = "cd"
    failures = summary_failures(summary, "old", "same")
    expected = ["conclusion: `same` is 'client_changes'", "contract: probe `v2_embed_query`: loud-failure",
                "shim: summary.shim.config rewrites, force_float", "shim: opened a difference on `same_text_twice`",
                "vectors: sha256", "index: `same` is 're_embed'",
                "latency: sequential.docs_per_s is different (slower)"]
    for start in expected:
        assert sum(f.startswith(start) for f in failures) == 1, (start, failures)
    assert len(failures) == len(expected), failures


def test_a_probe_that_differs_only_through_the_shim_is_named() -> None:
    summary = copy.deepcopy(_summary())
    summary["shim"]["rows"][0]["verdicts"]["same"] = {"verdict": "silent-divergence", "aspects": ["direction"]}
    assert summary_failures(summary, "old", "same") == [
        "shim: probe `plain` through the shim: silent-divergence [direction]"]


# --- the post, read from its stored document (issue 63) -------------------------------------------------------------
COMPLETE = Path(__file__).parents[1] / "fixtures" / "summary_complete.json"
AA, OTHER = "vllm", "dynamo"  # the candidate read as the A/A's, and the fixture's other one
POST_LANGUAGES = ["ko", "en"]  # the post files checked (the document is one for every language)


def _aa_like(change: Any = None) -> Summary:
    """The complete fixture decided as an A/A would be: every latency and ranking verdict of its candidates
    equivalent, the ranking unchanged, every contract probe answered alike (the post's conclusions drop-in, nothing
    differing), the post's decisions and document drawn again from them. ``change(summary)``: a change made to the
    verdicts before the post is drawn."""
    out = read_summary(json.loads(COMPLETE.read_text(encoding="utf-8")))
    d = out.decisions
    for ratio in d.latency.ratios.values():
        ratio.verdict = ratio.verdict.but(code="equivalent", direction=None) if ratio.verdict else None
        for point in ratio.verdicts.values():
            for field in ("p50", "p99", "docs_per_s"):
                v = getattr(point, field)
                setattr(point, field, v.but(code="equivalent", direction=None) if v is not None else None)
    for c in d.ranking.by_candidate.values():
        c.decision = "none"
        for variant in (c.naive, c.shim):
            variant.metrics = {k: v.but(code="equivalent", direction=None) for k, v in variant.metrics.items()}
            if variant.equivalence is not None:
                variant.equivalence = variant.equivalence.but(code="equivalent", direction=None)
    if change is not None:
        change(out)
    post_redrawn(out)
    for conclusion in d.post.conclusions:  # what the contract decides where both sides answered every probe alike
        conclusion.code, conclusion.differ = "drop_in", 0
        for field in ("silent", "refused", "accepted", "retry", "shape", "shim_left"):
            setattr(conclusion, field, [])
    return _document_redrawn(out)


def _document_redrawn(summary: Summary) -> Summary:
    """The post document drawn again from conclusions set by hand: its conclusion and closing statements read them."""
    summary.decisions.post.document = post_document(summary, summary.decisions)
    return summary


def _stored(summary: Summary) -> dict[str, Any]:
    return summary.model_dump(mode="json", by_alias=True)


def _posts(summary: Summary) -> dict[str, str]:
    return {lang: render_post(summary, lang) for lang in POST_LANGUAGES}


def _post_lines(failures: list[str]) -> list[str]:
    return [f for f in failures if f.startswith(("post", "document"))]


def test_an_aa_like_post_says_nothing_differs() -> None:
    summary = _aa_like()
    stored = _stored(summary)
    # the note on what concurrency gained each server speaks of the A/A's candidate too: a note, not a difference
    document = summary.decisions.post.document
    assert document is not None and any(s.key.startswith("post.concurrency_gains.") and AA in s.subjects
                                        for s in document.statements())
    assert post_failures(stored, _posts(summary), AA, POST_LANGUAGES) == []
    # aa_failures holds these lines (its sections' lines are the fixture's own differences, left aside here)
    assert _post_lines(aa_failures(stored, _posts(summary), "legacy", AA, languages=POST_LANGUAGES)) == []


def test_a_conclusion_that_is_not_drop_in_fails() -> None:
    """Broken on purpose as the A/A end-to-end test breaks it: one probe answered otherwise, so the candidate's
    conclusion counts one difference and is no longer drop-in; the post says so and the check names both
    sentences."""
    summary = _aa_like()
    mine = summary.decisions.post.conclusion(AA)
    assert mine is not None
    mine.code, mine.differ, mine.refused = "client_changes", 1, ["v2_embed_query"]
    _document_redrawn(summary)
    failures = post_failures(_stored(summary), _posts(summary), AA, POST_LANGUAGES)
    assert "post: post.contract_conclusions says 'differs', not 'same'" in failures, failures
    assert any(f.startswith("post: post.closings says 'client_changes' for ") and AA in f for f in failures), failures
    assert len(failures) == 2, failures


def test_a_statement_that_says_a_difference_fails() -> None:
    """Broken on purpose: the address swap's nDCG@10 verdict different (worse); the ranking line of the document
    states it, and the check names that statement."""
    def worse(summary: Summary) -> None:
        ranking = summary.decisions.ranking.of(AA)
        assert ranking is not None
        ranking.naive.metrics["ndcg_at_10"] = ranking.naive.metrics["ndcg_at_10"].but(code="different",
                                                                                        direction="worse")

    summary = _aa_like(worse)
    failures = post_failures(_stored(summary), _posts(summary), AA, POST_LANGUAGES)
    assert any(f.startswith("post: post.ranking_line says ndcg_at_10 (address_swap)") and "different (worse)" in f
               for f in failures), failures
    # the other candidate's statements are not the A/A's
    assert post_failures(_stored(summary), _posts(summary), OTHER, POST_LANGUAGES) == []


def test_a_document_that_is_not_its_summary_s_fails() -> None:
    """Broken on purpose: the stored document says a latency claim is equivalent where its verdict is
    inconclusive (the check of embedswap/report/post_checks.py names it), or is not stored at all."""
    summary = _aa_like()
    stored = _stored(summary)
    claims = [c for s in stored["decisions"]["post"]["document"]["sections"] for st in s["statements"]
              for c in st["claims"] if AA in c["subjects"]]
    assert claims
    claims[0]["code"] = "inconclusive"
    failures = post_failures(stored, _posts(summary), AA, POST_LANGUAGES)
    assert any(f.startswith("document: ") and "the statement says inconclusive" in f for f in failures), failures
    del stored["decisions"]["post"]["document"]
    assert post_failures(stored, _posts(summary), AA, POST_LANGUAGES) == [
        "document: decisions.post.document is not stored"]


def test_a_post_not_written_or_not_rendered_fails() -> None:
    summary = _aa_like()
    posts = _posts(summary)
    posts["en"] = posts["en"] + "\n{{ closing }}\n"
    del posts["ko"]
    assert post_failures(_stored(summary), posts, AA, POST_LANGUAGES) == [
        "post.ko: missing", "post.en: holds unrendered template tags ['{{']"]
    assert post_failures(_stored(summary), {}, AA)[0] == "post: no post was written"
