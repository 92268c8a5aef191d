"""End to end on the diagnosis zoo (issue 24): the zoo's CLS model through `embedswap run` (the five notebooks
with papermill, real servers), with one server right and two wrong, and the report naming each wrong one's cause.

- ``legacy``: the kit's legacy server started with ``--max-input-tokens 12`` (wrong: it truncates at 12 tokens;
  its over-long probe shows that limit);
- ``legacy-fixed``: the same server with the model's own limit (right: the candidate that fixes the legacy);
- ``vllm-mean``: vLLM's pooling runner with its pooling overridden to MEAN (``--pooler-config``; the model pools
  with CLS), fp32 so that only the pooling differs.
One engine start; the run was measured at about 3.5 min on 2 shared cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from realkit import free_ports, legacy_target, make_experiment, port_processes, run_whole_experiment

from embedswap.paths import engine_python
from embedswap.tiny_zoo import ZOO, build_tiny_bert

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
RUN_TIMEOUT_S = 1200
LIMIT = 12


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("zoo-project")
    model = build_tiny_bert(root / "tiny-bert-cls", ZOO["tiny-bert-cls"])
    ports = free_ports(3)
    probes = ["plain", "over_long_input"]
    folder = make_experiment(
        root, "zoo",
        legacy_target(ports[0], capture=["workload", "probes", "latency"],
                      extra_args=["--max-input-tokens", str(LIMIT)]),
        {"legacy-fixed": legacy_target(ports[1], capture=["workload", "probes"]),
         "vllm-mean": {"kind": "vllm", "port": ports[2], "dtype": "float32", "capture": ["workload", "probes"],
                       "extra_args": ["--enforce-eager",  # starts in ~40 s instead of ~100 s on 2 cores
                                      "--pooler-config", json.dumps({"pooling_type": "MEAN"})]}},
        probes=probes)
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["model"]["path"] = str(model)
    config["report"]["languages"] = ["en", "ja"]
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    run = run_whole_experiment(folder, RUN_TIMEOUT_S)
    attempt = sorted((folder / "attempts").iterdir())[-1]
    summary_path = attempt / "summary.json"
    return {"returncode": run.returncode, "out": run.stdout[-3000:] + run.stderr[-3000:], "attempt": attempt,
            "summary": json.loads(summary_path.read_text()) if summary_path.exists() else {}, "ports": ports,
            "model": str(model),
            "report": root / "reports" / folder.name}


def test_zoo_run_completes_through_the_five_notebooks(zoo_run: dict) -> None:
    # exit 1 is the parity gate failing the two wrong servers (as intended), not a crash: every notebook ran
    assert zoo_run["returncode"] == 1, zoo_run["out"]
    assert "parity gate: FAIL" in zoo_run["out"], zoo_run["out"]
    steps = json.loads((zoo_run["attempt"] / "steps.json").read_text())
    for name in ("01_legacy_capture", "02_swap_deploy", "03_vector_contract_diff", "04_latency", "05_parity"):
        assert steps[f"notebook:{name}"]["status"] == "complete", steps
    for target in ("legacy", "legacy-fixed", "vllm-mean"):
        assert steps[f"capture:{target}"]["status"] == "complete", steps
    assert sorted(p.name for p in (zoo_run["attempt"] / "notebooks").glob("*.ipynb")) == [
        "01_legacy_capture.ipynb", "02_swap_deploy.ipynb", "03_vector_contract_diff.ipynb", "04_latency.ipynb",
        "05_parity.ipynb"]
    # none of this run's servers is left (another test may reuse a free port afterwards: only ours count)
    assert [p for p in port_processes(zoo_run["ports"]) if zoo_run["model"] in p] == []


def test_step03_names_each_wrong_servers_cause_and_clears_the_right_one(zoo_run: dict) -> None:
    found = zoo_run["summary"]["diagnosis"]
    assert found["measured"] is True and LIMIT in found["limits"]  # the limit its over-long probe showed
    by_target = found["by_target"]
    assert by_target["legacy"]["cause"] == "diagnosis_truncation", by_target["legacy"]
    assert by_target["legacy"]["reasons"][0]["params"] == {"name": "legacy", "limit": LIMIT, "expected": 128}
    assert by_target["legacy-fixed"]["cause"] is None, by_target["legacy-fixed"]
    assert by_target["vllm-mean"]["cause"] == "diagnosis_pooling", by_target["vllm-mean"]
    assert by_target["vllm-mean"]["reasons"][0]["params"] == {"name": "vllm-mean", "pooling": "mean",
                                                             "expected": "cls"}


def test_parity_fails_the_wrong_servers_with_the_same_causes(zoo_run: dict) -> None:
    rows = {r["backend"]: r for r in zoo_run["summary"]["parity"]["rows"]}
    assert rows["legacy-fixed"]["pass"] is True
    assert rows["legacy"]["pass"] is False and rows["legacy"]["diagnosis"]["cause"] == "diagnosis_truncation"
    assert rows["vllm-mean"]["pass"] is False and rows["vllm-mean"]["diagnosis"]["cause"] == "diagnosis_pooling"
    decisions = zoo_run["summary"]["decisions"]["diagnosis"]
    assert {n: d["code"] for n, d in decisions.items()} == {"legacy": "diagnosis_truncation",
                                                           "vllm-mean": "diagnosis_pooling"}
    assert {d["step"] for d in decisions.values()} == {"parity"}


def test_the_report_states_each_cause_with_its_fix(zoo_run: dict) -> None:
    en = (zoo_run["report"] / "report.en.md").read_text()
    ja = (zoo_run["report"] / "report.ja.md").read_text()
    diagnosis = en[en.index("### Why the vectors differ"):]
    assert (f"'legacy' truncates inputs at {LIMIT} tokens where the model reads 128: raise the server's limit"
            in diagnosis)
    assert "'vllm-mean' pools with mean where the model pools with cls: set the server's pooling" in diagnosis
    assert "`legacy-fixed` (" not in diagnosis.split("###")[1]  # the right server gets no sentence
    assert f"'legacy' は入力を {LIMIT} トークンで切り詰めています" in ja
    html = (zoo_run["report"] / "report.en.html").read_text()
    assert "Why the vectors differ" in html and "pools with mean where the model pools with cls" in html
