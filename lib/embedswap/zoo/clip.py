"""A tiny random-weight CLIP (text and image towers), built offline and deterministically, and a small image set.

Article 003 gates multimodal embeddings at 0.995. No CLIP checkpoint is reachable here (no model hub), so this
module builds a stand-in in ``CLIPModel``'s layout, which vLLM's pooling registry serves (``CLIPEmbeddingModel``):

* geometry: text and vision width 64, 2 heads of head_dim 32 (vLLM's CPU attention has no head_dim 16), 2 layers,
  32-pixel images in 8-pixel patches, ``projection_dim`` 64 (vLLM raises NotImplementedError below the text
  width), 77 text positions as CLIP; weights normal(0, 0.5) from a fixed seed (LayerNorm 1/0), stored in fp32;
* tokenizer: CLIP's byte-level BPE format (``</w>`` word ends, ``<|startoftext|>``/``<|endoftext|>``, lower case)
  with a *tiny* vocabulary learned here: the 256 byte symbols, the same with ``</w>``, and the most frequent pair
  merges of the captions below (:func:`learn_merges`, ties broken by the pair's text, so the vocabulary is the same
  on every machine). The real CLIP vocabulary (``bpe_simple_vocab_16e6.txt.gz`` inside PyPI's
  ``open_clip_torch`` wheel) would add a package whose dependencies (torchvision, timm) do not fit the kit's CPU
  environment; the token ids do not change what parity measures (both sides tokenize with the same files);
* images: shapes in colours drawn with Pillow (:func:`draw_image`), 32 x 32 PNG, with their captions.

Two builds give byte-identical files; the folder is reused when its marker matches (``embedswap.zoo.qwen3``'s
scheme). ``python -m embedswap.zoo.clip OUT`` builds it.
"""

from __future__ import annotations

import argparse
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from embedswap.zoo import build as model_build
from embedswap.zoo.qwen3 import bytes_to_unicode  # the same GPT-2 byte table CLIP's BPE uses

VERSION = "v1"
NAME = f"tiny-clip-{VERSION}"
SPEC = "build:tiny-clip"
MARKER = model_build.MARKER
BuildError = model_build.BuildError
SEED = 0
STD = 0.5
MERGES = 200
SOT, EOT = "<|startoftext|>", "<|endoftext|>"

COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 70, 220), "yellow": (230, 210, 40)}
SHAPES = ("circle", "square", "triangle", "cross")


def captions() -> list[tuple[str, str, str]]:
    """(id, colour, shape) of every image, in a fixed order; the caption is 'a <colour> <shape>'."""
    return [(f"img-{colour}-{shape}", colour, shape) for colour in COLOURS for shape in SHAPES]


def draw_image(colour: str, shape: str, size: int = 32) -> Any:
    """A PIL image: one shape in one colour on white (no randomness: the same pixels everywhere)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw, fill, m = ImageDraw.Draw(image), COLOURS[colour], size // 6
    if shape == "circle":
        draw.ellipse([m, m, size - m, size - m], fill=fill)
    elif shape == "square":
        draw.rectangle([m, m, size - m, size - m], fill=fill)
    elif shape == "triangle":
        draw.polygon([(size // 2, m), (size - m, size - m), (m, size - m)], fill=fill)
    else:
        draw.rectangle([size // 2 - m // 2, m, size // 2 + m // 2, size - m], fill=fill)
        draw.rectangle([m, size // 2 - m // 2, size - m, size // 2 + m // 2], fill=fill)
    return image


def png_bytes(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def learn_merges(words: list[str], count: int = MERGES) -> list[tuple[str, str]]:
    """The ``count`` most frequent adjacent pairs, merged one after another (classic BPE training); ties go to the
    smallest pair, so the result depends only on ``words``."""
    table = bytes_to_unicode()
    corpus = Counter(tuple(table[b] for b in w.encode("utf-8"))[:-1] + (table[w.encode("utf-8")[-1]] + "</w>",)
                     for w in words if w)
    merges: list[tuple[str, str]] = []
    for _ in range(count):
        pairs: Counter[tuple[str, str]] = Counter()
        for word, n in corpus.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = Counter()
        for word, n in corpus.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        corpus = merged
    return merges


def _training_words() -> list[str]:
    text = " ".join(f"a {colour} {shape} a photo of a {colour} {shape} on white" for _, colour, shape in captions())
    return text.lower().split()


def _vocab(merges: list[tuple[str, str]]) -> dict[str, int]:
    symbols = list(bytes_to_unicode().values())
    tokens = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges] + [SOT, EOT]
    return {token: i for i, token in enumerate(dict.fromkeys(tokens))}


# CLIP's pre-tokenizer split (openai/CLIP simple_tokenizer.py), as transformers' CLIP converter writes it
CLIP_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""


def _fast_tokenizer(vocab: dict[str, int], merges: list[tuple[str, str]]) -> Any:
    """CLIP's tokenizer pipeline (NFC, whitespace collapsed, lower case, CLIP split, byte level, ``</w>`` word
    ends, ``<|startoftext|> ... <|endoftext|>``) over this vocabulary, with the ``tokenizers`` library."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=EOT, end_of_word_suffix="</w>",
                                     continuing_subword_prefix="", fuse_unk=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                                 normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CLIP_PAT), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{SOT} $A {EOT}", pair=f"{SOT} $A {EOT} $B {EOT}",
        special_tokens=[(SOT, vocab[SOT]), (EOT, vocab[EOT])])
    return tokenizer


def _write_model(folder: Path, vocab_size: int, eos_id: int, bos_id: int) -> None:
    import torch
    from transformers import CLIPConfig, CLIPModel

    text = {"vocab_size": vocab_size, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 2, "max_position_embeddings": 77, "eos_token_id": eos_id, "bos_token_id": bos_id,
            "pad_token_id": eos_id, "projection_dim": 64}
    vision = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8, "projection_dim": 64}
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=64)
    torch.manual_seed(SEED)
    model = CLIPModel(config).eval()
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            if "layer_norm" in name or "layernorm" in name or "ln_" in name:
                tensor.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("logit_scale"):
                tensor.fill_(2.6592)
            elif tensor.is_floating_point():
                tensor.copy_(torch.randn(tensor.shape, generator=generator) * STD)
    model.save_pretrained(folder, safe_serialization=True)


def _build_into(tmp: Path) -> None:
    """Every file of the model into the empty folder ``tmp``, the marker last (model_build)."""
    from transformers import CLIPImageProcessor, CLIPProcessor, CLIPTokenizerFast

    merges = learn_merges(_training_words())
    vocab = _vocab(merges)
    (tmp / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (tmp / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    tokenizer = CLIPTokenizerFast(tokenizer_object=_fast_tokenizer(vocab, merges), unk_token=EOT,
                                  bos_token=SOT, eos_token=EOT, pad_token=EOT, model_max_length=77)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(tmp)
    _write_model(tmp, len(vocab), vocab[EOT], vocab[SOT])
    model_build.write_marker(tmp, {"name": NAME, "builder": "embedswap.zoo.clip"})


def build(out: Path) -> Path:
    """The model folder at ``out``, built first unless it holds a complete build (model_build: a temporary folder
    renamed into place under a lock; a folder that is not a build of this model is refused, never deleted)."""
    return model_build.ensure_built(Path(out).expanduser().resolve(), NAME, _build_into)


def ensure_tiny_clip() -> Path:
    """The project cache's tiny CLIP folder, built on first use."""
    from embedswap.paths import cache_dir

    return build(cache_dir() / "models" / NAME)


def reference_features(folder: Path, texts: list[str], images: list[Any]) -> tuple[Any, Any]:
    """transformers fp32 ``get_text_features`` / ``get_image_features`` (the golden reference), L2-normalised
    as vLLM's CLIP embedding normalises them."""
    import torch
    import torch.nn.functional as F
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(folder, dtype=torch.float32).eval()
    processor = CLIPProcessor.from_pretrained(folder)
    with torch.inference_mode():
        text = model.get_text_features(**processor(text=texts, return_tensors="pt", padding=True))
        image = model.get_image_features(**processor(images=images, return_tensors="pt"))
    text = getattr(text, "pooler_output", text)
    image = getattr(image, "pooler_output", image)
    return F.normalize(text, dim=-1).numpy(), F.normalize(image, dim=-1).numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="output folder (default: the project cache)")
    args = parser.parse_args(argv)
    print(build(Path(args.out)) if args.out else ensure_tiny_clip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
