"""MRR@10 in the report and the post (issue 57, point 2): its column, delta and paired test beside recall@5, its
margin in the rule, its verdict under its own name; summaries from before MRR@10 render "—" and no MRR clause."""
from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from embedswap.report.catalogue import LANGUAGES
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from typed_summary import as_typed

MRR = {"legacy": 1.0, "naive": 1 / 3, "shim": 1.0}  # the address swap moves every first hit from rank 1 to rank 3


def with_mrr(summary: dict[str, Any], values: dict[str, float] = MRR) -> dict[str, Any]:
    """The complete summary as a kit with MRR@10 writes it: per judged query, per run, and the deltas to legacy."""
    out = copy.deepcopy(summary)
    ranking = out["ranking"]
    runs = [("legacy", ranking["legacy"]), ("naive", ranking["candidate_naive"]),
            ("shim", ranking["candidate_shim"])]
    runs += [(kind, entry[kind]) for entry in ranking["by_candidate"].values() for kind in ("naive", "shim")]
    for kind, run in runs:
        run["mrr_at_10"] = values[kind]
        for row in run["per_query"].values():
            if row.get("ndcg_at_10") is not None:
                row["mrr_at_10"] = values[kind]
    deltas = [ranking["deltas"]] + [entry["deltas"] for entry in ranking["by_candidate"].values()]
    for found in deltas:
        for key, row in found.items():
            row["mrr_at_10"] = values[key.removeprefix("candidate_")] - values["legacy"]
    return out


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_mrr_column_delta_test_and_margin_in_english(complete: dict[str, Any]) -> None:
    text = render_markdown(as_typed(with_mrr(complete)), "en")
    header = _line(text, "| Variant | Documents |")
    assert "| recall@5 | Δ recall@5 | MRR@10 | Δ MRR@10 | top-5 overlap |" in header
    legacy = _line(text, "| legacy as today |")
    assert "| 0.444 | — (reference) | 1.000 | — (reference) | — (reference) |" in legacy
    # every query's first hit from rank 1 to rank 3: -2/3 on all 24, no spread (p = 2**-23 from the sign flips)
    assert "| 0.333 | -0.667 [-0.667, -0.667], p < 0.001 | 0.190 |" in _line(text, "| address swap only | `vllm`")
    assert "| 1.000 | +0.000 [+0.000, +0.000], p 1.000 | 1.000 |" in _line(text, "| through the shim | `vllm`")
    naive = _line(text, "- `vllm`, address swap only:")
    assert "Δ recall@5 +0.156, Δ MRR@10 -0.667, top-5 overlap 0.190" in naive
    assert "MRR@10 -0.667 (95 % interval -0.667 to -0.667" in naive
    assert "detect a mean difference of 0.000" not in naive  # a constant shift has no spread to size a test by
    assert "±0.020 for MRR@10" in text
    assert "| `vllm` (address swap only) | MRR@10 change |" in text  # per language, Holm-corrected
    assert "- MRR@10: the reciprocal rank" in text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_mrr_is_shown_in_every_language(complete: dict[str, Any], lang: str) -> None:
    text = render_markdown(as_typed(with_mrr(complete)), lang)
    assert "| MRR@10 | Δ MRR@10 |" in text and "| 0.333 | -0.667 [-0.667, -0.667], p < 0.001 |" in text
    assert "Δ MRR@10 -0.667" in text
    assert re.search(r"MRR@10 \S{0,2} ?±0\.020|±0\.020 for MRR@10", text)  # the margin, in the rule


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_summary_without_mrr_shows_a_dash_and_no_mrr_clause(complete: dict[str, Any], lang: str) -> None:
    text = render_markdown(as_typed(complete), lang)  # the fixture was written before MRR@10
    assert "| MRR@10 | Δ MRR@10 |" in text
    assert "| — | — |" in text and "Δ MRR@10 " not in text.replace("| Δ MRR@10 |", "")


def test_the_post_names_mrr_where_mrr_decided(complete: dict[str, Any]) -> None:
    # nDCG@10 got better, MRR@10 worse: the naive variant is different on MRR, and the post says so under MRR's
    # own name with MRR's own figure, then nDCG@10's (never MRR's -0.667 as an "nDCG@10 change")
    names = {"en": "MRR@10 change", "ko": "MRR@10 변화", "ja": "MRR@10 の変化", "zh": "MRR@10 变化"}
    for lang, name in names.items():
        post = render_post(as_typed(with_mrr(complete)), lang, {})
        assert re.search(re.escape(name) + r"\S{0,2} -0\.667 \[-0\.667, -0\.667\]", post), lang
        assert not re.search(r"nDCG@10\D{0,8}-0\.667", post), lang
    en = render_post(as_typed(with_mrr(complete)), "en", {})
    line = _line(en, "- `vllm`, address swap only:")
    assert "MRR@10 change: -0.667 [-0.667, -0.667], worse beyond margin 0.020; nDCG@10 change: +0.195" in line
