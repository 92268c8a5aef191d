"""The article's published figures and report.json load as typed objects; a renamed key fails with its path."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from pydantic import ValidationError

from embedswap.analysis.article import ARTICLE_FILE, Article, article_value, load_article
from embedswap.report.post_checks import article_fields
from embedswap.report.report_data import ReportJson


def _article_dict() -> dict:
    return json.loads(resources.files("embedswap").joinpath(ARTICLE_FILE).read_text(encoding="utf-8"))


def test_the_shipped_article_file_loads() -> None:
    article = load_article()
    assert article.environment.model == "Qwen/Qwen3-Embedding-0.6B"
    assert article.workload.documents == 40 and isinstance(article.workload.documents, int)
    assert article.vectors.cosine.min == 0.9996
    assert [e.probe for e in article.contract][:2] == ["dimensions_reduced", "input_type_query"]
    assert article.contract[1].candidate.prompt_tokens == 9
    assert article.latency.legacy.docs_per_s_per_repeat == [139.4, 141.0, 141.2]
    for lang in ("ko", "en", "ja", "zh"):
        assert article.source.in_lang(lang) and article.vectors.note.in_lang(lang)


def test_an_article_source_resolves_against_the_file_as_written() -> None:
    """``article:<path>`` sources (the post document's facts, its checks) resolve against the typed load: the same
    keys and values as the file, ints kept ints, and one load per process."""
    assert article_fields() == _article_dict()
    assert isinstance(article_fields()["workload"]["batch_size"], int)
    assert load_article() is load_article()
    assert article_value("vectors.cosine.min") == _article_dict()["vectors"]["cosine"]["min"]
    assert article_value("workload.no_such_key") is None


def test_a_renamed_article_key_fails_with_its_path() -> None:
    data = _article_dict()
    data["latency"]["candidate"]["seq_p50"] = data["latency"]["candidate"].pop("seq_p50_ms")
    with pytest.raises(ValidationError) as failure:
        Article.model_validate(data)
    locations = {e["loc"] for e in failure.value.errors()}
    assert ("latency", "candidate", "seq_p50_ms") in locations  # the key the reader needs, missing
    assert ("latency", "candidate", "seq_p50") in locations  # the renamed one, refused


def test_a_renamed_report_json_key_fails_with_its_path() -> None:
    report = {
        "experiment": {"name": "e", "date": "2026-11-30", "folder": "e", "attempt": "001"},
        "model": {"spec": "m", "served_name": None, "fingerprint": None, "revision": None},
        "summary_path": "e/attempts/001/summary.json", "summary_generated": "2026-11-30T00:00:00+00:00",
        "rendered": "2026-11-30T00:00:00+00:00", "languages": ["ko", "en"],
        "headline": {"candidate": "c", "legacy": "l", "cosine_min": 0.9992, "cosine_measured": True,
                     "candidate_seq_p50_ms": 36.9, "candidate_conc_docs_per_s": 395.8, "concurrency": 4,
                     "latency_state": True, "parity_pass": None},
        "slug": "e",
    }
    text = json.dumps(report, ensure_ascii=False, indent=2) + "\n"
    assert ReportJson.model_validate_json(text).to_json() == text  # written back as read, keys in their order
    report["headline"]["cosine"] = report["headline"].pop("cosine_min")
    with pytest.raises(ValidationError) as failure:
        ReportJson.model_validate(report)
    assert ("headline", "cosine") in {e["loc"] for e in failure.value.errors()}
