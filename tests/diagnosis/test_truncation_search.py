"""The real input limit: a server that cuts its inputs at its own length (words, or a token limit nobody stated)
is diagnosed as truncation with the limit found, its own usage as evidence; other differences are not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.diagnosis.hypotheses import Diagnoser
from embedswap.diagnosis.truncation import search_truncation
from embedswap.measure.contract import long_input
from embedswap.reasons import explain

TEXTS = ["the migration of an embedding server touches every client that stores vectors for search later on",
         "a hosted service in front of the same model may cut long inputs silently at its own length",
         "short text",
         "pooling, normalisation and the end token decide the vector; truncation decides what the model saw",
         "twelve words are more than enough to show where a server stops reading the text"]


@pytest.fixture(scope="module")
def found(tiny_zoo: dict[str, Path]) -> Diagnoser:
    return Diagnoser(tiny_zoo["tiny-bert-dense"], TEXTS)


def _served(found: Diagnoser, texts: list[str]) -> np.ndarray:
    return found.embedder.embed(texts).vectors.numpy()


def test_a_word_limit_is_found_with_the_servers_usage(found: Diagnoser) -> None:
    served = _served(found, [" ".join(t.split()[:7]) for t in TEXTS])
    tok = found.embedder.tokenizer
    usage = len(tok(" ".join(long_input(None).split()[:7]))["input_ids"])  # what the server counted
    result = found.diagnose(served, "hosted", evidence={"prompt_tokens": usage, "text": long_input(None)})
    assert result["cause"] == "diagnosis_truncation_words", result
    assert result["truncation"]["limit"] == 7 and result["truncation"]["unit"] == "words"
    assert result["truncation"]["usage"] == {"prompt_tokens": usage, "expected": usage, "agrees": True}
    assert [r["code"] for r in result["reasons"]] == ["diagnosis_truncation_words", "diagnosis_truncation_usage"]
    assert "cuts its inputs at about 7 words" in result["reasons"][0]["why"]


def test_a_token_limit_below_the_models_is_found(found: Diagnoser) -> None:
    tok = found.embedder.tokenizer
    served = found.embedder.embed([list(tok(t, truncation=True, max_length=9)["input_ids"]) for t in TEXTS])
    result = found.diagnose(served.vectors.numpy(), "hosted")
    assert result["cause"] == "diagnosis_truncation_tokens", result
    assert result["truncation"]["limit"] == 9


def test_noise_is_no_truncation(found: Diagnoser) -> None:
    rng = np.random.default_rng(0)
    served = _served(found, TEXTS)
    noisy = served + rng.normal(0, 0.3, served.shape).astype(np.float32)
    result = found.diagnose(noisy / np.linalg.norm(noisy, axis=1, keepdims=True), "odd")
    assert result["cause"] == "diagnosis_unknown"
    assert [r["code"] for r in result["reasons"]] == ["diagnosis_unknown", "diagnosis_no_truncation"]
    assert result["truncation"]["found"] is False
    assert explain("diagnosis_no_truncation", name="odd").startswith("no truncation")


def test_nothing_to_search_when_no_document_differs(found: Diagnoser) -> None:
    served = _served(found, TEXTS)
    assert search_truncation(found.embedder, TEXTS, served, served, 0.999) is None


CORPUS = [f"document {i} says {'a little more ' * (i % 9)}about where a server stops reading long inputs"
          for i in range(48)]


def test_a_limit_is_found_through_the_probe_and_confirmed_on_every_text(tiny_zoo: dict[str, Path]) -> None:
    found = Diagnoser(tiny_zoo["tiny-bert-dense"], CORPUS)
    assert found.rows is not None  # more texts than two probes: the probe texts are searched first
    tok = found.embedder.tokenizer
    served = found.embedder.embed([list(tok(t, truncation=True, max_length=9)["input_ids"]) for t in CORPUS])
    result = found.diagnose(served.vectors.numpy(), "hosted")
    assert result["cause"] == "diagnosis_truncation_tokens", result
    assert result["truncation"]["limit"] == 9 and result["truncation"]["confirmed_on"] == len(CORPUS)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(len(CORPUS), 16)).astype(np.float32)
    unknown = Diagnoser(tiny_zoo["tiny-bert-dense"], CORPUS).diagnose(noise, "odd")
    assert unknown["cause"] == "diagnosis_unknown" and unknown["truncation"]["found"] is False
