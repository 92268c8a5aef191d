import numpy as np
import pytest

from embedswap.measure.contract import CATALOGUE, ProbeContext, build_request, select_probes
from embedswap.answers.classify import classify
from typed_summary import as_typed


def side(status: int, vector=None, encoding="float", tokens=10, dim=None) -> dict:
    return {"status": status, "vector": vector, "encoding": encoding if status == 200 else None,
            "prompt_tokens": tokens if status == 200 else None,
            "dim": dim if dim is not None else (len(vector) if vector is not None else None),
            "n_vectors": 1 if status == 200 else None, "error": None if status == 200 else "x"}


V = [1.0, 0.0, 0.0]


def test_catalogue_has_the_article_probes_and_at_least_twelve() -> None:
    names = {p["name"] for p in CATALOGUE}
    assert len(names) >= 12
    assert {"dimensions_native", "dimensions_reduced", "input_type_query", "over_long_input",
            "encoding_base64"} <= names


@pytest.mark.parametrize(
    ("legacy", "candidate", "verdict"),
    [
        (side(200, V), side(200, V), "same"),
        (side(200, V, tokens=28), side(200, [0.82, 0.5724, 0.0], tokens=9), "silent-divergence"),  # the article's 0.82
        (side(200, V), side(200, V, tokens=11), "metadata-difference"),  # usage counted differently
        (side(200, V), side(200, V, tokens=None), "metadata-difference"),  # usage omitted
        (side(200, V), side(200, [2.0, 0.0, 0.0]), "silent-divergence"),  # scaled: cosine 1, norm 2
        (side(200, V), side(400), "loud-failure"),
        (side(200, V), side(500), "retry-hazard"),  # dimensions through Dynamo
        (side(400), side(500), "retry-hazard"),
        (side(400), side(400), "same"),
        (side(400), side(422), "same"),
        (side(200, V), side(200, V, encoding="base64"), "format-difference"),
        (side(200, V), side(200, [1.0, 0.0], dim=2), "silent-divergence"),
        (side(200, V), side(0), "retry-hazard"),
    ],
)
def test_verdict_rules(legacy: dict, candidate: dict, verdict: str) -> None:
    assert classify(legacy, candidate).verdict == verdict


def test_silent_divergence_reports_the_cosine() -> None:
    result = classify(side(200, V), side(200, [0.82, float(np.sqrt(1 - 0.82**2)), 0.0]))
    assert result.cosine == pytest.approx(0.82)
    assert "cosine 0.8200" in result.detail


@pytest.mark.parametrize("factor", [0.5, 0.856, 1.01, 3.0])
def test_a_scaled_vector_is_a_length_difference_though_the_cosine_is_one(factor: float) -> None:
    result = classify(side(200, V), side(200, [factor, 0.0, 0.0]))
    assert result.verdict == "silent-divergence"
    assert result.aspects == ["length"]
    assert result.cosine == pytest.approx(1.0)
    assert f"norm ratio {factor:.4f}" in result.detail


def test_a_vector_sliced_without_renormalising_is_a_length_difference() -> None:
    full = np.random.default_rng(0).normal(size=384)
    full /= np.linalg.norm(full)
    sliced = full[:256]  # what Infinity answers for dimensions=256: the first 256 values, not re-normalised
    legacy = side(200, list(sliced / np.linalg.norm(sliced)))
    result = classify(legacy, side(200, list(sliced)))
    assert result.verdict == "silent-divergence"
    assert "length" in result.aspects and "direction" not in result.aspects
    assert f"norm ratio {np.linalg.norm(sliced):.4f}" in result.detail


def test_usage_alone_is_metadata_and_says_what_it_breaks() -> None:
    result = classify(side(200, V, tokens=28), side(200, V, tokens=70))
    assert (result.verdict, result.aspects) == ("metadata-difference", ["usage"])
    assert "prompt_tokens 28 vs 70" in result.detail and "billing" in result.detail


def test_usage_beside_a_vector_difference_stays_silent_divergence() -> None:
    result = classify(side(200, V, tokens=28), side(200, [0.0, 1.0, 0.0], tokens=70))
    assert result.verdict == "silent-divergence"
    assert result.aspects == ["direction", "usage"]


def test_mismatched_shapes_are_a_dimension_aspect_not_a_nan() -> None:
    result = classify(side(200, V, dim=3), side(200, [1.0, 0.0], dim=3))  # dim field agrees, vectors do not
    assert result.verdict == "silent-divergence"
    assert "dimension" in result.aspects and result.cosine is None


def test_requests_are_filled_from_the_context() -> None:
    ctx = ProbeContext(doc="hello", docs8=["d"] * 8, query="q?", task="T", model="m", native_dim=384,
                       token_ids=[101, 102])
    probes = {p.name: p for p in select_probes("all", [])}
    _, body = build_request(probes["dimensions_reduced"], ctx)
    assert body == {"model": "m", "input": ["hello"], "dimensions": 256}
    _, body = build_request(probes["whitespace_padded"], ctx)
    assert body["input"] == ["  hello \n"]
    _, body = build_request(probes["large_batch"], ctx)
    assert len(body["input"]) == 512
    raw, body = build_request(probes["non_json_body"], ctx)
    assert body is None and raw == b"this is not json"
    with pytest.raises(ValueError, match="unknown probe"):
        select_probes(["nope"], [])


def test_v2_embed_probe_names_its_route_and_its_reference() -> None:
    probes = {p.name: p for p in select_probes("all", [])}
    v2 = probes["v2_embed_query"]
    assert v2.path == "/v2/embed" and v2.compare_to == "input_type_query" and v2.query
    ctx = ProbeContext(doc="d", docs8=["d"] * 8, query="q?", task="t", model="m", native_dim=8)
    _, body = build_request(v2, ctx)
    assert body == {"model": "m", "texts": ["q?"], "input_type": "query", "embedding_types": ["float"]}
    # choosing the probe alone brings the probe it is compared with
    assert [p.name for p in select_probes(["v2_embed_query"], [])] == ["plain", "v2_embed_query", "input_type_query"]


def test_custom_probe_reference_must_be_run() -> None:
    from embedswap.config import ProbeSpec

    mine = ProbeSpec(name="mine", path="/v2/embed", compare_to="no_such_probe", body={"texts": ["$doc"]})
    with pytest.raises(ValueError, match="compare_to 'no_such_probe'"):
        select_probes(["plain"], [mine])
    ok = ProbeSpec(name="mine", path="/v2/embed", compare_to="plain", body={"texts": ["$doc"]})
    assert [p.name for p in select_probes(["plain"], [ok])] == ["plain", "mine"]
    with pytest.raises(ValueError, match="path must be a URL path"):
        ProbeSpec(name="bad", path="v2/embed")


def test_advice_names_the_length_and_usage_aspects() -> None:
    from embedswap.analysis.client_changes import _hits
    from embedswap.summary.types_vectors import ProbeRow, ProbeSide, ProbeReading

    def row(probe: str, legacy: dict, candidate: dict) -> ProbeRow:
        v = classify(legacy, candidate)
        verdict = ProbeReading(verdict=v.verdict, detail=v.detail, aspects=list(v.aspects))
        return ProbeRow(probe=probe, by_target={"cand": ProbeSide(measured=True, status=candidate["status"])},
                        verdicts={"cand": verdict})

    hits = _hits([row("dimensions_reduced", side(200, V), side(200, [0.856, 0.0, 0.0])),
                  row("plain", side(200, V, tokens=10), side(200, V, tokens=None))])
    assert [h.probe for h in hits["renormalise"]] == ["dimensions_reduced"]
    assert [h.probe for h in hits["count_tokens"]] == ["plain"]
    assert "plain_differs" not in hits  # usage alone no longer says the plain request answers differently


def test_advice_orders_by_index_only_for_a_candidate_that_answered_out_of_order() -> None:
    from typed_summary import summary_body

    from embedswap.analysis.client_changes import client_changes

    def order(ok: bool) -> dict:
        return {"measured": True, "index_order_ok": ok}

    summary = {"contract": [], "roles": {"legacy": "legacy", "candidates": ["a", "b"]},
               "vectors": {"measured": True, "by_target": {"legacy": order(True), "a": order(False), "b": order(True)}}}
    changes = client_changes(summary_body(summary))
    assert [c.rule for c in changes] == ["order_by_index"]
    assert [p.candidate for p in changes[0].probes] == ["a"]
    summary["vectors"]["by_target"]["a"]["index_order_ok"] = True
    assert client_changes(summary_body(summary)) == []


def test_the_order_advice_is_worded_in_every_report_language() -> None:
    import copy
    import json
    from pathlib import Path

    from embedswap.report.markdown import render_markdown

    summary = json.loads((Path(__file__).parents[1] / "fixtures" / "summary_complete.json").read_text())
    candidate = summary["roles"]["candidates"][0]
    summary = copy.deepcopy(summary)
    summary["vectors"]["by_target"][candidate]["index_order_ok"] = False
    words = {"en": "order the vectors by `index`", "ko": "`index` 로 벡터를 정렬하세요",
             "ja": "`index` でベクトルを並べ替えてください", "zh": "请按 `index` 排列向量"}
    for lang, text in words.items():
        assert text in render_markdown(as_typed(summary), lang)


def test_the_summary_model_knows_every_contract_verdict() -> None:
    from typing import get_args

    from embedswap.answers.classify import VERDICTS
    from embedswap.summary.types_vectors import ProbeVerdict

    assert sorted(get_args(ProbeVerdict)) == sorted(VERDICTS)


def test_usage_that_counts_another_input_asks_for_no_client_side_count() -> None:
    """An ignored instruction: legacy embedded (and counted) the prompt plus the query, the candidate the bare query.
    The counts differ because the inputs do, so `count_tokens` (count it in the client) would fix nothing (issue 63);
    the same counts on the same vector still ask for it."""
    from embedswap.analysis.client_changes import _hits
    from embedswap.summary.types_vectors import ProbeRow, ProbeSide, ProbeReading

    def row(probe: str, legacy: dict, candidate: dict) -> ProbeRow:
        v = classify(legacy, candidate)
        verdict = ProbeReading(verdict=v.verdict, detail=v.detail, aspects=list(v.aspects))
        return ProbeRow(probe=probe, by_target={"cand": ProbeSide(measured=True, status=candidate["status"])},
                        verdicts={"cand": verdict})

    elsewhere = [0.0, 1.0, 0.0]  # the bare query's vector: another direction
    instruction = row("input_type_query", side(200, V, tokens=72), side(200, elsewhere, tokens=54))
    assert {"direction", "usage"} <= set(instruction.verdicts["cand"].aspects)
    assert "count_tokens" not in _hits([instruction])
    counted = row("plain", side(200, V, tokens=72), side(200, V, tokens=54))
    assert [h.probe for h in _hits([counted])["count_tokens"]] == ["plain"]
