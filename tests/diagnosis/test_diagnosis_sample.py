"""The diagnosis is sized for a corpus: a sample (the lowest cosines + a seeded sample stratified by language, as
large as parity.sample), and the hypotheses stop once one reproduces the vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.diagnosis.hypotheses import Diagnoser
from embedswap.diagnosis.sample import diagnosis_sample, lowest, row_cosines

TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!",
         "the quick brown fox", "pooling decides the vector"]


def test_the_sample_holds_the_lowest_cosines_and_every_language() -> None:
    langs = ["ko"] * 600 + ["en"] * 300 + ["ja"] * 90 + ["zh"] * 10
    cosines = np.ones(1000)
    cosines[[5, 950, 999, 700]] = [0.2, 0.5, 0.3, 0.9]
    chosen, record = diagnosis_sample(langs, [cosines], 64)
    assert len(chosen) == 64 and chosen == sorted(chosen)
    assert {5, 950, 999, 700} <= set(chosen)  # the worst documents are diagnosed
    assert record["documents"] == 64 and record["of"] == 1000 and record["whole"] is False
    assert record["lowest"] == 16 and set(record["languages"]) == {"ko", "en", "ja", "zh"}
    again, _ = diagnosis_sample(langs, [cosines], 64)
    assert again == chosen  # seeded


def test_a_small_corpus_is_diagnosed_whole() -> None:
    chosen, record = diagnosis_sample(["en"] * 10, [np.ones(10)], 512)
    assert chosen == list(range(10)) and record["whole"] is True


def test_lowest_takes_each_candidate_in_turn_and_non_finite_first() -> None:
    a = np.array([0.9, 0.1, 0.5, 1.0])
    b = np.array([0.2, 1.0, 1.0, 1.0])
    assert lowest([a, b], 2) == [1, 0]
    cos = row_cosines(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert cos[0] == pytest.approx(1.0) and cos[1] == -np.inf


def test_the_hypotheses_stop_once_one_reproduces_the_vectors(tiny_zoo: dict[str, Path]) -> None:
    model = tiny_zoo["tiny-bert-cls"]
    found = Diagnoser(model, TEXTS, limits=[4])
    found._own_pass()  # the model's own pass, every reduction (computed on first use)
    served = found.candidates[next(h for h in found.candidates if h.pooling == "mean" and h.normalize)]
    result = found.diagnose(served, "vllm")
    assert result["cause"] == "diagnosis_pooling"
    assert found.passes == 1  # the truth's own pass reproduced it: no other forward pass was made
    found._complete()
    assert found.passes > 3  # end token, prompts, truncation at 4, fp16, bf16: what it did not need


MANY = [f"text number {i} with {'some ' * (i % 7)}words about servers" for i in range(40)]


def test_a_variant_is_probed_on_a_few_texts_before_a_full_pass(tiny_zoo: dict[str, Path]) -> None:
    found = Diagnoser(tiny_zoo["tiny-bert-cls"], MANY, limits=[5])
    assert found.rows is not None and len(found.rows) == 16 and found.passes == 0  # the model's pass: probe only
    rng = np.random.default_rng(3)
    noise = rng.normal(size=(len(MANY), 16)).astype(np.float32)
    assert found.diagnose(noise, "noise")["cause"] == "diagnosis_unknown"
    assert found.passes == 0  # nothing reproduced the probe texts: no pass over every text was made
    assert not found._lower_models  # nor was a lower precision loaded: noise is further than a precision moves
    # a server truncating at 5 tokens: its variant reproduces the probe texts, and only then is run on every text
    tok = found.embedder.tokenizer
    cut = found.embedder.embed([list(tok(t, truncation=True, max_length=5)["input_ids"]) for t in MANY])
    result = found.diagnose(cut.vectors.numpy(), "cut")
    assert result["cause"] == "diagnosis_truncation", result
    assert found.passes == 1
    right = found.embedder.embed(MANY).vectors.numpy()
    assert found.diagnose(right, "right")["cause"] is None and found.passes == 2  # the model's own, on every text


def test_a_lower_precision_is_still_loaded_when_the_vectors_are_near_the_model(tiny_zoo: dict[str, Path]) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_zoo["tiny-bert-no-normalize"]), device="cpu",
                                model_kwargs={"torch_dtype": torch.bfloat16})
    served = model.encode(MANY, convert_to_numpy=True).astype(np.float32)
    found = Diagnoser(tiny_zoo["tiny-bert-no-normalize"], MANY)
    result = found.diagnose(served, "vllm", 0.99995)  # bf16 stays within 0.999 on these texts (0.99991)
    assert result["cause"] == "diagnosis_dtype", result
    assert result["reasons"][0]["params"]["dtype"] == "bfloat16" and "bfloat16" in found._lower_models


def test_the_probe_holds_the_longest_texts_and_a_spread() -> None:
    from embedswap.diagnosis.probe import probe_rows

    lengths = [5] * 100
    lengths[37], lengths[90] = 400, 300
    rows = probe_rows(lengths, 8)
    assert len(rows) == 8 and rows == sorted(rows) and {37, 90} <= set(rows)
    assert rows[0] == 0 and max(rows) >= 75  # spread over the texts, not the first eight


def test_a_lower_precision_is_not_loaded_for_vectors_out_of_its_reach(tiny_zoo: dict[str, Path]) -> None:
    found = Diagnoser(tiny_zoo["tiny-bert-cls"], TEXTS)  # a few texts: no probe, the model's pass is whole
    noise = np.random.default_rng(5).normal(size=found.truth_vectors().shape).astype(np.float32)
    assert found.diagnose(noise, "noise")["cause"] == "diagnosis_unknown"
    assert not found._lower_models and found.passes > 1  # the other variants were tried, no precision loaded
