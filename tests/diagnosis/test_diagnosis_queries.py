"""Step 03's query diagnosis: the query vectors a server returned for ``input_type: "query"`` against the model with
its query prompt. A server that ignores the field (the article's quiet difference: 200 with another vector) is
named ``diagnosis_prompt_missing``; one that applies the prompt has no cause. The "servers" are
sentence-transformers itself, the prompt put before the text by hand (independent of the diagnosis' own code)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typed_summary import decisions_of, summary_body

from embedswap.diagnosis import step as diagnosis_step
from embedswap.analysis.diagnosis import diagnosis_query_decisions
from embedswap.captures import new_attempt
from embedswap.diagnosis.findings import explain_difference
from embedswap.diagnosis.hypotheses import Hypothesis
from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
from typed_summary import as_typed

FIXTURES = Path(__file__).parents[1] / "fixtures"
QUERIES = ["what is pooling", "how do I migrate an embedding server", "vLLM pooling runner", "정규화는 왜 필요한가"]


@pytest.fixture(scope="module")
def model(tiny_zoo: dict[str, Path]) -> Path:
    return tiny_zoo["tiny-bert-cls"]  # tests/conftest.py: built once per session


def _experiment(folder: Path, template: str = DEFAULT_QUERY_TEMPLATE) -> SimpleNamespace:
    return SimpleNamespace(
        legacy="legacy", candidates=["vllm"],
        # both serve the experiment's model (targets.<name>.model unset), started by the kit
        targets={"legacy": SimpleNamespace(model=None, kind="legacy"), "vllm": SimpleNamespace(model=None, kind="vllm")},
        target_order=lambda: ["legacy", "vllm"],
        model=SimpleNamespace(path=str(folder), query_prompt_template=template, query_task=DEFAULT_QUERY_TASK,
                              max_input_tokens=None, served_name="minilm"))


def _encode(folder: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(texts, convert_to_numpy=True).astype(np.float32)


def test_a_server_ignoring_input_type_is_found_missing_the_prompt(model: Path, tmp_path: Path) -> None:
    prompt = DEFAULT_QUERY_TEMPLATE.removesuffix("{query}").format(task=DEFAULT_QUERY_TASK)
    attempt = new_attempt(tmp_path)
    attempt.write_array("legacy/query_vectors_server_instruction.npy", _encode(model, [prompt + q for q in QUERIES]))
    attempt.write_array("vllm/query_vectors_server_instruction.npy", _encode(model, QUERIES))  # field ignored
    workload = SimpleNamespace(queries=[SimpleNamespace(text=q) for q in QUERIES])
    result = diagnosis_step.diagnose_queries(_experiment(model), attempt, workload, 0.999)
    assert result["measured"] is True and result["prompt"] == prompt and result["texts"] == 4
    assert result["by_target"]["legacy"]["cause"] is None
    vllm = result["by_target"]["vllm"]
    assert vllm["cause"] == "diagnosis_prompt_missing", vllm
    assert vllm["hypothesis"]["prompt"] is None and vllm["hypothesis"]["cos_min"] >= 0.999
    assert "Instruct: " in vllm["reasons"][0]["why"]  # the sentence names the prompt the server left out
    decisions = diagnosis_query_decisions(summary_body({"diagnosis": {"measured": True, "queries": result}}))
    assert list(decisions) == ["vllm"] and decisions["vllm"].step == "queries"


def test_no_query_diagnosis_without_queries_captures_or_a_prefix_template(model: Path, tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    none = SimpleNamespace(queries=[])
    some = SimpleNamespace(queries=[SimpleNamespace(text=q) for q in QUERIES])
    code = lambda r: r["reason"]["code"]  # noqa: E731
    assert code(diagnosis_step.diagnose_queries(_experiment(model), attempt, none, 0.999)) == "no_queries"
    assert code(diagnosis_step.diagnose_queries(_experiment(model), attempt, some, 0.999)) == \
        "diagnosis_no_query_vectors"
    attempt.write_array("vllm/query_vectors_server_instruction.npy", _encode(model, QUERIES))
    suffixed = _experiment(model, template="{query} (search query)")
    assert code(diagnosis_step.diagnose_queries(suffixed, attempt, some, 0.999)) == \
        "diagnosis_query_template_not_prefix"


def test_another_query_prompt_is_named_with_both_prompts() -> None:
    truth = Hypothesis("mean", False, True, prompt="query: ")
    found = Hypothesis("mean", False, True, prompt="Instruct: search\nQuery:")
    (reason,) = explain_difference(truth, found, "dynamo")
    assert reason["code"] == "diagnosis_prompt_other"
    assert reason["params"] == {"name": "dynamo", "prompt": "Instruct: search\\nQuery:", "expected": "query:"}
    (document,) = explain_difference(Hypothesis("mean", False, True), found, "dynamo")  # documents: no prompt
    assert document["code"] == "diagnosis_prompt_applied"


def test_the_report_states_the_query_finding_in_every_language(model: Path, tmp_path: Path) -> None:
    from embedswap.report.markdown import render_markdown
    from embedswap.summary.types_decisions import Decisions
    from embedswap.summary.types_sections import Diagnosis

    summary = json.loads((FIXTURES / "summary_complete.json").read_text(encoding="utf-8"))
    prompt = DEFAULT_QUERY_TEMPLATE.removesuffix("{query}").format(task=DEFAULT_QUERY_TASK)
    attempt = new_attempt(tmp_path)
    attempt.write_array("legacy/query_vectors_server_instruction.npy", _encode(model, [prompt + q for q in QUERIES]))
    attempt.write_array("vllm/query_vectors_server_instruction.npy", _encode(model, QUERIES))
    workload = SimpleNamespace(queries=[SimpleNamespace(text=q) for q in QUERIES])
    summary["diagnosis"] = {"measured": True, "threshold": 0.999, "limits": [], "texts": 6, "by_target": {}}
    summary["diagnosis"]["queries"] = diagnosis_step.diagnose_queries(_experiment(model), attempt, workload, 0.999)
    summary["decisions"] = decisions_of(summary)
    typed = Diagnosis.model_validate(summary["diagnosis"])  # the typed summary takes the new part
    assert typed.queries is not None and typed.queries.by_target["vllm"].cause == "diagnosis_prompt_missing"
    assert Decisions.model_validate(summary["decisions"]).diagnosis_queries["vllm"].step == "queries"
    expected = {"en": ("query vectors each server returned", "embeds the texts without the prompt"),
                "ko": ("쿼리 벡터", "없이 텍스트를 임베딩합니다"),
                "ja": ("クエリベクトル", "プロンプト"), "zh": ("查询向量", "提示")}
    for lang, (intro, sentence) in expected.items():
        text = render_markdown(as_typed(summary), lang)
        block = text[text.index(intro):]
        finding = next(line for line in block.splitlines() if line.startswith("- `vllm`"))
        assert "`diagnosis_prompt_missing`" in finding, lang
        assert sentence in finding, lang
    del summary["diagnosis"]["queries"]  # a summary from before the query diagnosis: no query lines at all
    summary["decisions"] = decisions_of(summary)
    assert "query vectors each server returned" not in render_markdown(as_typed(summary), "en")
