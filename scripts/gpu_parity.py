#!/usr/bin/env python
"""GPU parity check: transformers on CUDA (fp32, bf16, fp16) against an fp32 CPU reference of the same model,
plus article 003's parity matrix on that device (embedswap.parity.checks.run_matrix).

It joins the kit's matrix instead of repeating its code: the rows go through the kit's own backend
(:class:`embedswap.parity.backends.TransformersBackend`: the legacy server's pooling) and gate
(:func:`embedswap.parity.gate.gate`), and the matrix through :func:`embedswap.parity.checks.run_matrix` with
``device``; with ``--engine`` the matrix also starts vLLM's offline runner (embedswap.parity.vllm), which picks its
platform itself (CUDA, TPU, CPU) and records it in each row. The same code runs on a CPU-only host: then the GPU
rows are reported as not measured, the CPU bf16 row and the CPU matrix are measured, and the script exits 0.
The model is a local folder (sentence-transformers layout) and nothing is downloaded; run it from a checkout
(``lib/`` next to this script is put on the path) or with the kit installed.

    python scripts/gpu_parity.py MODEL_DIR [--texts FILE.jsonl] [--out parity_gpu.json] [--engine]

Rows: each backend's cosine to the reference, per text; a row passes when its lowest cosine reaches the
threshold (text: 0.999). With a CUDA device it exits 1 when a GPU row fails the gate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
if (REPO / "lib" / "embedswap").is_dir() and str(REPO / "lib") not in sys.path:
    sys.path.insert(0, str(REPO / "lib"))  # a checkout: the kit next to the script

import torch  # noqa: E402
import transformers  # noqa: E402

from embedswap.config import ParityChecks  # noqa: E402
from embedswap.parity.backends import TransformersBackend  # noqa: E402
from embedswap.parity.checks import run_matrix  # noqa: E402
from embedswap.parity.gate import ParityBackendError, gate  # noqa: E402

DEFAULT_TEXTS = REPO / "data" / "documents.jsonl"
NO_CUDA = "no CUDA device: GPU rows not measured"


def embed(folder: Path, texts: list[str], device: str, dtype: str, batch_size: int) -> tuple[object, float]:
    """The kit's transformers backend (the legacy server's pooling and normalisation) on ``device``."""
    backend = TransformersBackend(str(folder), device=device, dtype=dtype, batch_size=batch_size)
    started = time.perf_counter()
    vectors = backend.embed(texts)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return vectors, time.perf_counter() - started


def gate_row(backend: str, dtype: str, device: str, reference: object, vectors: object, ids: list[str],
             threshold: float, seconds: float) -> dict:
    row = gate(backend, dtype, device, "text", reference, vectors, ids, threshold).as_dict()
    return {**row, "seconds": round(seconds, 3)}


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
    parser.add_argument("--engine", action="store_true",
                        help="the matrix's engine rows too (vLLM offline, on the platform vLLM picks)")
    parser.add_argument("--matrix-texts", type=int, default=32, help="texts of the matrix (batch invariance)")
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
        except (RuntimeError, ValueError, ParityBackendError) as exc:  # e.g. bf16 on a GPU without it
            not_measured.append({"backend": "transformers", "dtype": dtype, "device": device,
                                 "why": f"{type(exc).__name__}: {str(exc)[:300]}"})
            continue
        rows.append(gate_row("transformers", dtype, device, reference, vectors, ids, args.threshold, seconds))
    print_table(rows, not_measured)
    # article 003's matrix through the kit's own code, on the GPU when there is one (else the CPU): batch
    # invariance per dtype of the legacy padding; with --engine vLLM's rows, long context and chunked prefill
    matrix_device = args.device if cuda else "cpu"
    checks = ParityChecks(engine=args.engine, long_context=args.engine, cold_start=False,
                          texts=args.matrix_texts, dtypes=["float32", "bfloat16"])
    matrix = run_matrix(checks, str(args.model_dir), texts, args.threshold, [], log_dir=args.out.parent,
                        device=matrix_device)
    for row in matrix["rows"]:
        drift = "n/a" if row["cos_min"] is None else f"{max(0.0, 1 - row['cos_min']):.1e}"
        print(f"matrix {row['check']:<17} {row['backend']:<22} {row['platform']:<7} {row['setting']}: "
              f"1 - cos min {drift}{'' if not row.get('why') else ' (' + row['why'] + ')'}")
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
        "matrix": {**matrix, "device": matrix_device},
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
