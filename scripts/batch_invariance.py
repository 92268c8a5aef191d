"""Batch invariance of the legacy server's padding way (transformers + the model's pooling), per dtype.

Usage: PYTHONPATH=lib python scripts/batch_invariance.py MODEL_SPEC [MODEL_SPEC ...]
Prints one line per (model, dtype, batch size): each of the first 32 documents alone vs inside batches of 8/32.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from embedswap.parity import matrix as pm
from embedswap.parity.backends import TransformersBackend

DOCUMENTS = Path(__file__).resolve().parents[1] / "data" / "documents.jsonl"


def main(models: list[str]) -> None:
    texts = [json.loads(line)["text"] for line in DOCUMENTS.read_text(encoding="utf-8").splitlines()][:32]
    for model in models:
        for dtype in ("float32", "bfloat16"):
            backend = TransformersBackend(model, dtype=dtype, name="transformers-padding")
            for row in pm.batch_invariance(backend, texts, gate=0.999):
                if row.cos_min is None:
                    print(model, row.setting, row.reason)
                else:
                    print(model, row.setting, f"n={row.n} 1-min={1 - row.cos_min:.2e} "
                          f"1-median={1 - row.cos_median:.2e} pass={row.passed}")


if __name__ == "__main__":
    main(sys.argv[1:])
