"""Several witnesses for step 05's reference: pairwise agreement, the consensus the gate uses, and the witness left
out with its reason, on a zoo model whose sentence-transformers reference depends on batch mates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.parity.witnesses import agreement, witness_vectors
from embedswap.reasons import explain
from typed_summary import as_typed

TEXTS = ["a", "a much longer text with many words in it", "b c", "the quick brown fox jumps", "x y z"]


@pytest.fixture(scope="module")
def batch_mates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from embedswap.zoo.bert import BATCH_MATES, build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("batch-mates") / "model", BATCH_MATES)


def test_a_reference_that_depends_on_batch_mates_is_the_odd_one_out(batch_mates: Path) -> None:
    vectors, errors = witness_vectors(str(batch_mates), TEXTS)
    assert errors == {}
    found = agreement(vectors, 0.999)
    assert found["consensus"] == ["sentence-transformers alone", "transformers alone", "transformers batch"]
    assert found["reference"] == "sentence-transformers alone"  # the gate compares with a consensus witness
    assert found["all_agree"] is False
    (odd,) = found["left_out"]
    assert odd["name"] == "sentence-transformers batch" and odd["code"] == "witness_batch_dependent"
    assert odd["params"]["other"] == "sentence-transformers alone"
    assert "depend on batch mates" in explain(odd["code"], **odd["params"])


def test_witnesses_that_agree_make_one_consensus(tiny_zoo: dict[str, Path]) -> None:
    vectors, errors = witness_vectors(str(tiny_zoo["tiny-bert-cls"]), TEXTS)
    found = agreement(vectors, 0.999, errors)
    assert found["all_agree"] is True and found["left_out"] == []
    assert found["reference"] == "sentence-transformers batch"  # unchanged where every witness agrees
    assert len(found["pairs"]) == 6 and all(p["cos_min"] >= 0.999 for p in found["pairs"])


def test_a_witness_disagreeing_with_the_others_and_one_that_failed() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(size=(4, 8)).astype(np.float32)
    other = rng.normal(size=(4, 8)).astype(np.float32)
    vectors = {"sentence-transformers batch": other, "sentence-transformers alone": other,
               "transformers alone": base, "transformers batch": base}
    found = agreement(vectors, 0.999, {"vllm transformers": "RuntimeError: no engine"})
    # two groups of two: the preferred implementation's pair is the consensus; the other pair disagrees
    assert found["consensus"] == ["sentence-transformers batch", "sentence-transformers alone"]
    assert {w["name"]: w["code"] for w in found["left_out"]} == {
        "transformers alone": "witness_disagrees", "transformers batch": "witness_disagrees",
        "vllm transformers": "witness_failed"}


def test_no_two_witnesses_agree_is_no_consensus() -> None:
    rng = np.random.default_rng(2)
    vectors = {n: rng.normal(size=(3, 8)).astype(np.float32) for n in ("sentence-transformers batch", "transformers alone")}
    found = agreement(vectors, 0.999)
    assert found["consensus"] == [] and found["reference"] is None


@pytest.mark.parametrize("lang", ["en", "ko", "ja", "zh"])
def test_the_report_names_the_odd_one_out_and_the_consensus(batch_mates: Path, lang: str) -> None:
    import copy
    import json

    from embedswap.report.markdown import render_markdown

    vectors, errors = witness_vectors(str(batch_mates), TEXTS)
    found = agreement(vectors, 0.999, errors)
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "summary_complete.json"
    summary = json.loads(fixture.read_text(encoding="utf-8"))
    odd = copy.deepcopy(summary)
    odd["parity"]["witnesses"] = found
    report = render_markdown(as_typed(odd), lang)
    assert "| `sentence-transformers batch` | 1 |" in report  # the matrix, diagonal first
    assert "- `sentence-transformers batch`" in report  # named, with its reason
    if lang == "en":
        assert "The gate compares against the consensus of the witnesses that agree" in report
        assert "depend on batch mates" in report
    agreeing = copy.deepcopy(summary)
    agreeing["parity"]["witnesses"] = {**found, "consensus": found["witnesses"], "left_out": [], "all_agree": True}
    if lang == "en":
        assert "Every witness agrees at the gate's threshold" in render_markdown(as_typed(agreeing), lang)


@pytest.mark.e2e
def test_the_engine_witness_reads_the_model_as_the_other_witnesses_do() -> None:
    """vLLM on the model's transformers implementation (``model_impl="transformers"``) is one more witness: on the
    embedded MiniLM it agrees with sentence-transformers and the kit's transformers backend."""
    from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path
    from embedswap.parity.witnesses import ENGINE_WITNESS, WITNESSES
    from embedswap.paths import engine_python

    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine`")
    texts = [*TEXTS, "한국어 문서도 같은 벡터가 나와야 합니다", "ベクトルは同じであるべきです"]
    vectors, errors = witness_vectors(resolve_model_path(EMBEDDED_DEFAULT), texts, [WITNESSES[0], ENGINE_WITNESS])
    assert errors == {}
    found = agreement(vectors, 0.999, errors)
    assert found["all_agree"] is True, found
    assert found["consensus"] == ["sentence-transformers batch", "vllm-transformers batch"]
    assert found["reference"] == "sentence-transformers batch"


def test_the_engine_witness_that_cannot_start_is_named() -> None:
    from embedswap.parity.witnesses import ENGINE_WITNESS

    vectors, errors = witness_vectors("/no/such/model", TEXTS, [ENGINE_WITNESS])
    assert vectors == {} and set(errors) == {"vllm-transformers batch"}
    found = agreement(vectors, 0.999, errors)
    assert [w["code"] for w in found["left_out"]] == ["witness_failed"] and found["all_agree"] is False


@pytest.mark.parametrize(("asked", "kinds", "runs"), [
    ("auto", ["legacy", "vllm"], True), ("auto", ["legacy", "dynamo"], True), ("auto", ["legacy", "external"], False),
    (False, ["legacy", "vllm"], False), (True, ["legacy", "external"], True)])
def test_parity_engine_witness_runs_where_a_target_is_served_by_vllm(asked, kinds: list[str], runs: bool) -> None:
    from types import SimpleNamespace

    from embedswap.steps.parity import _engine_witness

    experiment = SimpleNamespace(parity=SimpleNamespace(engine_witness=asked),
                                 targets={f"t{i}": SimpleNamespace(kind=k) for i, k in enumerate(kinds)})
    assert _engine_witness(experiment) is runs  # type: ignore[arg-type]


def test_auto_leaves_the_engine_witness_out_without_an_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from embedswap.steps.parity import _engine_witness

    monkeypatch.setenv("EMBEDSWAP_ENGINE_PYTHON", str(tmp_path / "no-engine" / "python"))
    experiment = SimpleNamespace(parity=SimpleNamespace(engine_witness="auto"),
                                 targets={"legacy": SimpleNamespace(kind="legacy"), "v": SimpleNamespace(kind="vllm")})
    assert _engine_witness(experiment) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("engine_witness", [False, True])
def test_step_05_writes_the_witnesses_and_gates_against_their_consensus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      tiny_zoo: dict[str, Path],
                                                                      engine_witness: bool) -> None:
    """Step 05 without a stored reference: the witnesses run on the sample (vLLM's one only when asked; here its
    engine is missing, so it is named as failed, not fatal) and the gate compares with their consensus."""
    from synthetic_experiment import write_experiment

    from embedswap import steps
    from embedswap.parity.witnesses import witness_vectors as run_witnesses

    monkeypatch.setenv("EMBEDSWAP_ENGINE_PYTHON", str(tmp_path / "no-engine" / "python"))
    model = str(tiny_zoo["tiny-bert-cls"])
    documents = [{"id": f"d{i}", "lang": "en", "text": text} for i, text in enumerate(TEXTS)]
    config = {"name": "t", "date": "2026-12-03", "model": {"path": model}, "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801}, "vllm": {"kind": "vllm", "port": 18802}},
              "candidates": ["vllm"], "parity": {"engine_witness": engine_witness}}
    ctx = steps.open_step(write_experiment(tmp_path / "exp", config, documents), create=True)
    served = run_witnesses(model, TEXTS)[0]["sentence-transformers batch"]
    for name in ("legacy", "vllm"):
        ctx.attempt.write_array(f"{name}/doc_vectors.npy", served[None])
    result = steps.run_parity(ctx)
    assert result["pass"] is True, result
    found = result["witnesses"]
    assert found["consensus"] == ["sentence-transformers batch", "sentence-transformers alone", "transformers alone",
                                  "transformers batch"]
    failed = [w["name"] for w in found["left_out"] if w["code"] == "witness_failed"]
    assert failed == (["vllm-transformers batch"] if engine_witness else [])
