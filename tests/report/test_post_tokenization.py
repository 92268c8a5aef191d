"""The post names a tokenizer that differs per language and a longer context beside the cosines (the full report's
diagnosis has every cause): a reader learns why one language's vectors differ without opening the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from embedswap.reasons import explain
from embedswap.report.post import render_post
from typed_summary import as_typed

FIXTURE = Path(__file__).parents[1] / "fixtures" / "summary_complete.json"
DROPS = {"name": "vllm", "lang": "ko", "texts": 20, "of": 20, "tokens": 98, "expected": 210,
         "pieces": "##ᅢ ##ᅩ", "script": "HANGUL JUNGSEONG", "cosine": 0.447}
LONGER = {"name": "vllm", "lang": "en", "texts": 1, "tokens": 330, "limit": 256, "cosine": 0.986}


def _summary(codes: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    summary = json.loads(FIXTURE.read_text(encoding="utf-8"))
    reasons = [{"code": c, "params": p, "why": explain(c, **p)} for c, p in codes]
    summary["diagnosis"] = {"measured": True, "threshold": 0.999, "texts": 40,
                            "by_target": {"vllm": {"cause": codes[0][0], "reasons": reasons}}}
    summary.pop("decisions", None)  # decided again from the diagnosis
    return summary


@pytest.mark.parametrize("lang", ["en", "ko", "ja", "zh"])
def test_the_post_says_why_korean_and_long_english_differ(lang: str) -> None:
    post = render_post(as_typed(_summary([("diagnosis_tokenizer_drops", DROPS), ("diagnosis_context_longer", LONGER)])),
                       lang)
    line = next(line for line in post.splitlines() if "HANGUL JUNGSEONG" in line)
    assert "`vllm`" in line and "210" in line and "98" in line and "256" in line and "330" in line
    if lang == "en":
        assert line.startswith("- Why `vllm`’s vectors differ: the tokenizer of 'vllm' splits ko text")


def test_other_causes_stay_in_the_full_report() -> None:
    post = render_post(as_typed(_summary([("diagnosis_normalize_missing", {"name": "vllm"})])), "en")
    assert "vectors differ:" not in post
