"""Behaviour of contract.py that the mutation run (scripts/mutation.py, session `contract`) found unchecked:
which side a failure is blamed on, every status pair around the 200 / 4xx / 5xx / 0 boundaries, the details a
reader sees, the request filling and probe selection. Expected values are written out by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

from embedswap.config import ProbeSpec
from embedswap.measure.contract import ProbeContext, build_request, catalogue_specs, describe_body, select_probes
from embedswap.answers.classify import NORM_TOLERANCE, classify, cosine, norm_ratio


def side(status: int, vector=None, encoding="float", tokens=10, dim=None, **extra) -> dict:
    answer = {"status": status, "vector": vector, "encoding": encoding if status == 200 else None,
              "prompt_tokens": tokens if status == 200 else None,
              "dim": dim if dim is not None else (len(vector) if vector is not None else None),
              "n_vectors": 1 if status == 200 else None}
    return {**answer, **extra}


V = [1.0, 0.0, 0.0]


@pytest.mark.parametrize(("ls", "cs", "verdict", "words"), [
    (500, 200, "retry-hazard", "legacy answered 500 where the other side answered 200"),
    (200, 503, "retry-hazard", "candidate answered 503 where the other side answered 200"),
    (0, 200, "retry-hazard", "legacy answered 0 where the other side answered 200"),
    (200, 0, "retry-hazard", "candidate answered 0 where the other side answered 200"),
    (400, 500, "retry-hazard", "candidate answered 500 where the other side answered 400"),
    (499, 500, "retry-hazard", "candidate answered 500 where the other side answered 499"),
    (500, 422, "retry-hazard", "legacy answered 500 where the other side answered 422"),
    # both fail alike: the client meets it already, not a difference (issue 54)
    (500, 500, "same", "both failed with server errors (500 vs 500)"),
    (502, 0, "same", "both failed with server errors (502 vs 0)"),
    (500, 302, "loud-failure", "both failed with server errors (500 vs 302)"),  # a redirect is not a 4xx
    (500, 399, "loud-failure", "both failed with server errors (500 vs 399)"),
    (500, 400, "retry-hazard", "legacy answered 500 where the other side answered 400"),
    (500, 499, "retry-hazard", "legacy answered 500 where the other side answered 499"),
    (200, 400, "loud-failure", "candidate rejected it (400) where the other answered 200"),
    (422, 200, "loud-failure", "legacy rejected it (422) where the other answered 200"),
    (200, 499, "loud-failure", "candidate rejected it (499) where the other answered 200"),
    (404, 404, "same", "both rejected it with 404"),
    (400, 422, "same", "both rejected it (400 vs 422)"),
    (422, 400, "same", "both rejected it (422 vs 400)"),
])
def test_each_status_pair_is_blamed_on_the_right_side(ls: int, cs: int, verdict: str, words: str) -> None:
    result = classify(side(ls, V if ls == 200 else None), side(cs, V if cs == 200 else None))
    assert result.verdict == verdict and result.detail.startswith(words)
    assert result.cosine is None and result.aspects == []


def test_a_server_error_on_both_sides_is_not_a_retry_hazard_even_at_the_5xx_boundary() -> None:
    assert classify(side(500), side(599)).verdict == "same"  # both server errors: the same answer (issue 54)
    assert classify(side(200), side(599)).verdict == "retry-hazard"  # 599 is still a server error
    assert classify(side(499), side(498)).verdict == "same"  # both 4xx: nothing to retry


def test_equivalent_answers_carry_their_cosine_and_no_aspect() -> None:
    result = classify(side(200, V), side(200, [1.0, 1e-9, 0.0]))
    assert (result.verdict, result.detail, result.aspects) == ("same", "equivalent answers", [])
    assert result.cosine == pytest.approx(1.0)


def test_the_threshold_is_inclusive_and_the_detail_names_it() -> None:
    b = [0.999, float(np.sqrt(1 - 0.999 ** 2)), 0.0]  # cosine 0.999 exactly, same length
    assert classify(side(200, V), side(200, b), same_threshold=0.999).verdict == "same"
    result = classify(side(200, V), side(200, b), same_threshold=0.9995)
    assert result.verdict == "silent-divergence" and result.aspects == ["direction"]
    assert result.detail == "both 200, but cosine 0.9990 between the two answers (threshold 0.9995)"


def test_count_and_dimension_differences_are_named_in_order() -> None:
    legacy = side(200, V)
    candidate = {**side(200, V), "n_vectors": 2, "dim": 4}
    result = classify(legacy, candidate)
    assert result.verdict == "silent-divergence"
    assert result.aspects == ["count", "dimension"]
    assert result.detail == "both 200, but 1 vs 2 vectors; 3 vs 4 dimensions"


def test_a_zero_vector_has_no_cosine_and_is_a_direction_difference() -> None:
    result = classify(side(200, V), side(200, [0.0, 0.0, 0.0]))
    assert result.verdict == "silent-divergence" and result.cosine is None
    assert result.aspects == ["direction", "length"]  # and its length is 0 times the legacy one
    assert "cosine undefined (a vector of length zero)" in result.detail


def test_shapes_differing_with_equal_dim_fields_name_the_shapes() -> None:
    result = classify(side(200, V, dim=3), side(200, [1.0, 0.0], dim=3))
    assert result.aspects == ["dimension"]
    assert "vector shapes (3,) vs (2,)" in result.detail
    # with the dim field already differing, the shapes are not named a second time
    result = classify(side(200, V), side(200, [1.0, 0.0]))
    assert result.aspects == ["dimension"] and "vector shapes" not in result.detail


def test_a_missing_vector_on_one_side_compares_only_the_fields() -> None:
    result = classify(side(200, V), side(200, None, dim=3))
    assert (result.verdict, result.cosine) == ("same", None)


@pytest.mark.parametrize(("factor", "diverges"), [(1 + 2 * NORM_TOLERANCE, True), (1 - 2 * NORM_TOLERANCE, True),
                                                  (1 + NORM_TOLERANCE / 2, False), (1 - NORM_TOLERANCE / 2, False)])
def test_the_norm_tolerance_is_relative_on_both_sides_of_one(factor: float, diverges: bool) -> None:
    result = classify(side(200, V), side(200, [factor, 0.0, 0.0]))
    assert ("length" in result.aspects) is diverges
    assert result.verdict == ("silent-divergence" if diverges else "same")


def test_norm_ratio_is_candidate_over_legacy() -> None:
    assert norm_ratio([3.0, 4.0], [6.0, 8.0]) == pytest.approx(2.0)
    assert norm_ratio([6.0, 8.0], [3.0, 4.0]) == pytest.approx(0.5)
    assert norm_ratio([0.0, 0.0], [3.0, 4.0]) is None  # no length to compare with
    assert norm_ratio([float("inf"), 0.0], [3.0, 4.0]) is None
    assert norm_ratio([3.0, 4.0], [float("nan"), 1.0]) is None
    assert norm_ratio([3.0, 4.0], [0.0, 0.0]) == 0.0  # a zero answer is a length, 0 times the legacy one


def test_cosine_by_hand() -> None:
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)
    assert cosine([1.0, 1.0], [-1.0, -1.0]) == pytest.approx(-1.0)
    assert np.isnan(cosine([1.0, 0.0], [1.0, 0.0, 0.0]))
    assert np.isnan(cosine([0.0, 0.0], [1.0, 0.0]))


def test_usage_and_model_echo_are_metadata_in_this_order() -> None:
    result = classify(side(200, V, tokens=5, model="a"), side(200, V, tokens=6, model="b"))
    assert result.verdict == "metadata-difference" and result.aspects == ["usage", "model"]
    assert result.detail == ("same vectors, but prompt_tokens 5 vs 6; echoed model 'a' vs 'b' "
                             "(breaks billing and token budgets, not search)")
    # a model named by one side only is not compared
    assert classify(side(200, V, model="a"), side(200, V)).verdict == "same"
    assert classify(side(200, V), side(200, V, model="b")).verdict == "same"
    assert classify(side(200, V, model="a"), side(200, V, model="a")).verdict == "same"


def test_metadata_beside_a_divergence_is_appended_to_the_detail() -> None:
    result = classify(side(200, V, tokens=5), side(200, [0.0, 1.0, 0.0], tokens=6))
    assert result.detail == ("both 200, but cosine 0.0000 between the two answers (threshold 0.999); "
                             "prompt_tokens 5 vs 6")


def test_a_format_difference_names_both_encodings() -> None:
    result = classify(side(200, V), side(200, V, encoding="base64"))
    assert result.verdict == "format-difference" and result.aspects == ["encoding"]
    assert result.detail == "float vs base64 (same numbers once decoded)"
    back = classify(side(200, V, encoding="base64"), side(200, V))  # either way round
    assert back.verdict == "format-difference" and back.detail == "base64 vs float (same numbers once decoded)"
    assert result.cosine == pytest.approx(1.0)


# --- requests ------------------------------------------------------------------------------------------------
def context(native_dim: int = 384) -> ProbeContext:
    return ProbeContext(doc="hello", docs8=[f"doc{i} " + "x" * 100 for i in range(8)], query="q?", task="T",
                        model="m", native_dim=native_dim, token_ids=[101, 7, 102])


@pytest.mark.parametrize(("native", "reduced"), [(384, 256), (257, 256), (256, 128), (255, 127), (2, 1), (1, 1),
                                                 (0, 1)])
def test_the_reduced_dimension_is_256_or_half_and_never_zero(native: int, reduced: int) -> None:
    assert context(native).values()["$reduced_dim"] == reduced


def test_every_placeholder_is_filled() -> None:
    values = context().values()
    assert values["$long"] == "word " * 2000
    batch = values["$large_batch"]
    assert len(batch) == 512
    assert batch[0] == "doc0 " + "x" * 11 + " #0"  # the first 16 characters of each document, then its number
    assert batch[9] == "doc1 " + "x" * 11 + " #9"  # the documents repeat in order
    assert batch[511] == "doc7 " + "x" * 11 + " #511"
    probes = {p.name: p for p in catalogue_specs()}
    ctx = context()
    assert build_request(probes["token_ids"], ctx)[1]["input"] == [[101, 7, 102]]
    assert build_request(probes["batch8_member"], ctx)[1]["input"] == ctx.docs8
    assert build_request(probes["dimensions_native"], ctx)[1]["dimensions"] == 384
    assert build_request(probes["instruction_field"], ctx)[1] == {"model": "m", "input": ["q?"], "instruction": "T"}
    assert build_request(probes["empty_list"], ctx)[1] == {"model": "m", "input": []}
    assert build_request(probes["wrong_type"], ctx)[1] == {"model": "m", "input": 12345}
    # the probe's own model wins over the run's
    assert build_request(probes["unknown_model"], ctx)[1]["model"] == "no-such-model"


def test_the_bytes_sent_are_the_body_as_utf8_json() -> None:
    probes = {p.name: p for p in catalogue_specs()}
    raw, body = build_request(probes["unicode_mixed"], context())
    assert json.loads(raw.decode("utf-8")) == body
    assert "임베딩".encode() in raw  # not \\u escapes
    raw, body = build_request(ProbeSpec(name="x"), context())  # no body at all: the model only
    assert body == {"model": "m"} and raw == b'{"model": "m"}'


def test_a_placeholder_inside_a_longer_text_and_nested_values() -> None:
    spec = ProbeSpec(name="x", body={"input": ["<$doc>"], "meta": {"q": "$query", "n": [1, "$task"]},
                                     "plain": "$unknown"})
    _, body = build_request(spec, context())
    assert body == {"model": "m", "input": ["<hello>"], "meta": {"q": "q?", "n": [1, "T"]}, "plain": "$unknown"}


def test_what_was_sent_is_summarised_readably() -> None:
    assert describe_body(None, b"x" * 300) == {"raw_body": "x" * 200}
    assert describe_body(None, b"\xff ok") == {"raw_body": "\ufffd ok"}
    out = describe_body({"input": ["a", "b", "c"], "model": "m"}, b"")
    assert out == {"input": "<3 inputs>", "model": "m"}
    assert describe_body({"input": ["a", "b"]}, b"") == {"input": ["a", "b"]}  # two inputs are shown as they are
    long = "y" * 121
    assert describe_body({"input": long}, b"") == {"input": "y" * 60 + "... <121 chars>"}
    assert describe_body({"input": "y" * 120}, b"") == {"input": "y" * 120}
    assert describe_body({"input": [long]}, b"") == {"input": ["y" * 60 + "... <121 chars>"]}
    assert describe_body({"input": ["y" * 120]}, b"") == {"input": ["y" * 120]}
    assert describe_body({"input": []}, b"") == {"input": []}
    assert describe_body({"input": [[1, 2]]}, b"") == {"input": [[1, 2]]}


def test_selecting_probes_keeps_plain_first_and_once() -> None:
    assert [p.name for p in select_probes(["encoding_base64", "plain"], [])] == ["plain", "encoding_base64"]
    assert [p.name for p in select_probes([], [])] == ["plain"]
    every = select_probes("all", [])
    assert [p.name for p in every] == [p.name for p in catalogue_specs()]
    mine = ProbeSpec(name="mine", body={"input": ["$doc"]})
    assert [p.name for p in select_probes("all", [mine])][-1] == "mine"
    # a reference already chosen is not added twice
    names = [p.name for p in select_probes(["input_type_query", "v2_embed_query"], [])]
    assert names == ["plain", "input_type_query", "v2_embed_query"]
    with pytest.raises(ValueError, match=r"unknown probe\(s\) \['nope'\]"):
        select_probes(["plain", "nope"], [])


def test_probe_names_from_a_config_file_are_compared_by_value() -> None:
    # names parsed from YAML/JSON are new string objects, not the interned literal "plain"
    names = json.loads('["plain", "encoding_base64"]')
    assert [p.name for p in select_probes(names, [])] == ["plain", "encoding_base64"]


def test_the_query_probes_are_flagged_as_queries() -> None:
    assert {p.name for p in catalogue_specs() if p.query} == {"input_type_query", "instruction_field",
                                                              "v2_embed_query"}


def test_the_native_dimension_is_unknown_until_the_plain_answer() -> None:
    ctx = ProbeContext(doc="d", docs8=["d"] * 8, query="q", task="t", model="m")
    assert ctx.values()["$native_dim"] == 0 and ctx.token_ids == []


def test_only_the_input_list_is_summarised_by_count() -> None:
    out = describe_body({"embedding_types": ["float", "int8", "uint8"], "input": ["a", "b", "c"]}, b"")
    assert out == {"embedding_types": ["float", "int8", "uint8"], "input": "<3 inputs>"}
