"""A server whose tokenizer differs from the model's, per language: the model's real MiniLM tokenizer against a
server that drops the vowel jamo of Korean (as llama.cpp's WPM tokenizer does) and reads English past the model's
cut (a longer context). The server's vectors are the model's own on the server's tokens, unnormalised."""

from __future__ import annotations

import copy
import unicodedata
from typing import Any

import numpy as np
import pytest

from embedswap.diagnosis.tokenization import analyse, classify, reembed, script_of, with_tokenization
from embedswap.legacy.embedder import Embedder, LegacySettings
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path

KOREAN = ["임베딩 서버를 바꾸면 벡터가 달라질 수 있습니다", "한국어 문서는 자모로 나뉘어 토큰이 됩니다",
          "검색 품질은 조용히 떨어집니다"]
ENGLISH = ["the migration of an embedding server touches every client", "a short english text",
           " ".join(["every word of a long document counts"] * 60)]  # past the model's 256-token cut
LANGS = ["ko"] * len(KOREAN) + ["en"] * len(ENGLISH)
THRESHOLD = 0.999


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(LegacySettings(model=resolve_model_path(EMBEDDED_DEFAULT), max_input_tokens=10**9))


def _vowel(token: str) -> bool:
    return token.startswith("##") and "JUNGSEONG" in unicodedata.name(token[2:3] or " ", "")


def _server_ids(embedder: Embedder, text: str, drop_vowels: bool) -> list[int]:
    """What the server's tokenizer makes of ``text``: every token up to the model's 512 positions, the Korean
    vowel jamo dropped when ``drop_vowels``."""
    tok = embedder.tokenizer
    ids = tok(text)["input_ids"]
    if drop_vowels:
        ids = [i for i, t in zip(ids, tok.convert_ids_to_tokens(ids)) if not _vowel(t)]
    return ids[:511] + ids[-1:] if len(ids) > 512 else ids


_RECORDS: dict[bool, tuple[dict[str, Any], np.ndarray]] = {}


def _record(embedder: Embedder, with_ids: bool = True) -> tuple[dict[str, Any], np.ndarray]:
    """The server's capture, made once per module (issue 61: three tests re-made the same one); a copy each."""
    if with_ids not in _RECORDS:
        _RECORDS[with_ids] = _make_record(embedder, with_ids)
    record, served = _RECORDS[with_ids]
    return copy.deepcopy(record), served.copy()


def _make_record(embedder: Embedder, with_ids: bool) -> tuple[dict[str, Any], np.ndarray]:
    texts = KOREAN + ENGLISH
    ids = [_server_ids(embedder, t, lang == "ko") for t, lang in zip(texts, LANGS)]
    docs = [{"row": i, "tokens": len(row), "ids": row if with_ids else None} for i, row in enumerate(ids)]
    served = reembed(embedder, ids)  # the model on the server's tokens, not normalised (llama.cpp's answer)
    return {"source": "tokenize" if with_ids else "usage", "route": None, "documents": docs}, served


def test_each_document_is_read_alike_longer_or_otherwise(embedder: Embedder) -> None:
    tok = embedder.tokenizer
    special = set(tok.all_special_ids) - {tok.unk_token_id}
    long = ENGLISH[2]
    whole, cut = tok(long)["input_ids"], tok(long, truncation=True, max_length=256)["input_ids"]
    assert classify({"tokens": len(cut), "ids": cut}, whole, cut, special) == "same"
    assert classify({"tokens": 300, "ids": whole[:299] + whole[-1:]}, whole, cut, special) == "context"
    assert classify({"tokens": 300, "ids": None}, whole, cut, special) == "context"  # a count alone
    korean = tok(KOREAN[0])["input_ids"]
    dropped = _server_ids(embedder, KOREAN[0], True)
    assert classify({"tokens": len(dropped), "ids": dropped}, korean, korean, special) == "tokens"
    assert classify({"tokens": len(dropped), "ids": None}, korean, korean, special) == "tokens"


def test_korean_is_tokenization_and_english_a_longer_context(embedder: Embedder) -> None:
    record, served = _record(embedder)
    found = analyse(embedder, KOREAN + ENGLISH, LANGS, record, served, THRESHOLD, limit=256)
    assert found is not None
    ko, en = found["by_language"]["ko"], found["by_language"]["en"]
    assert (ko["tokens"], ko["same"], ko["context"]) == (3, 0, 0)
    assert ko["cos_median_tokens"] < 0.95  # the vowels carry the meaning
    assert ko["example"]["tokens"] < ko["example"]["expected"]
    assert script_of(ko["dropped"]) == "HANGUL JUNGSEONG" and all(_vowel(p) for p in ko["dropped"])
    assert (en["same"], en["context"], en["tokens"]) == (2, 1, 0) and en["context_tokens"] > 256
    assert en["cos_median_same"] > THRESHOLD > en["cos_median_context"]
    again = found["reembedded"]
    assert again["reproduces"] and again["unnormalised"] and again["documents"] == 6

    finding = with_tokenization({"cause": "diagnosis_unknown", "reasons": [], "hypothesis": None}, found,
                                "llamacpp", 256, THRESHOLD)
    codes = [r["code"] for r in finding["reasons"]]
    assert codes == ["diagnosis_tokenizer_drops", "diagnosis_context_longer", "diagnosis_tokenizer_reproduced",
                     "diagnosis_normalize_missing"]
    assert finding["cause"] == "diagnosis_tokenizer_drops"
    first = finding["reasons"][0]
    assert first["params"]["lang"] == "ko" and "HANGUL JUNGSEONG" in first["why"]
    assert f"{ko['example']['tokens']} tokens where the model's tokenizer makes {ko['example']['expected']}" \
        in first["why"]
    longer = finding["reasons"][1]
    assert longer["params"]["lang"] == "en" and "cuts at 256" in longer["why"]


def test_counts_alone_show_the_divergence_is_confined_to_the_texts_that_differ(embedder: Embedder) -> None:
    record, served = _record(embedder, with_ids=False)
    found = analyse(embedder, KOREAN + ENGLISH, LANGS, record, served, THRESHOLD, limit=256)
    assert found is not None and found["reembedded"] is None
    finding = with_tokenization({"cause": "diagnosis_unknown", "reasons": []}, found, "tei", 256, THRESHOLD)
    assert [r["code"] for r in finding["reasons"]] == ["diagnosis_tokenizer_differs", "diagnosis_context_longer"]


def test_a_server_that_tokenizes_alike_gets_no_tokenization_finding(embedder: Embedder) -> None:
    tok = embedder.tokenizer
    texts = KOREAN + ENGLISH[:2]
    ids = [tok(t)["input_ids"] for t in texts]
    record = {"documents": [{"row": i, "tokens": len(r), "ids": r} for i, r in enumerate(ids)]}
    assert analyse(embedder, texts, LANGS[:5], record, reembed(embedder, ids), THRESHOLD, limit=256) is None


def test_tokens_that_differ_without_a_divergence_name_no_cause(embedder: Embedder) -> None:
    # the server counts otherwise (e.g. no special tokens), but its vectors are the model's: nothing to explain
    tok = embedder.tokenizer
    texts = KOREAN
    record = {"documents": [{"row": i, "tokens": len(tok(t)["input_ids"]) - 2, "ids": None}
                            for i, t in enumerate(texts)]}
    served = embedder.embed(texts).vectors.numpy()
    found = analyse(embedder, texts, ["ko"] * 3, record, served, THRESHOLD, limit=256)
    assert found is not None and found["by_language"]["ko"]["tokens"] == 3
    finding = with_tokenization({"cause": None, "reasons": []}, found, "odd", 256, THRESHOLD)
    assert finding["cause"] is None and finding["reasons"] == [] and finding["tokenization"] is found


def test_another_cause_is_kept(embedder: Embedder) -> None:
    record, served = _record(embedder)
    found = analyse(embedder, KOREAN + ENGLISH, LANGS, record, served, THRESHOLD, limit=256)
    kept = {"cause": "diagnosis_pooling", "reasons": [{"code": "diagnosis_pooling"}]}
    assert with_tokenization(kept, found, "x", 256, THRESHOLD)["cause"] == "diagnosis_pooling"


class _Attempt:
    """The captures the step reads: a server's tokens.json and its document vectors (repeat 0)."""

    def __init__(self, files: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.files, self.arrays = files, arrays

    def has(self, name: str) -> bool:
        return name in self.files or name in self.arrays

    def read_json(self, name: str) -> Any:
        return self.files[name]

    def read_array(self, name: str, mmap: bool = False) -> np.ndarray:
        return self.arrays[name]


def _ctx(tmp_path: Any, attempt: _Attempt) -> Any:
    from types import SimpleNamespace

    from embedswap.measure.workload import Document

    documents = [Document(id=str(i), text=t, lang=lang) for i, (t, lang) in enumerate(zip(KOREAN + ENGLISH, LANGS))]
    model = SimpleNamespace(max_input_tokens=256, path=EMBEDDED_DEFAULT)
    return SimpleNamespace(experiment=SimpleNamespace(model=model), attempt=attempt, experiment_dir=tmp_path,
                           workload=SimpleNamespace(documents=documents))


def test_step_03_names_the_cause_from_the_servers_capture(embedder: Embedder, tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from embedswap.diagnosis import step

    monkeypatch.setattr(step, "text_rows", lambda experiment, folder, documents: list(range(len(documents))))
    monkeypatch.setattr(step, "_embedder", lambda experiment: embedder)
    record, served = _record(embedder)
    unknown = {"cause": "diagnosis_unknown", "reasons": [{"code": "diagnosis_unknown"}], "hypothesis": None}
    attempt = _Attempt({"llama/tokens.json": record}, {"llama/doc_vectors.npy": served[None]})
    found = step.tokenization_of(_ctx(tmp_path, attempt), "llama", THRESHOLD, unknown)
    assert found["cause"] == "diagnosis_tokenizer_drops"
    assert found["tokenization"]["by_language"]["ko"]["tokens"] == 3
    # no capture (a summary from before, a server not asked): the finding as it was
    assert step.tokenization_of(_ctx(tmp_path, _Attempt({}, {})), "llama", THRESHOLD, unknown) == unknown
    # a capture the check cannot read: its error beside the finding, the cause untouched
    broken = _Attempt({"llama/tokens.json": record}, {})
    failed = step.tokenization_of(_ctx(tmp_path, broken), "llama", THRESHOLD, unknown)
    assert failed["cause"] == "diagnosis_unknown" and "KeyError" in failed["tokenization"]["error"]
