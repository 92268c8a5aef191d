"""An answer checked against its own request: a 200 without embeddings is its own verdict with its own advice, the
echoed model against the model asked for, the encoding against `encoding_format`, usage against truncation, and
`index` complete and unique. Each check is pinned here: removing it changes a verdict or an aspect below."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from embedswap.wire.client import parse_response
from embedswap.answers.classify import classify
from embedswap.answers.request_checks import asked, check_answer
from embedswap.report.catalogue import LANGUAGES, catalogue

V = [1.0, 0.0, 0.0]


def answer(vector: list[float] | None = V, *, sent: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"status": 200, "vector": vector, "encoding": "float", "prompt_tokens": 10,
                              "dim": None if vector is None else len(vector), "n_vectors": 1, "error": None,
                              "indices": [0], "model": "minilm", "tokenizer_tokens": 10,
                              "sent": sent or {"model": "minilm", "input": ["a document"]}}
    record.update(fields)
    return record


def test_a_200_with_an_error_body_is_its_own_verdict_not_a_200() -> None:
    # the hosted service's empty_string: 200 with an error object and no data (the client's own record of it)
    body = {"error": {"message": "input must not be empty", "type": "invalid_request_error"}}
    parsed = parse_response(httpx.Response(200, json=body), 3.0)
    candidate = {**parsed.record(), "vector": None, "sent": {"model": "minilm", "input": ""}}
    legacy = {"status": 400, "error": "empty", "vector": None, "n_vectors": None}
    verdict = classify(legacy, candidate)
    assert verdict.verdict == "empty-200"
    assert verdict.aspects == ["no_embeddings"]
    assert "without embeddings" in verdict.detail and "legacy server answered 400" in verdict.detail
    # whatever legacy did: a 200 without embeddings breaks a client trusting the status
    assert classify(answer(), candidate).verdict == "empty-200"


def test_a_legacy_200_without_embeddings_is_not_read_as_an_answer() -> None:
    legacy = answer(None, n_vectors=None, error="malformed 200 response: KeyError: 'data'")
    verdict = classify(legacy, {"status": 400, "error": "empty", "n_vectors": None, "vector": None})
    assert verdict.verdict == "loud-failure" and "legacy server answered 200 without embeddings" in verdict.detail


def test_index_values_not_complete_and_unique() -> None:
    body = {"data": [{"index": 0, "embedding": V}, {"index": 0, "embedding": V}], "model": "minilm"}
    parsed = parse_response(httpx.Response(200, json=body), 1.0)
    candidate = {**parsed.record(), "vector": None, "sent": {"model": "minilm", "input": ["a", "b"]}}
    verdict = classify(answer(), candidate)
    assert verdict.verdict == "empty-200" and verdict.aspects == ["index"]


def test_the_echoed_model_is_kept_and_compared_with_the_model_asked_for() -> None:
    body = {"data": [{"index": 0, "embedding": V}], "model": "text-embedding-minilm-hosted", "usage": {}}
    parsed = parse_response(httpx.Response(200, json=body), 1.0)
    assert parsed.record()["model"] == "text-embedding-minilm-hosted"  # kept in the client's record
    candidate = answer(model="text-embedding-minilm-hosted")
    verdict = classify(answer(), candidate)
    assert verdict.verdict == "metadata-difference"
    assert verdict.aspects == ["model_asked"]
    assert "'text-embedding-minilm-hosted' where 'minilm' was asked for" in verdict.detail
    # the legacy server echoes the same wrong name: a note about both servers, never a difference (issue 54)
    both = classify(answer(model="other"), answer(model="other"))
    assert (both.verdict, both.aspects, both.shared) == ("same", [], ["model_asked"])


def test_the_encoding_is_checked_against_the_requested_encoding_format() -> None:
    sent = {"model": "minilm", "input": ["a document"], "encoding_format": "base64"}
    # the candidate ignores base64 where the legacy server honours it: a difference of the candidate's
    verdict = classify(answer(sent=sent, encoding="base64"), answer(sent=sent))
    assert verdict.verdict == "format-difference"
    assert verdict.aspects == ["encoding_asked"]
    assert "`encoding_format` base64 asked, float answered" in verdict.detail
    # both ignore it: what the legacy server does too is a note about both, not a difference (issue 54)
    both = classify(answer(sent=sent), answer(sent=sent))
    assert (both.verdict, both.aspects, both.shared) == ("same", [], ["encoding_asked"])
    # honoured: the base64 answer differs from legacy's floats only in form (the old rule, unchanged)
    honoured = classify(answer(sent=sent), answer(sent=sent, encoding="base64"))
    assert honoured.verdict == "format-difference" and honoured.aspects == ["encoding"]


def test_usage_against_truncation() -> None:
    # the hosted service's over_long_input: 66 prompt tokens for an input of 2,002 tokens
    long = {"model": "minilm", "input": ["word " * 2000]}
    figures = {"tokenizer_tokens": 256, "input_tokens": 2002, "token_limit": 256}
    legacy = answer(sent=long, prompt_tokens=256, **figures)
    cut = answer(sent=long, prompt_tokens=66, **figures)
    verdict = classify(legacy, cut)
    assert "usage_truncation" in verdict.aspects
    assert "usage counts 66 tokens where a cut at the model's limit of 256 keeps 256" in verdict.detail
    assert check_answer(legacy) == []  # cut at the model's limit and counted so: the promise kept
    # counting tokens that were cut away: more than the model can embed
    over = answer(sent=long, prompt_tokens=2002, **figures)
    assert [a for a, _ in check_answer(over)] == ["usage_truncation"]
    assert "more than the model's limit of 256" in classify(legacy, over).detail
    # within the limit a different count is not a cut (characters, no special tokens: the `usage` aspect's)
    assert check_answer(answer(prompt_tokens=3, tokenizer_tokens=10, token_limit=256)) == []


def test_vectors_per_input_against_the_inputs_sent() -> None:
    sent = {"model": "minilm", "input": "<8 inputs>"}
    assert asked({"sent": sent})["n_inputs"] == 8
    verdict = classify(answer(sent=sent, n_vectors=8), answer(sent=sent, n_vectors=7))
    assert verdict.verdict == "silent-divergence" and "count_asked" in verdict.aspects


def test_the_shim_is_not_checked_against_the_request() -> None:
    sent = {"model": "minilm", "input": ["a document"], "encoding_format": "base64"}
    assert classify(answer(sent=sent), answer(sent=sent), against_request=False).verdict == "same"


def test_each_request_aspect_verdict_and_advice_is_worded_in_every_language() -> None:
    from embedswap.analysis.client_changes import ASPECT_RULES
    from embedswap.answers.request_checks import REQUEST_ASPECTS

    rules = [rule for rule, aspect in ASPECT_RULES if aspect in REQUEST_ASPECTS]
    assert len(rules) == len(REQUEST_ASPECTS)
    for lang in LANGUAGES:
        words = catalogue(lang)
        assert set(REQUEST_ASPECTS) <= set(words.terms["aspects"])
        assert "empty-200" in words.terms["verdicts"]
        assert set(rules) <= set(words.terms["changes"])
        for code in ("detail_empty_200", "difference_request_model", "difference_request_encoding",
                     "difference_request_usage_cut", "difference_request_index"):
            assert code in words.reasons


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_empty_200_detail_is_worded(lang: str) -> None:
    verdict = classify({"status": 400, "vector": None, "n_vectors": None, "error": "x"},
                       answer(None, n_vectors=None, error="malformed 200 response: KeyError: 'data'"))
    text = catalogue(lang).reason(verdict.reason["code"], verdict.reason["params"])
    assert "KeyError" in text and "400" in text
