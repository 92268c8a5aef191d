"""The unit tests marked `slow` (issue 61), read by tests/conftest.py's collection hook: their subject is a process, a
server, a model or a database, or they wait in real time. `make test-fast` (the developer's loop, the "unit pass")
leaves them out; `make test` runs them in its second pass beside the end-to-end tests. Module or test id -> why it
is slow; docs/testing.md counts them."""

from __future__ import annotations

SLOW = {
    "tests/test_cli.py": "runs the `embedswap` command in a subprocess, a fresh interpreter per call",
    "tests/test_preflight.py": "runs `embedswap run` in a subprocess to its preflight",
    "tests/test_security.py": "a whole kit run against fake servers, then every file it wrote is read",
    "tests/test_secret_planting.py": "a whole kit run with planted secrets, then every file it wrote is read",
    "tests/structure/test_imports.py::test_every_module_imports_first_in_a_fresh_interpreter":
        "imports each of the kit's ~240 modules first in a forked interpreter",
    "tests/measure/test_open_loop_capture.py": "open-loop rate runs in real time (seconds per rate)",
    "tests/measure/test_open_loop_workers.py": "starts load-generator worker processes (and Ray actors)",
    "tests/measure/test_interleave.py": "interleaved latency captures against live HTTP servers, in real time",
    "tests/measure/test_api_shapes.py": "six fake servers measured through the real flow, then a report rendered",
    "tests/legacy/test_legacy_server.py": "the legacy server itself: a model load, a subprocess",
    "tests/index/test_index_zoo.py": "embeds the sample with MiniLM three ways in-process",
    "tests/index/test_index_store.py": "a real PostgreSQL + pgvector server per module",
    "tests/vectorstore/test_vectorstore.py": "a real PostgreSQL + pgvector server per module",
    "tests/report/test_publish.py": "exports executed notebooks with nbconvert",
    "tests/sites/test_sites.py": "builds the report into blog-site folders and reads them back",
    "tests/tooling/test_notebooks.py": "executes notebooks in a Jupyter kernel",
    "tests/tooling/test_lab.py": "starts JupyterLab",
    "tests/zoo/test_tiny_qwen3.py": "builds tiny Qwen3 models and loads them with transformers",
    "tests/parity/test_parity_checks.py": "the parity matrix on a real model (transformers, several dtypes)",
    "tests/parity/test_parity_multimodal_step.py": "a tiny CLIP built and run with transformers",
    "tests/parity/test_parity.py::test_gpu_parity_script_runs_on_cpu": "runs scripts/gpu_parity.py in a subprocess",
    "tests/diagnosis/test_diagnosis.py": "diagnoses real tiny models (transformers) served in-process",
    "tests/diagnosis/test_tokenization.py": "loads real tokenizers and models",
    "tests/diagnosis/test_truth_cache.py": "diagnoses real tiny models (transformers) in-process, twice each",
}

# Of those, the ones that wait on real time (rates per second, deadlines, a worker killed mid-rate): beside the
# end-to-end runs on 2 cores their timing is not what they assert on, so `make test` runs them in its third pass,
# alone, with the quiet-host tests (they are marked quiet_host too).
ALONE = {
    "tests/measure/test_open_loop_capture.py",
    "tests/measure/test_open_loop_workers.py",
    "tests/measure/test_interleave.py",
}
