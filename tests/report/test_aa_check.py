"""The A/A checker of tests/support/aa_check.py (issue 54), without servers: it reads each post's conclusion sentences
by their catalogue messages in every language, passes a summary in which nothing differs, and names the probe, the
shim setting or the section of one that differs somewhere. The A/A runs on real servers are tests/e2e/test_aa_e2e.py.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from aa_check import _sentence, aa_failures
from embedswap.report.catalogue import LANGUAGES, catalogue, fill

TABLES = ("post.contract_conclusions", "post.vectors_conclusions", "post.closings")
CONTEXT = {"groups": [{"cosine": "1.0000", "threshold": "0.999"}], "g": {"label": "`same`", "shim_left": False},
           "contract_lines": [{"label": "`same`", "compared": "20", "differ": "3", "each": False}],
           "models_conclusion": "`other` serves another model.", "index_choice": "`other` re-embed",
           "shape_lines": "`other` (`tei`)"}


def _rendered(lang: str, table: str, code: str) -> str:
    text = re.sub(r"\{%-?\s*say\s+\"[a-z0-9_.]+\"\s*-?%\}", " ", catalogue(lang).message(f"{table}.{code}"))
    return "- " + fill(text, **CONTEXT)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("table", TABLES)
def test_each_conclusion_sentence_is_read_as_its_own_code(lang: str, table: str) -> None:
    for code in catalogue(lang).keyed(table):
        post = f"# title\n\n{_rendered(lang, table, code)}\n\nmore text\n"
        assert _sentence(post, lang, table) == [code], (lang, table, code, post)


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


def _posts() -> dict[str, str]:
    return {lang: "\n".join(_rendered(lang, t, c) for t, c in zip(TABLES, ("same", "same", "drop_in")))
            for lang in LANGUAGES}


def test_nothing_differs_passes() -> None:
    assert aa_failures(_summary(), _posts(), "old", "same", languages=list(LANGUAGES)) == []


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
    posts = _posts()
    posts["ko"] = "\n".join(_rendered("ko", t, c) for t, c in zip(TABLES, ("differs", "same", "client_changes")))
    del posts["zh"]
    failures = aa_failures(summary, posts, "old", "same", languages=list(LANGUAGES))
    expected = ["conclusion: `same` is 'client_changes'", "post.ko: post.contract_conclusions says ['differs']",
                "post.ko: post.closings says ['client_changes']", "post.zh: missing",
                "contract: probe `v2_embed_query`: loud-failure", "shim: summary.shim.config rewrites, force_float",
                "shim: opened a difference on `same_text_twice`", "vectors: sha256", "index: `same` is 're_embed'",
                "latency: sequential.docs_per_s is different (slower)"]
    for start in expected:
        assert sum(f.startswith(start) for f in failures) == 1, (start, failures)
    assert len(failures) == len(expected), failures


def test_a_probe_that_differs_only_through_the_shim_is_named() -> None:
    summary = copy.deepcopy(_summary())
    summary["shim"]["rows"][0]["verdicts"]["same"] = {"verdict": "silent-divergence", "aspects": ["direction"]}
    assert aa_failures(summary, _posts(), "old", "same") == [
        "shim: probe `plain` through the shim: silent-divergence [direction]"]
