"""The diagnosis names the pipeline mistake that reproduces a server's vectors, on the tiny zoo models.

Each "server" here is sentence-transformers itself run with a deliberately wrong module list (built independently
of the diagnosis' own pooling code), so a test passes only if the diagnosis reproduces another implementation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embedswap.diagnosis.hypotheses import diagnose

TEXTS = ["hello world", "a much longer sentence about embeddings and servers", "x", "migration 2026!",
         "the quick brown fox", "pooling decides the vector"]


@pytest.fixture(scope="module")
def zoo(tiny_zoo: dict[str, Path]) -> dict[str, Path]:
    return tiny_zoo  # tests/conftest.py: built once per session


def _served(folder: Path, pooling: str | None = None, dense: bool = True, normalize: bool | None = None) -> np.ndarray:
    """What a server with this pipeline answers: sentence-transformers with modules swapped or dropped."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    model = SentenceTransformer(str(folder), device="cpu")
    modules = [m for m in model]
    if pooling is not None:
        modules[1] = Pooling(modules[1].get_embedding_dimension(), pooling_mode=pooling)
    if not dense:
        modules = [m for m in modules if not isinstance(m, Dense)]
    if normalize is False:
        modules = [m for m in modules if not isinstance(m, Normalize)]
    if normalize is True and not any(isinstance(m, Normalize) for m in modules):
        modules.append(Normalize())
    return SentenceTransformer(modules=modules, device="cpu").encode(TEXTS, convert_to_numpy=True)


CASES = [  # (zoo model, server pipeline, expected first cause)
    ("tiny-bert-dense", {"dense": False}, "diagnosis_dense_ignored"),
    ("tiny-bert-cls", {"pooling": "mean"}, "diagnosis_pooling"),
    ("tiny-bert-dense", {"pooling": "max"}, "diagnosis_pooling"),
    ("tiny-bert-no-normalize", {"normalize": True}, "diagnosis_normalize_added"),
    ("tiny-bert-cls", {"normalize": False}, "diagnosis_normalize_missing"),
]


@pytest.mark.parametrize(("model", "server", "cause"), CASES)
def test_diagnosis_names_the_cause(zoo: dict[str, Path], model: str, server: dict, cause: str) -> None:
    result = diagnose(zoo[model], TEXTS, _served(zoo[model], **server), "vllm")
    assert result["cause"] == cause, result
    assert result["hypothesis"]["cos_min"] >= 0.999
    assert "'vllm'" in result["reasons"][0]["why"]


def test_right_server_has_no_cause_and_noise_is_unknown(zoo: dict[str, Path]) -> None:
    right = _served(zoo["tiny-bert-dense"])
    assert diagnose(zoo["tiny-bert-dense"], TEXTS, right, "legacy")["cause"] is None
    noise = np.random.default_rng(0).normal(size=right.shape).astype(np.float32)
    unknown = diagnose(zoo["tiny-bert-dense"], TEXTS, noise, "legacy")
    assert unknown["cause"] == "diagnosis_unknown" and unknown["hypothesis"] is None


# --- input-side hypotheses (issue 24): truncation, dtype, prompt, EOS -------------------------------------------------
LONG = TEXTS + ["embedding servers truncate long inputs at their own token limit, which changes every vector"]


def _st_encode(folder: Path, texts: list[str], **kwargs: object) -> np.ndarray:
    """sentence-transformers itself as the server: ``max_seq_length``, ``model_kwargs`` or ``prompt`` set."""
    from sentence_transformers import SentenceTransformer

    max_seq_length = kwargs.pop("max_seq_length", None)
    model = SentenceTransformer(str(folder), device="cpu", model_kwargs=kwargs.pop("model_kwargs", None))
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model.encode(texts, convert_to_numpy=True, **kwargs).astype(np.float32)


def test_truncation_at_the_servers_limit_is_named_with_that_limit(zoo: dict[str, Path]) -> None:
    served = _st_encode(zoo["tiny-bert-dense"], LONG, max_seq_length=12)
    without = diagnose(zoo["tiny-bert-dense"], LONG, served, "legacy")
    # no limit stated: the limit is found from the vectors themselves (diagnosis.truncation), in tokens
    assert without["cause"] == "diagnosis_truncation_tokens", without
    assert without["truncation"]["limit"] == 12
    result = diagnose(zoo["tiny-bert-dense"], LONG, served, "legacy", limits=[12, 40, 10_000])
    assert result["cause"] == "diagnosis_truncation", result
    assert result["reasons"][0]["params"] == {"name": "legacy", "limit": 12, "expected": 128}


# fp16 stays within the 0.999 text gate on this model (measured: lowest cosine 0.99999 to fp32), so it is only a
# cause under a stricter gate; bf16 falls below the text gate (0.9977).
@pytest.mark.parametrize(("dtype", "gate"), [("bfloat16", 0.999), ("float16", 0.999999)])
def test_lower_precision_is_named_with_its_dtype(zoo: dict[str, Path], dtype: str, gate: float) -> None:
    import torch

    served = _st_encode(zoo["tiny-bert-no-normalize"], LONG, model_kwargs={"torch_dtype": getattr(torch, dtype)})
    assert diagnose(zoo["tiny-bert-no-normalize"], LONG, served, "vllm", 0.999)["cause"] == (
        "diagnosis_dtype" if dtype == "bfloat16" else None)
    result = diagnose(zoo["tiny-bert-no-normalize"], LONG, served, "vllm", gate)
    assert result["cause"] == "diagnosis_dtype", result
    assert result["reasons"][0]["params"]["dtype"] == dtype


def test_a_prompt_put_before_documents_is_named(zoo: dict[str, Path]) -> None:
    from embedswap.config.base import DEFAULT_QUERY_TASK

    prefix = f"Instruct: {DEFAULT_QUERY_TASK}\nQuery:"
    served = _st_encode(zoo["tiny-bert-cls"], LONG, prompt=prefix)
    result = diagnose(zoo["tiny-bert-cls"], LONG, served, "vllm")
    assert result["cause"] == "diagnosis_prompt_applied", result
    assert "Instruct: Given a web search query" in result["reasons"][0]["why"]
    assert "\n" not in result["reasons"][0]["why"]  # one sentence, one line


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from embedswap.zoo import qwen3 as tiny_qwen3

    return tiny_qwen3.ensure_tiny_qwen3(tmp_path_factory.mktemp("q3") / tiny_qwen3.NAME)


_SERVED: dict[tuple[str, tuple[str, ...], bool], np.ndarray] = {}


def _last_token_server(folder: Path, texts: list[str], drop_eos: bool) -> np.ndarray:
    """A hand-written last-token server (transformers, one text at a time, no padding): EOS dropped or kept. Its
    vectors are computed once per module (issue 61: two tests served the same texts with EOS kept); a copy each."""
    key = (str(folder), tuple(texts), drop_eos)
    if key not in _SERVED:
        _SERVED[key] = _serve_last_token(folder, texts, drop_eos)
    return _SERVED[key].copy()


def _serve_last_token(folder: Path, texts: list[str], drop_eos: bool) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    rows = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(text)["input_ids"]
            assert tokenizer.convert_ids_to_tokens(ids[-1]) == "<|endoftext|>"  # Qwen3-Embedding's end token
            ids = ids[:-1] if drop_eos else ids
            state = model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]
            rows.append(torch.nn.functional.normalize(state, dim=0).numpy())
    return np.stack(rows).astype(np.float32)


def test_eos_dropped_before_last_token_pooling_is_named(qwen3: Path) -> None:
    assert diagnose(qwen3, LONG, _last_token_server(qwen3, LONG, drop_eos=False), "legacy")["cause"] is None
    result = diagnose(qwen3, LONG, _last_token_server(qwen3, LONG, drop_eos=True), "dynamo")
    assert result["cause"] == "diagnosis_eos_missing", result


def test_the_models_own_query_prompt_missing_is_named(qwen3: Path) -> None:
    from embedswap.models import sentence_transformers_prompts

    prompt = sentence_transformers_prompts(qwen3)["query"]
    served = _last_token_server(qwen3, LONG, drop_eos=False)  # the texts sent as they are
    result = diagnose(qwen3, LONG, served, "vllm", expected_prompt=prompt)
    assert result["cause"] == "diagnosis_prompt_missing", result
