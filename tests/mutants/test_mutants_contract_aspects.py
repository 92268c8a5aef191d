"""Behaviour of issue 16's per-aspect contract verdicts that the mutation run on the merged contract.py
(scripts/mutation.py, session `contract`, 2026-12-02) found unchecked: the sign of a usage difference, equal
figures that are distinct objects (JSON numbers and strings), which side a "not applicable" is read from, and the
order aspect. Expected values are written out by hand."""
from __future__ import annotations

import json

from embedswap.measure.contract import describe_body
from embedswap.answers.classify import classify

V = [1.0, 0.0, 0.0]


def answer(tokens=10, **extra) -> dict:
    return {"status": 200, "vector": V, "encoding": "float", "prompt_tokens": tokens, "dim": 3, "n_vectors": 1,
            **extra}


def usage_reason(verdict) -> dict:
    [usage] = [d for d in verdict.reason["params"]["differences"] if d["code"].startswith("difference_usage")]
    return usage


def test_usage_off_is_signed_candidate_minus_tokenizer() -> None:
    over = classify(answer(10, tokenizer_tokens=10), answer(14, tokenizer_tokens=10))
    under = classify(answer(10, tokenizer_tokens=10), answer(7, tokenizer_tokens=10))
    assert over.verdict == under.verdict == "metadata-difference" and over.aspects == ["usage"]
    assert usage_reason(over) == {"code": "difference_usage_off",
                                  "params": {"legacy": 10, "candidate": 14, "expected": 10, "off": "+4"}}
    assert usage_reason(under)["params"]["off"] == "-3"


def test_missing_usage_names_the_tokenizer_count_when_there_is_one() -> None:
    counted = classify(answer(10, tokenizer_tokens=12), answer(None, tokenizer_tokens=12))
    uncounted = classify(answer(10), answer(None))
    assert usage_reason(counted) == {"code": "difference_usage_missing_counted",
                                     "params": {"legacy": 10, "expected": 12}}
    assert usage_reason(uncounted) == {"code": "difference_usage_missing", "params": {"legacy": 10}}


def test_equal_figures_read_from_json_are_equal() -> None:
    """Large ints and strings parsed from two answers are equal but not the same object."""
    legacy = json.loads('{"prompt_tokens": 6947, "dim": 1024, "model": "embedder-v1"}')
    candidate = json.loads('{"prompt_tokens": 6947, "dim": 1024, "model": "embedder-v1"}')
    assert legacy["model"] is not candidate["model"] and legacy["dim"] is not candidate["dim"]
    verdict = classify(answer(legacy["prompt_tokens"], dim=legacy["dim"], model=legacy["model"]),
                       answer(candidate["prompt_tokens"], dim=candidate["dim"], model=candidate["model"]))
    assert (verdict.verdict, verdict.aspects) == ("same", [])


def test_a_different_model_name_is_metadata_whichever_sorts_first() -> None:
    for legacy, candidate in (("b-model", "a-model"), ("a-model", "b-model")):
        verdict = classify(answer(model=legacy), answer(model=candidate))
        assert (verdict.verdict, verdict.aspects) == ("metadata-difference", ["model"])


def test_not_applicable_is_read_from_the_side_that_says_so() -> None:
    skipped = {"status": 0, "not_applicable": True, "api_shape": "tei", "not_applicable_field": "encoding_format"}
    for legacy, candidate in ((skipped, answer()), (answer(), skipped)):
        verdict = classify(legacy, candidate)
        assert verdict.verdict == "not-applicable"
        assert verdict.reason["params"] == {"shape": "tei", "field": "encoding_format"}


def test_order_aspect_only_when_the_candidate_alone_is_out_of_order() -> None:
    in_order = classify(answer(index_order_ok=True), answer(index_order_ok=True))
    out_of_order = classify(answer(index_order_ok=True), answer(index_order_ok=False))
    assert in_order.aspects == [] and in_order.verdict == "same"
    assert out_of_order.aspects == ["order"] and out_of_order.verdict == "silent-divergence"


def test_describe_body_summarises_only_the_input_list() -> None:
    body = {"model": "m", "input": ["a", "b", "c"], "token_ids": [1, 2, 3], "options": [4, 5, 6]}
    assert describe_body(body, b"") == {"model": "m", "input": "<3 inputs>", "token_ids": [1, 2, 3],
                                        "options": [4, 5, 6]}
