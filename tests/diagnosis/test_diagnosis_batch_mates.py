"""Vectors that depend on batch mates: a server that ignores the attention mask, and one that pads on the other
side than its pooling assumes (sentence-transformers itself, on a CLS model whose tokenizer pads left), are named."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from embedswap.diagnosis.hypotheses import Diagnoser, padded
from embedswap.diagnosis.step import workload_batches

TEXTS = ["a", "a much longer text with many words in it", "b c", "the quick brown fox jumps", "x y z", "q"]


def test_sentence_transformers_padding_left_for_cls_is_padding_flipped(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from embedswap.zoo.bert import BATCH_MATES, build_tiny_bert

    model = build_tiny_bert(tmp_path / "model", BATCH_MATES)
    served = SentenceTransformer(str(model), device="cpu").encode(TEXTS, batch_size=32, convert_to_numpy=True)
    result = Diagnoser(model, TEXTS, batches=[(0, len(TEXTS))]).diagnose(served, "st")
    assert result["cause"] == "diagnosis_batch_padding_flipped", result
    assert "depend on batch mates" in result["reasons"][0]["why"]


def test_an_ignored_attention_mask_is_named(tiny_zoo: dict[str, Path]) -> None:
    import torch

    found = Diagnoser(tiny_zoo["tiny-bert-no-normalize"], TEXTS, batches=[(0, 3), (3, 6)])
    e = found.embedder
    ids = found._ids(TEXTS, found.limit)
    parts = []
    with torch.inference_mode():
        for start, end in [(0, 3), (3, 6)]:
            batch, mask, _ = padded(e, ids[start:end], "mask_ignored")
            hidden = e.model(**batch).last_hidden_state
            parts.append(((hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)).numpy())
    result = found.diagnose(np.concatenate(parts), "server")
    assert result["cause"] == "diagnosis_batch_mask_ignored", result


def test_batches_are_known_only_for_the_whole_workload_in_order() -> None:
    assert workload_batches(list(range(10)), 4) == [(0, 4), (4, 8), (8, 10)]
    assert workload_batches([0, 2, 3], 4) is None


WORKLOAD = [" ".join(["word"] * (1 + (i * 7) % 13)) + f" text {i}" for i in range(40)]


def test_batch_mates_are_probed_on_whole_batches_before_a_full_pass(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from embedswap.zoo.bert import BATCH_MATES, build_tiny_bert

    model = build_tiny_bert(tmp_path / "model", BATCH_MATES)
    batches = workload_batches(list(range(len(WORKLOAD))), 8)
    st = SentenceTransformer(str(model), device="cpu")  # a server that gets the workload's batches of 8
    served = np.concatenate([st.encode(WORKLOAD[a:b], batch_size=8, convert_to_numpy=True) for a, b in batches])
    found = Diagnoser(model, WORKLOAD, batches=batches)
    assert found.rows is not None  # 40 texts: probed first
    result = found.diagnose(served, "st")
    assert result["cause"] == "diagnosis_batch_padding_flipped", result
    assert found.passes == 1  # only the variant that reproduced its probe batches ran over every text
    probed = next(iter(found._batch_probed.values()))[0]
    assert len(probed) == 16 and len(probed) < len(WORKLOAD)  # two whole batches of 8
