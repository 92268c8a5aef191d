"""Every decision in the post: the index decision, the ranking verdicts (address swap and through the shim), the
shim's coverage, the parity gate, Dynamo against vLLM alone, and the restore step as run or not measured; each read
from the stored decision, in every language."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from embedswap.report.catalogue import LANGUAGES, catalogue, fill
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from embedswap.summary.types_index import IndexDecision, ReembedCost
from embedswap.summary.types_sections import Restore
from embedswap.analysis.upgrade import read_summary
from typed_summary import as_typed, post_redrawn

FIXTURES = Path(__file__).parents[1] / "fixtures"
NOT_MEASURED = {lang: catalogue(lang).labels["not_measured"] for lang in LANGUAGES}


def _complete() -> Summary:
    return read_summary(json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8")))


def _lines(post: str, needle: str) -> list[str]:
    return [line for line in post.splitlines() if needle in line]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_index_decision_is_in_the_post(lang: str) -> None:
    summary = _complete()
    summary.decisions.index = {
        "vllm": IndexDecision.sampled("keep_index", hnsw_recall=1.0),
        "dynamo": IndexDecision.sampled("re_embed", cost=ReembedCost(
            corpus_size=1_000_000, point="concurrent", docs_per_s=379.5, hours_per_replica=7.3, window_hours=8.0,
            replicas=1))}
    post = render_post(post_redrawn(summary), lang)  # the index's figures are its document statement's
    keep = [line for line in _lines(post, "`vllm`") if "1.0000" in line]
    reembed = [line for line in _lines(post, "`dynamo`") if "7.3" in line and "8.0" in line]
    assert keep and reembed, post
    summary.decisions.index = {}
    assert not [line for line in render_post(post_redrawn(summary), lang).splitlines() if "7.3" in line]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_ranking_verdicts_and_the_shims_coverage_are_in_the_post(lang: str) -> None:
    summary = _complete()
    ranking = summary.decisions.ranking.of("vllm")
    shim = summary.decisions.shim["vllm"]
    post = render_post(as_typed(summary), lang)
    naive, through = ranking.naive.equivalence, ranking.shim.equivalence
    line = next(line for line in _lines(post, "`vllm`") if f"{naive.estimate:+.3f}" in line
                and f"{through.estimate:+.3f}" in line)
    assert str(ranking.naive.changed_queries) in line
    closed = shim.differ_before - shim.differ_after
    assert [x for x in _lines(post, "`vllm`") if f"{closed}" in x and f"{shim.differ_before}" in x and "shim" in x]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_parity_gate_is_in_the_post(lang: str) -> None:
    summary = _complete()
    assert summary.parity.passed is True
    passed = render_post(as_typed(summary), lang)
    summary.parity.passed = False
    summary.parity.rows[0].passed = False
    post_redrawn(summary)  # the post prints its document's counts: drawn again from the changed summary
    failed = render_post(as_typed(summary), lang)
    line_ok = [x for x in passed.splitlines() if "fp32" in x]
    line_bad = [x for x in failed.splitlines() if "fp32" in x]
    assert line_ok and line_bad and line_ok != line_bad
    assert re.search(r"(?<![\d.])1(?![\d.])", line_bad[0]) and re.search(r"(?<![\d.])4(?![\d.])", line_bad[0])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_dynamo_against_vllm_alone_where_both_were_measured(lang: str) -> None:
    summary = _complete()
    assert "62.2" not in render_post(as_typed(summary), lang)  # the fixture's Dynamo has no start record: no sentence
    summary.targets["dynamo"].kind = "dynamo"
    summary.targets["dynamo"].start_seconds = 62.2
    summary.targets["dynamo"].rss_bytes = 4227 * 2**20
    summary.targets["vllm"].start_seconds = 44.2
    summary.targets["vllm"].rss_bytes = 3799 * 2**20
    post = render_post(post_redrawn(summary), lang)  # the start times are the document's
    assert [x for x in post.splitlines() if all(n in x for n in ("62.2", "44.2", "4,227", "3,799"))], post


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_restore_step_is_run_or_not_measured(lang: str) -> None:
    summary = _complete()
    assert summary.restore is None
    off = render_post(as_typed(summary), lang)
    summary.restore = Restore(measured=True, target="legacy", start_seconds=6.0, status=200, restored=True,
                              cosine_to_step01_min=1.0)
    on = render_post(as_typed(summary), lang)
    procedure = catalogue(lang).message("post.procedure").splitlines()[0]

    def last_step(post: str) -> list[str]:  # the procedure is a numbered list under its lead line
        return post[post.index(procedure):].split("\n\n")[1].splitlines()[-1:]

    step_off, step_on = last_step(off), last_step(on)
    assert step_off and NOT_MEASURED[lang] in step_off[0]
    assert step_on and NOT_MEASURED[lang] not in step_on[0]
    assert len(_lines(off, NOT_MEASURED[lang])) > len(_lines(on, NOT_MEASURED[lang]))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_front_matter_names_every_candidate_and_prints_the_body_numbers(lang: str) -> None:
    from embedswap.report.front_matter import description
    from embedswap.report.publish import headline

    summary = _complete()
    assert summary.environment is not None and not summary.environment.gpu
    text = description(headline(as_typed(summary)), lang)
    post = render_post(as_typed(summary), lang)
    assert all(name in text for name in ("vllm", "dynamo")), text
    # no absolute latency on a CPU run; the sequential p50 appears only as the one stored ratio
    times = fill(catalogue(lang).terms["post"]["times"], x="")  # × in English, 배 in Korean, 倍 in ja/zh
    assert not re.search(r"\d ?ms\b", text) and all("p50" not in part or times in part for part in text.split(". "))
    numbers = re.findall(r"\d+\.\d+", text)
    assert numbers and all(n in post for n in numbers), (numbers, text)
    summary.environment.gpu = "NVIDIA H200"
    assert "p50" in description(headline(as_typed(summary)), lang)


def _with_v2_row() -> Summary:
    """The complete fixture with a /v2/embed row the legacy server lacks (404) and the candidates serve (200): only
    then is a verdict read against the legacy server's answer to the query-type probe (issue 54)."""
    data = json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8"))
    rows = {r["probe"]: r for r in data["contract"]}
    row = json.loads(json.dumps(rows["input_type_query"]))
    baseline = rows["input_type_query"]["by_target"]["legacy"]
    refused = dict(row["by_target"]["vllm"], status=404, error="Not Found", dim=None, n_vectors=None)
    row.update(probe="v2_embed_query", path="/v2/embed", compare_to="input_type_query", legacy=baseline,
               by_target={**row["by_target"], "legacy": refused})
    for verdict in row["verdicts"].values():
        verdict["baseline"] = "input_type_query"
    data["contract"].append(row)
    return read_summary(data)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_row_compared_with_another_probe_says_so(lang: str) -> None:
    summary = _with_v2_row()
    post = render_post(as_typed(summary), lang)
    words = catalogue(lang).terms["post"]
    row = next(line for line in post.splitlines() if line.startswith("|") and "v2/embed" in line)
    baseline = fill(words["compared_with"], probe=words["probe_words"]["input_type_query"])
    assert baseline in row
    header = next(line for line in post.splitlines() if line.startswith("|") and "`legacy`" in line
                  and words["verdict_col"] in line)  # the contract table's (the vectors table comes first)
    column = [c.strip() for c in header.strip("|").split("|")].index(fill(words["this_run"], name="`legacy`"))
    cell = [c.strip() for c in row.strip("|").split("|")][column]
    assert cell.startswith("200"), row  # the baseline's answer, not the legacy server's 404 to the route


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_empty_string_is_not_listed_as_refused(lang: str) -> None:
    """Legacy refused it with a 400 and the candidates answered 200: a sentence of its own, not "refused"."""
    summary = _complete()
    conclusion = summary.decisions.post.conclusion("vllm")
    assert "empty_string" in conclusion.accepted and "empty_string" not in conclusion.refused
    post = render_post(as_typed(summary), lang)
    phrase = catalogue(lang).terms["post"]["probe_words"]["empty_string"]
    # one sentence names the requests with the message's own words around them (ko/ja/zh open with the phrase,
    # English lists it after a colon, as its neighbouring sentences do)
    before, after = re.split(r"\{\{\s*g\.accepted\s*\}\}", catalogue(lang).message("post.contract_accepted"))
    line = next(x for x in post.splitlines() if x.startswith("- `vllm`") and (before + after).strip()[:12] in x)
    assert before + phrase + after in line
