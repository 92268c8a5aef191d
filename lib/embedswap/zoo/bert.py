"""Tiny random-weight BERT sentence-transformers models, built offline and deterministically (the diagnosis zoo).

Each variant reproduces one pipeline feature the kit must follow: a ``2_Dense`` projection after
pooling, CLS pooling written in sentence-transformers' compact ``"pooling_mode": "cls"`` config, no ``Normalize``.
The vocabulary is a hand-written WordPiece list (special tokens, ASCII letters/digits/punctuation and their ``##``
forms), so no model hub or package data is needed; geometry hidden 128, 2 layers, 2 heads: ~2 MB of weights.
The files are saved by sentence-transformers itself (its own ``modules.json`` and module configs), so the layout is
exactly the one the library writes; weights come from a fixed seed.
"""

from __future__ import annotations

import shutil
import string
from dataclasses import dataclass
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
HIDDEN = 128  # 2 heads of head_dim 64: vLLM's CPU attention has no head_dim 16
DENSE_OUT = 16


@dataclass(frozen=True)
class ZooModel:
    """One zoo variant: its pipeline (pooling, Dense projection, Normalize)."""

    name: str
    pooling: str = "mean"
    dense: bool = False
    normalize: bool = True
    padding_side: str = "right"  # the tokenizer's; "left" with CLS pooling makes a batch pool a padding token


ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel("tiny-bert-dense", pooling="mean", dense=True, normalize=True),
        ZooModel("tiny-bert-cls", pooling="cls", dense=False, normalize=True),
        ZooModel("tiny-bert-no-normalize", pooling="mean", dense=False, normalize=False),
    )
}


# A model whose sentence-transformers reference depends on batch mates: CLS pooling reads position 0, which left
# padding fills with [PAD] for every text shorter than the longest of its batch (not in ZOO: no server mistake).
BATCH_MATES = ZooModel("tiny-bert-cls-left-padded", pooling="cls", padding_side="left")


def vocabulary() -> list[str]:
    chars = string.ascii_lowercase + string.digits + string.punctuation
    return SPECIAL + list(chars) + [f"##{c}" for c in string.ascii_lowercase + string.digits]


def build_tiny_bert(out: Path | str, variant: ZooModel, seed: int = 0) -> Path:
    """Write ``variant`` into ``out`` (created); returns the folder. Same seed, same weights."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = Path(out)
    hf = out / "_hf"
    hf.mkdir(parents=True, exist_ok=True)
    (hf / "vocab.txt").write_text("\n".join(vocabulary()) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(hf / "vocab.txt"), do_lower_case=True, model_max_length=128,
                                  padding_side=variant.padding_side)
    tokenizer.save_pretrained(hf)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocabulary()), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    model = BertModel(config)
    with torch.no_grad():  # std 0.02 makes every text pool to nearly the same vector: widen it
        for param in model.parameters():
            if param.dim() > 1:
                param.normal_(0.0, 0.5)
    model.save_pretrained(hf)
    modules: list[torch.nn.Module] = [Transformer(str(hf), max_seq_length=128),
                                      Pooling(HIDDEN, pooling_mode=variant.pooling)]
    if variant.dense:
        torch.manual_seed(seed + 1)
        modules.append(Dense(HIDDEN, DENSE_OUT, activation_function=torch.nn.Tanh()))
    if variant.normalize:
        modules.append(Normalize())
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    shutil.rmtree(hf)  # the Transformer module saved its own copy at the folder root
    return out
