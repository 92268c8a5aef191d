"""summary.json: the typed model, the loader that upgrades version-1 files, and reason codes worded in every
report language. Inputs: the committed fixtures (summaries written by earlier versions of the kit, one of them a
real qwen3-tiny attempt from the kit as of commit 2ed678e) and summaries changed here on purpose."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from embedswap.report.catalogue import LANGUAGES
from embedswap.report.markdown import render_markdown
from embedswap.report.catalogue import catalogue
from embedswap.summary.model import Summary, validate_summary
from embedswap.report.format import esc
from embedswap.reasons import INNER, LIST_PARAMS, REASONS, explain, reason_of
from embedswap.analysis.upgrade import SCHEMA_VERSION, SummaryError, load_summary, upgrade_summary
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
V1_FIXTURES = ["summary_complete.json", "summary_smoke.json", "summary_v1_qwen3_tiny.json"]


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", V1_FIXTURES)
def test_version_1_summaries_upgrade_and_validate(name: str) -> None:
    old = load(name)
    assert old.get("schema_version", 1) == 1 and "decisions" not in old
    summary = upgrade_summary(old)
    assert summary["schema_version"] == SCHEMA_VERSION == 4
    typed = validate_summary(summary)
    assert isinstance(typed, Summary)
    # the sections a version-1 summary may lack are there, not measured, with their reason code
    for key in ("ranking", "shim", "ablation", "instruction"):
        section = summary[key]
        assert section["measured"] or section["reason"]["code"] != "section_absent" or key not in old
    assert old == load(name)  # upgrading copies; the file's data is not changed in memory either
    # upgrading twice changes nothing
    assert upgrade_summary(summary) == summary


def test_the_real_version_1_attempt_renders_in_every_language() -> None:
    summary = load("summary_v1_qwen3_tiny.json")
    for lang in LANGUAGES:
        text = render_markdown(as_typed(summary), lang)
        assert [int(n) for n in re.findall(r"^## (\d)\. ", text, flags=re.M)] == list(range(1, 10)), lang


def test_decisions_are_in_the_summary(tmp_path: Path, complete_upgraded: dict[str, Any]) -> None:
    summary = complete_upgraded
    decisions = summary["decisions"]
    rules = [c["rule"] for c in decisions["client_changes"]]
    assert rules and all(isinstance(r, str) for r in rules)
    assert set(decisions["ranking"]["by_candidate"]) == set(summary["roles"]["candidates"])
    for verdict in decisions["ranking"]["by_candidate"].values():
        assert verdict["decision"] in {"reindex", "client", "shim_only", "none", "shim_missing", "undecided",
                                       "another_model"}
    ratios = decisions["latency"]["ratios"]
    points = decisions["latency"]["points"]
    legacy = summary["roles"]["legacy"]
    for name, ratio in ratios.items():  # pooled over the repeats, stored once with its interval
        assert set(ratio) >= {"intervals", "verdicts"} and "seq_p50" not in ratio
        seq = ratio["intervals"]["sequential"]["p50"]
        assert seq["value"] == pytest.approx(points[name]["sequential"]["p50"]["value"]
                                             / points[legacy]["sequential"]["p50"]["value"])
        assert seq["direction"] in {"faster", "slower", "no_difference", "too_few", "missing"}
    assert "ratios" not in decisions["shown"]
    lock = decisions["latency"]["lock"]
    assert lock["measured"] is True  # the fixture has the lock ablation: the share is measured
    for variant in lock["variants"]:
        for share in variant["shares"]:
            assert share["case"] in {"missing", "no_advantage", "all", "part", "none"}
    # what the shim closed, per candidate probed through it; the report's counts are these
    for name, outcome in decisions["shim"].items():
        assert outcome["compared"] >= outcome["differ_before"] >= len(outcome["closed"]) > 0
        assert outcome["differ_after"] == len(outcome["remaining"])
        assert f"{outcome['differ_before']}" in render_markdown(as_typed(summary), "en")
    # what is stored is what a CI reads back
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary), encoding="utf-8")
    assert load_summary(path).decisions.model_dump(mode="json", by_alias=True, exclude_unset=True) == decisions


def test_a_stored_decision_is_what_the_report_states(complete_upgraded: dict[str, Any]) -> None:
    # the renderer formats the stored decision; it does not recompute it
    summary = complete_upgraded
    name = summary["roles"]["candidate"]
    for code, phrase in (("reindex", "re-index with the candidate"), ("none", "calls for neither")):
        changed = copy.deepcopy(summary)
        changed["decisions"]["ranking"]["by_candidate"][name]["decision"] = code
        assert phrase in render_markdown(as_typed(changed), "en")


def test_a_summary_from_a_newer_kit_or_of_another_shape_is_refused(tmp_path: Path) -> None:
    newer = {**load("summary_smoke.json"), "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(SummaryError, match=f"schema_version {SCHEMA_VERSION + 1}"):
        upgrade_summary(newer)
    broken = upgrade_summary(load("summary_smoke.json"))
    broken["roles"] = {"candidates": ["vllm"]}  # no legacy
    with pytest.raises(SummaryError, match="roles.legacy"):
        validate_summary(broken)
    path = tmp_path / "summary.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(SummaryError, match="not valid JSON"):
        load_summary(path)


def _sample_params(code: str) -> dict[str, Any]:
    """Parameters for a code's sentence: a list parameter gets two inner reasons, a detail a verdict's detail."""
    params: dict[str, Any] = {}
    for i, name in enumerate(re.findall(r"\{(\w+)\}", REASONS[code])):
        if name in LIST_PARAMS:
            inner = sorted(c for c in REASONS if c.startswith(LIST_PARAMS[name]))[:2]
            params[name] = [{"code": c, "params": _sample_params(c)} for c in inner]
        elif name == "detail":
            params[name] = {"code": "detail_equivalent", "params": {}}
        else:
            params[name] = f"x{i}"
    return params


@pytest.mark.parametrize("code", sorted(REASONS))
def test_every_reason_sentence_reads_back_as_its_code(code: str) -> None:
    params = _sample_params(code)
    prefix = next((p for p in INNER if code.startswith(p)), "")  # an inner code is only read inside its parent
    assert reason_of(explain(code, **params), prefix) == {"code": code, "params": params}
    for lang in LANGUAGES:
        text = catalogue(lang).reason(code, params)  # every language words it, with the same placeholders
        assert text and "{" not in text


def _english_fragments(lang: str) -> list[str]:
    """The fixed text of every English reason sentence (what must not appear in a ko/ja/zh report), less the
    identifiers a translation keeps (`prompt_tokens`, `encoding_format`)."""
    fragments = []
    for code, text in REASONS.items():
        own = catalogue(lang).reasons[code]
        fragments += [f.strip() for f in re.split(r"\{\w+\}", text) if len(f.strip()) >= 12 and f.strip() not in own]
    return fragments


@pytest.mark.parametrize("lang", ["ko", "ja", "zh"])
def test_no_reason_is_left_in_english(lang: str) -> None:
    # every reason the kit can write, planted the way a version-1 summary carried it (English `why` only)
    summary = load("summary_complete.json")
    planted = []
    for code in REASONS:
        if not code.startswith(INNER):
            planted.append({"backend": f"backend-{code}", "why": explain(code, **_sample_params(code))})
    summary["parity"]["not_run"] = planted
    summary["parity"]["multimodal"]["why"] = explain("no_images")
    del summary["ranking"]  # an older summary without the section
    english = render_markdown(as_typed(summary), "en")
    assert all(esc(p["why"]) in english for p in planted)  # the English report does carry them
    for fixture in [summary, load("summary_smoke.json"), load("summary_v1_qwen3_tiny.json")]:
        text = render_markdown(as_typed(fixture), lang)
        left = [f for f in _english_fragments(lang) if f in text]
        assert left == [], left


def test_vectors_of_two_lengths_are_a_verdict_not_a_nan() -> None:
    # a legacy server that ignores `dimensions` (384 values back) against a shim that cut the answer to 256
    from embedswap.captures import json_bytes
    from embedswap.answers.classify import classify

    legacy = {"status": 200, "dim": 384, "n_vectors": 1, "prompt_tokens": 9, "vector": [0.05] * 384}
    candidate = {"status": 200, "dim": 256, "n_vectors": 1, "prompt_tokens": 9, "vector": [0.0625] * 256}
    verdict = classify(legacy, candidate)
    assert verdict.verdict == "silent-divergence" and verdict.cosine is None
    assert "384 vs 256 dimensions" in verdict.detail and "nan" not in verdict.detail.lower()
    json_bytes({"cosine": verdict.cosine})  # writable: allow_nan=False would refuse a NaN
    zero = {**candidate, "dim": 384, "vector": [0.0] * 384}
    assert "cosine undefined" in classify(legacy, zero).detail


def test_a_nan_figure_is_null_with_its_place_recorded_and_listed() -> None:
    from embedswap.summary.finite import null_non_finite

    summary = load("summary_complete.json")
    summary["shim"]["rows"][2]["cosine"] = float("nan")
    summary["latency"]["by_target"]["vllm"]["sequential"]["p99_ms"] = float("inf")
    cleaned, paths = null_non_finite(summary)
    assert sorted(paths) == ["latency.by_target.vllm.sequential.p99_ms", "shim.rows.2.cosine"]
    assert cleaned["shim"]["rows"][2]["cosine"] is None
    assert math.isnan(summary["shim"]["rows"][2]["cosine"])  # the input is copied, not changed
    cleaned["non_finite"] = paths
    json.dumps(cleaned, allow_nan=False)
    ko = render_markdown(as_typed(cleaned), "ko")
    assert "`rows.2.cosine`" in ko and "유한한 수가 아님" in ko


@pytest.mark.parametrize("module", ["embedswap.summary.sections.shim", "embedswap.ranking.metrics", "embedswap.summary.sections.instruction",
                                    "embedswap.shim", "embedswap.reasons", "embedswap.summary", "embedswap.report"])
def test_each_module_that_writes_reasons_imports_first(module: str) -> None:
    # the section builders and the summary package import each other's neighbours: no import cycle, whichever
    # module a notebook or a user imports first
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
