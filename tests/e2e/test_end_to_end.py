"""End to end, with real parts: the real legacy server, NVIDIA Dynamo (frontend + embedding worker) and vLLM alone, the five notebooks executed by
papermill through `embedswap run`, then assertions on the values the run recorded (summary.json, captures,
executed notebooks), in the manner of the recommenders project's notebook tests.

One run per test session (vLLM needs 40-110 s to start on 2 cores); the tests below read its results.

What the run no longer does beside `make demo`'s (issue 61, CI time; each override's comment in ``demo`` says more):
no open-loop or concurrency sweep, no Matryoshka target, no vLLM offline dtype row, no restore latency, no parity
matrix engine rows (each with its cover there); and, measured in docs/testing.md ("The demo and zoo runs' second
cut"): one workload repeat (was the preset's 3: the repeats' stability is read by no assertion here;
tests/analysis/test_vector_diff.py and tests/mutants/test_mutants_vectors.py pin it), and no
vLLM transformers witness in step 05 (the same witness on the same MiniLM: tests/parity/test_witnesses.py's
e2e test; step 05 asking for it: that file's test_step_05_writes_the_witnesses_and_gates_against_their_consensus).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml
from ports import free_port
from realkit import run_whole_experiment
from wordpiece import count_tokens, load_vocab

from embedswap.config import load_experiment
from embedswap.models import resolve_model_path
from embedswap.paths import engine_python
from embedswap.scaffold import new_experiment
from embedswap.measure.workload import load_workload

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(4200)]  # the session fixture runs the whole demo
REPO = Path(__file__).resolve().parents[2]
EMBEDSWAP = str(Path(sys.executable).parent / "embedswap")
# The demo takes ~12-25 min on 2 cores (four server starts, the lock ablation, the restore, the dtype sweep); CI has 90.
RUN_TIMEOUT_S = 3600
LATENCY_REPEATS = 1
# Fewer than the article's 30 sequential and 40 concurrent requests (issue 61, CI time: at 30 + 40 the five latency
# phases, legacy, its lock ablation, Dynamo, vLLM and the restore, were ~200 s of this run's ~480 s). No assertion
# here reads a latency verdict; the demo preset's own counts (the article's) are pinned by
# tests/summary/test_samples_timing.py and run by `make demo`. Not fewer: at 6 + 8 without warm-up the post's
# checks failed (embedswap.report.post_checks: a verdict's interval labelled widened_by_drift narrower than the
# ratio's own bootstrap interval; docs/testing.md, "The demo and zoo runs' second cut").
SEQUENTIAL, CONCURRENT = 12, 16


def server_processes(ports: list[int]) -> list[str]:
    """Processes still listening on the experiment's ports or running its servers."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if any(f"--port {p}" in cmdline for p in ports):
            found.append(f"{proc.info['pid']}: {cmdline[:120]}")
    return found


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("project")
    ports = [free_port(), free_port(), free_port()]
    folder = new_experiment("e2e", root / "experiments", data_dir=REPO / "data", legacy_port=ports[0],
                           vllm_port=ports[1], dynamo_port=ports[2])
    # issue 18: the parity matrix's engine rows run in the qwen3 e2e (CI time); here the legacy padding per dtype,
    # cold start and the engine rows' reason
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["parity"]["checks"]["engine"] = False
    # no open-loop sweep and no concurrency sweep: tests/e2e/test_capacity_e2e.py and test_open_loop_ray_e2e.py pin
    # the capacity answer, test_latency_only_e2e.py runs a sweep; here they were ~220 s of the run's ~1,000 s. One
    # repeat of SEQUENTIAL + CONCURRENT requests (issue 61: the second pass's time; the restore's one repeat is the
    # same path): intervals pooled over repeats and the block bootstrap across them are the A/A runs' (six blocks for
    # the legacy server, two for each engine) and tests/analysis' (docs/testing.md)
    config["latency"].pop("open_loop")
    config["latency"].update(repeats=LATENCY_REPEATS, sweep=[], sequential_requests=SEQUENTIAL,
                             concurrent_requests=CONCURRENT)
    # one pass of the 40 documents in batches of 8 instead of the preset's three (issue 61, CI time: ~2/3 of each
    # workload part, legacy 10 s, Dynamo 7, vLLM 6 in CI): every assertion below reads the first
    # repeat (cosines, tokens, parity, index, ranking) or none; the repeats' stability (vectors.repeat_stability,
    # None with one repeat) is asserted nowhere here: tests/analysis/test_vector_diff.py and
    # tests/mutants/test_mutants_vectors.py pin it, test_guard_e2e.py captures real servers twice
    config["workload"]["repeats"] = 1
    # CI time (docs/testing.md), each measured by the qwen3 run instead: the Matryoshka override (a third vLLM start,
    # ~70 s beside other work; test_end_to_end_qwen3.py's `vllm-matryoshka`) and vLLM offline at its own default
    # dtype (fp16, ~70 s: no fast fp16 kernels on this CPU; the qwen3 run's `auto` backend). `make demo` keeps both.
    del config["targets"]["vllm-matryoshka"]
    config.pop("matryoshka")
    # The dtype sweep's bf16 row through transformers, as `make demo` (--lean) has it, instead of vLLM offline in bf16
    # (issue 61: its own vLLM engine process, ~30 s of step 05's ~100): vLLM offline below fp32 is gated by the qwen3
    # run (test_end_to_end_qwen3.py's test_parity_at_fp32_and_the_default_dtype: `auto`, bf16 there, in the matrix's
    # engine process) and its matrix rows (test_parity_matrix_engine_rows: vllm-offline bfloat16); the engine still
    # runs here as the served targets.
    config["parity"]["backends"] = [{"kind": "transformers", "dtype": "bfloat16"}]
    # vLLM's transformers implementation as a fifth witness of step 05's reference (`auto` runs it here: vLLM
    # targets; one more vLLM offline start, the only witness not read from the reference cache): the same witness
    # on the same embedded MiniLM agreeing with sentence-transformers is tests/parity/test_witnesses.py's
    # test_the_engine_witness_reads_the_model_as_the_other_witnesses_do (e2e), step 05 running it when asked and
    # naming it when it fails that file's test_step_05_writes_the_witnesses_and_gates_against_their_consensus
    config["parity"]["engine_witness"] = False
    # the restore (A-B-A) brings the legacy server back and checks its vectors (read below); its second latency
    # measurement (~22 s of the 28 requests on the locked server) is read by no assertion here: the restored real
    # legacy server's latency is test_host_drift_e2e.py's, the A-B-A drift bound test_latency_twins_e2e.py's
    config["sequencing"]["restore_latency"] = False
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    run = run_whole_experiment(folder, RUN_TIMEOUT_S)
    attempts = sorted((folder / "attempts").iterdir())
    attempt = attempts[-1]
    summary = json.loads((attempt / "summary.json").read_text())
    return {"run": run, "folder": folder, "attempt": attempt, "summary": summary, "ports": ports, "root": root}


def test_run_succeeds_and_every_notebook_executed(demo: dict) -> None:
    assert demo["run"].returncode == 0, demo["run"].stdout[-3000:] + demo["run"].stderr[-3000:]
    executed = sorted(p.name for p in (demo["attempt"] / "notebooks").glob("*.ipynb"))
    assert executed == ["01_legacy_capture.ipynb", "02_swap_deploy.ipynb", "03_vector_contract_diff.ipynb",
                        "04_latency.ipynb", "05_parity.ipynb"]
    steps = demo["summary"]["steps"]
    for target in ("legacy", "dynamo", "vllm"):
        assert steps[f"capture:{target}"]["status"] == "complete", steps


def test_no_server_survives_the_run(demo: dict) -> None:
    assert server_processes(demo["ports"]) == []
    assert not list((demo["attempt"] / "logs").glob("*.pid"))
    # Dynamo (frontend + worker) states what it is and how long it took to answer (its own smoke test was a fourth
    # Dynamo start in make test; this run's is the same)
    dynamo = json.loads((demo["attempt"] / "captures" / "dynamo" / "target.json").read_text())
    assert "ai-dynamo" in dynamo["version"] and dynamo["start_seconds"] > 0, dynamo
    assert set(dynamo["rss_bytes_by_process"]) == {"dynamo.frontend", "dynamo.worker"}, dynamo


def test_vectors_from_both_servers(demo: dict) -> None:
    vectors = demo["summary"]["vectors"]
    assert vectors["dimension"] == {"legacy": 384, "candidate": 384}
    cosine = vectors["cosine"]
    assert 0.99 < cosine["min"] <= cosine["median"] <= cosine["max"] <= 1.0 + 1e-6
    assert set(vectors["by_language"]) == {"en", "ko"}
    for name in ("legacy", "dynamo", "vllm"):
        assert vectors["by_target"][name]["dimension"] == 384
        assert abs(vectors["by_target"][name]["norm"]["first"] - 1.0) < 1e-3
        assert vectors["by_target"][name]["index_order_ok"] is True
    # every candidate, not only the first: README, "cosine to legacy 1.000000 · 1.000000 · 1.000000" for both
    assert set(vectors["comparisons"]) == {"dynamo", "vllm"}
    for name, comparison in vectors["comparisons"].items():
        assert comparison["measured"] is True, name
        assert comparison["cosine"]["min"] >= 0.9999995, (name, comparison["cosine"])
        assert {lang: part["n"] for lang, part in comparison["by_language"].items()} == {"en": 20, "ko": 20}, name
        assert len(comparison["per_document"]) == 40, name


def test_token_totals_match_the_tokenizer(demo: dict) -> None:
    # counted from tokenizer.json's vocabulary (tests/support/wordpiece.py), not with the kit's own tokenizer call
    experiment = load_experiment(demo["folder"])
    vocab = load_vocab(resolve_model_path(experiment.model.path))
    expected = sum(count_tokens(d.text, vocab) for d in load_workload(experiment, demo["folder"]).documents)
    assert expected == 6947  # README, "dimension / token total (40 docs) 384 / 6,947"
    totals = demo["summary"]["vectors"]["token_total"]
    assert totals["legacy"] == expected
    assert totals["candidate"] == expected
    assert demo["summary"]["vectors"]["by_target"]["vllm"]["token_total"] == expected
    # the kit's own count, captured per attempt, is the same yardstick
    assert demo["summary"]["vectors"]["tokenizer_token_total"] == expected
    for name in ("legacy", "dynamo", "vllm"):
        assert demo["summary"]["vectors"]["by_target"][name]["token_total"] == expected, name
        assert demo["summary"]["vectors"]["by_target"][name]["token_total_matches_tokenizer"] is True, name


def test_contract_probes_and_the_quiet_divergence(demo: dict) -> None:
    contract = {row["probe"]: row for row in demo["summary"]["contract"]}
    assert len(contract) >= 12
    # the statuses measured on vLLM 0.31.0 / Dynamo 1.6.1 (ENGINE_FACTS.md; README's contract table)
    assert {p: r["legacy"]["status"] for p, r in contract.items() if r["legacy"]["status"] != 200} == {
        "empty_list": 400, "empty_string": 400, "non_json_body": 400, "wrong_type": 400,
        "v2_embed_query": 404}  # the route it lacks: the baseline is its answer to the same request (issue 54)
    for name, refused in (("vllm", {"dimensions_native": 400, "dimensions_reduced": 400, "v2_embed_query": 400,
                                    "over_long_input": 400, "empty_list": 400, "unknown_model": 404,
                                    "non_json_body": 400, "wrong_type": 400}),
                          ("dynamo", {"dimensions_native": 500, "dimensions_reduced": 500, "v2_embed_query": 404,
                                      "over_long_input": 500, "empty_list": 400, "unknown_model": 404,
                                      "non_json_body": 400, "wrong_type": 400})):
        statuses = {p: r["by_target"][name]["status"] for p, r in contract.items()}
        assert {p: s for p, s in statuses.items() if s != 200} == refused, name
    # the article's dangerous case: 200 from both, a different vector, because the engine ignores input_type
    query = contract["input_type_query"]
    for name in ("dynamo", "vllm"):
        assert query["by_target"][name]["status"] == 200
        assert query["verdicts"][name]["verdict"] == "silent-divergence"
        assert query["verdicts"][name]["cosine"] < 0.99
    assert query["legacy"]["status"] == 200
    # a client error: vLLM alone answers 400, the Dynamo frontend 500 (ENGINE_FACTS.md, the article's table)
    dims = contract["dimensions_reduced"]
    assert dims["legacy"]["status"] == 200
    assert dims["by_target"]["vllm"]["status"] == 400 and dims["verdicts"]["vllm"]["verdict"] == "loud-failure"
    assert dims["by_target"]["dynamo"]["status"] == 500 and dims["verdicts"]["dynamo"]["verdict"] == "retry-hazard"
    assert contract["over_long_input"]["verdicts"]["vllm"]["verdict"] == "loud-failure"
    assert contract["encoding_base64"]["verdict"] == "format-difference"
    assert contract["plain"]["verdict"] == "same"
    # vLLM's /v2/embed: MiniLM defines no sentence-transformers prompts, so vLLM refuses input_type there;
    # neither the legacy server nor Dynamo's frontend has the route
    v2 = contract["v2_embed_query"]
    assert v2["by_target"]["vllm"]["status"] == 400 and "input_type" in v2["by_target"]["vllm"]["error"]
    assert v2["by_target"]["dynamo"]["status"] == 404 and v2["by_target"]["legacy"]["status"] == 404
    # every server refuses the route: each read against the legacy server's answer to the same request, alike
    # (issue 54: another probe's answer is the reference only where the candidate serves the route)
    assert v2["legacy"]["status"] == 404
    assert {n: (v["verdict"], v.get("baseline")) for n, v in v2["verdicts"].items()} == {
        "vllm": ("same", None), "dynamo": ("same", None)}


def test_no_server_is_called_corrupting(demo: dict) -> None:
    """Issue 56: a dropped connection (the demo once lost one of three sends of ``v2_embed_query`` to Dynamo) is a
    transport fault judged by rate, never corruption; none of the demo's servers corrupts an answer."""
    judged = demo["summary"]["decisions"]["faults"]["by_target"]
    assert {name: d["code"] for name, d in judged.items() if d["code"] in ("corrupting", "transport_above_margin")} \
        == {}, judged
    for event in demo["summary"]["faults"]["by_target"].get("dynamo", {}).get("events", []):
        assert event["kind"] in ("connection", "stale_connection", "timeout", "cut_body"), event


def test_instruction_three_ways(demo: dict) -> None:
    section = demo["summary"]["instruction"]
    assert section["measured"] is True and section["chat_template"] is False
    rows = {(r["target"], r["variant"]): r for r in section["rows"]}
    assert rows[("legacy", "server_instruction")]["reading"] == "applied"
    for name in ("dynamo", "vllm"):
        assert rows[(name, "server_instruction")]["reading"] == "ignored"
        assert rows[(name, "client_prefixed")]["reading"] == "applied"


def test_latency_points_are_measured(demo: dict) -> None:
    latency = demo["summary"]["latency"]["by_target"]
    for role in ("legacy", "dynamo", "vllm"):
        for point in ("sequential", "concurrent"):
            stats = latency[role][point]
            assert stats["errors"] == 0
            assert 0 < stats["p50_ms"] <= stats["p99_ms"]
            assert stats["repeats"] == LATENCY_REPEATS
        assert latency[role]["concurrent"]["docs_per_s"] > 0
        assert latency[role]["sequential"]["requests_per_repeat"] == SEQUENTIAL
        assert latency[role]["concurrent"]["requests_per_repeat"] == CONCURRENT
    records = [json.loads(line) for line in
               (demo["attempt"] / "captures" / "legacy" / "latency_requests.jsonl").read_text().splitlines()]
    assert len(records) == LATENCY_REPEATS * (SEQUENTIAL + CONCURRENT)


def test_parity_rows(demo: dict) -> None:
    parity = demo["summary"]["parity"]
    rows = {row["backend"]: row for row in parity["rows"]}
    assert {"legacy", "dynamo", "vllm"} <= set(rows)
    # the dtype sweep: bf16 through transformers, as `make demo` has it (fp32 is the served vllm target; vLLM offline
    # below fp32, its default dtype, is the qwen3 run's `auto` row, left out here for CI time)
    sweep = {(row["dtype"], row["source"]) for name, row in rows.items() if name not in ("legacy", "dynamo", "vllm")}
    assert sweep == {("bfloat16", "captures/parity/backends/transformers-bfloat16/doc_vectors.npy")}, rows.keys()
    # the four witnesses of the reference agree (vLLM's transformers implementation, the fifth under `auto`, is
    # tests/parity/test_witnesses.py's: the fixture's comment)
    witnesses = parity["witnesses"]
    assert witnesses["consensus"] == ["sentence-transformers batch", "sentence-transformers alone",
                                      "transformers alone", "transformers batch"], witnesses
    assert witnesses["all_agree"] is True, witnesses
    # the legacy server is transformers in fp32, the reference sentence-transformers in fp32
    assert rows["legacy"]["cos_min"] >= 0.9999 and rows["legacy"]["pass"] is True
    # every served backend, each one's figure against the measured values (README: 1.000000 for all three), not the
    # gate's own expression; the offline bf16 (transformers 0.999866 here; vLLM offline's was docs/measurements.md's
    # 0.999864)
    for name in ("legacy", "dynamo", "vllm"):
        row = rows[name]
        assert (row["n"], row["threshold"], row["non_finite"]) == (40, 0.999, 0), name
        assert row["cos_min"] >= 0.9999995 and row["pass"] is True, (name, row["cos_min"])
    by_dtype = {row["dtype"]: row for name, row in rows.items() if name not in ("legacy", "dynamo", "vllm")}
    (bf16,) = [row for dtype, row in by_dtype.items() if dtype == "bfloat16"]
    assert 0.9995 <= bf16["cos_min"] < 0.99999 and bf16["pass"] is True, bf16["cos_min"]
    assert parity["pass"] is True


def test_report_rendered_with_labels(demo: dict) -> None:
    report = demo["root"] / "reports" / demo["folder"].name
    for name in ("report.md", "report.html", "report.ko.md", "report.en.md"):
        assert (report / name).exists(), name
    assert "실측" in (report / "report.ko.md").read_text()
    # the executed notebooks, exported to HTML with nbconvert and linked from the Setup section (issue 21)
    names = ["01_legacy_capture", "02_swap_deploy", "03_vector_contract_diff", "04_latency", "05_parity"]
    for lang in ("ko", "en"):
        setup = (report / f"report.{lang}.md").read_text().split("\n## 3.")[0]
        assert [f"notebooks/{n}.html" for n in names] == re.findall(r"\]\((notebooks/[\w.-]+\.html)\)", setup)
    for name in names:
        assert "<html" in (report / "notebooks" / f"{name}.html").read_text(encoding="utf-8")[:2000].lower()


def test_the_post_leads_with_its_conclusion_and_its_numbers_agree(demo: dict) -> None:
    """The demo's post (the blog draft): at most 220 lines, the conclusion before the first section, claim
    headings, a link to the full report; every number in it, its front matter and the latency figure's data exists
    in the decision it cites (tests/support/post_numbers.py); Dynamo and vLLM alone share their rows."""
    from post_numbers import figure_problems, front_matter_problems, post_problems

    from embedswap.report.front_matter import split
    from embedswap.analysis.upgrade import read_summary

    summary = read_summary(demo["summary"])
    report = demo["root"] / "reports" / demo["folder"].name
    problems = figure_problems(summary)
    for lang in ("ko", "en"):
        _, post = split((report / f"post.{lang}.md").read_text(encoding="utf-8"))
        assert len(post.splitlines()) <= 220, lang
        assert post.index("**") < post.index("\n## 1."), lang  # the conclusion comes first
        assert f"](report.{lang}.md)" in post and (report / f"report.{lang}.md").exists()
        problems += post_problems(summary, post, lang) + front_matter_problems(summary, lang)
    assert problems == []
    ko = split((report / "post.ko.md").read_text(encoding="utf-8"))[1]
    assert "## 3. 벡터는 같았다" in ko
    groups = summary.decisions.post.groups
    assert any(set(g.members) == {"dynamo", "vllm"} and g.basis == "sha256" for g in groups), groups
    assert "`dynamo` · `vllm`" in ko or "`vllm` · `dynamo`" in ko  # one column, one sentence
    assert "Dynamo 가 vLLM 단독에 더하는 것은" in ko  # what separates them, and what it does not know
    # no claim beyond its verdict, every figure and fact its stored one, no two statements that disagree, no twin
    # statements: checked on the post document (issue 63, embedswap/report/post_checks.py)
    from embedswap.report.catalogue import catalogue
    from embedswap.report.post_checks import document_problems

    assert document_problems(summary) == []
    from claims_check import claim_problems

    for lang in ("ko", "en", "ja", "zh"):
        # every figure with a verdict sits under its metric's label, pairs only by a pair verdict (issue 55)
        assert claim_problems(summary, lang) == [], lang
    words = catalogue("ko")
    probes = [p for p in words.probes if re.search(rf"(?<![\w/]){p}(?![\w])", "\n".join(
        line for line in ko.splitlines() if not line.startswith("|")))]
    assert probes == [] and "×" not in ko and "(는)" not in ko
    for name in summary.decisions.index:  # the index decision (candidates alike share the line), the ranking...
        assert any(line.startswith("- ") and f"`{name}`" in line and "서버의 색인" in line
                   for line in ko.splitlines()), name
    if summary.decisions.ranking.by_candidate:
        assert "nDCG@10" in ko
    if summary.target("dynamo") is not None and summary.target("dynamo").start_seconds is not None \
            and summary.target("vllm") is not None and summary.target("vllm").start_seconds is not None \
            and "vllm" in (summary.target("vllm").config.kind, summary.target("vllm").kind):
        # what Dynamo costs over vLLM alone: both start times and memories in one sentence (post.engine_cost)
        assert "띄운 뒤 정상 응답까지 `dynamo` 서버는" in ko and "`vllm` 서버는" in ko and "MiB" in ko
    if any(s.differ_before for s in summary.decisions.shim.values()):
        assert "shim(" in ko
    if summary.parity.rows:
        assert "패리티 게이트" in ko
    assert "4단계" in ko or "되살려" in ko  # the restore step, run or marked not measured


def test_verify_detects_a_flipped_byte(demo: dict, tmp_path: Path) -> None:
    ok = subprocess.run([EMBEDSWAP, "verify", str(demo["folder"])], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
    target = demo["attempt"] / "captures" / "legacy" / "latency_stats.json"
    original = target.read_bytes()
    try:
        target.write_bytes(original[:10] + bytes([original[10] ^ 1]) + original[11:])
        bad = subprocess.run([EMBEDSWAP, "verify", str(demo["folder"])], capture_output=True, text=True)
        assert bad.returncode == 1
        assert "changed: captures/legacy/latency_stats.json" in bad.stdout
    finally:
        target.write_bytes(original)


def test_one_notebook_reruns_with_plain_papermill(demo: dict, tmp_path: Path) -> None:
    out = tmp_path / "04.ipynb"
    run = subprocess.run(
        [str(Path(sys.executable).parent / "papermill"), str(REPO / "notebooks" / "04_latency.ipynb"), str(out),
         "-p", "experiment_dir", str(demo["folder"]), "-p", "attempt", demo["attempt"].name],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "seq p50 ms" in out.read_text()
    assert '"image/png"' in out.read_text(), "the notebook's figures were not displayed"


def test_shim_closes_the_instruction_gap(demo: dict) -> None:
    shim = demo["summary"]["shim"]
    assert shim["measured"] is True
    rows = {row["probe"]: row for row in shim["rows"]}
    row = rows["input_type_query"]
    assert row["naive_verdict"] == "silent-divergence"
    assert row["verdict"] == "same"
    assert row["cosine"] >= 0.999


def test_ranking_impact_is_measured(demo: dict) -> None:
    ranking = demo["summary"]["ranking"]
    # measured (linear gain, 24 queries): legacy 0.460, address swap only 0.655, README's "+0.194"; the shim sends
    # legacy's exact query text, so retrieval comes back the same (README: "+0.000 ... same ranking")
    assert ranking["legacy"]["ndcg_at_10"] == pytest.approx(0.460, abs=0.005)
    assert ranking["legacy"]["recall_at_5"] == pytest.approx(0.444, abs=0.005)
    for name in ("dynamo", "vllm"):
        side = ranking["by_candidate"][name]
        assert side["naive"]["ndcg_at_10"] == pytest.approx(0.655, abs=0.005), name
        assert side["deltas"]["naive"]["ndcg_at_10"] == pytest.approx(0.194, abs=0.005), name
        assert side["deltas"]["shim"] == {"ndcg_at_10": 0.0, "recall_at_5": 0.0, "mrr_at_10": 0.0}, name
        assert side["shim"]["top5_overlap"] == 1.0, name
    tests = demo["summary"]["decisions"]["ranking"]["by_candidate"]
    for name in ("dynamo", "vllm"):
        assert tests[name]["naive"]["tests"]["ndcg_at_10"]["verdict"] == "differs", name
        assert tests[name]["shim"]["unchanged"] is True, name


HOLM_HEADER = {"en": "Overall (Holm-corrected)", "ko": "전체 (Holm 보정)"}  # the demo renders ko and en


def test_ranking_and_cosines_are_decided_per_language(demo: dict) -> None:
    """The demo's queries and documents are Korean and English: each comparison is decided per language with
    Holm's correction, typed in the summary and shown as a table in each report language."""
    from embedswap.summary.model import validate_summary

    decisions = validate_summary(demo["summary"]).decisions
    for name in ("dynamo", "vllm"):
        for variant in ("naive", "shim"):
            slices = getattr(decisions.ranking.by_candidate[name], variant).slices
            assert set(slices) >= {"ndcg_at_10", "recall_at_5", "top5_overlap"}, (name, variant, slices)
            assert set(slices["ndcg_at_10"].by_slice) == {"en", "ko"}, (name, variant)
        # the shim sends legacy's own query text: no language ranks worse
        assert decisions.ranking.by_candidate[name].shim.slices["ndcg_at_10"].worse() == [], name
        assert set(decisions.vectors[name].by_slice) == {"en", "ko"}, name
        assert decisions.vectors[name].overall.code == "equivalent", name  # the same vectors in both languages
    report = demo["root"] / "reports" / demo["folder"].name
    for lang, header in HOLM_HEADER.items():
        assert header in (report / f"report.{lang}.md").read_text(encoding="utf-8"), lang


def test_lock_ablation_is_measured(demo: dict) -> None:
    ablation = demo["summary"]["ablation"]
    assert ablation["measured"] is True
    nolock = ablation["by_target"]["legacy-nolock"]
    assert nolock["lock"] is False and nolock["concurrent"]["errors"] == 0


def test_legacy_server_restored_after_the_swap(demo: dict) -> None:
    restore = demo["summary"]["restore"]
    assert restore["restored"] is True
    assert restore["cosine_to_step01_min"] > 0.9999


def test_report_rerenders_from_captures_alone(demo: dict) -> None:
    before = (demo["attempt"] / "manifest.json").read_bytes()
    run = subprocess.run([EMBEDSWAP, "report", str(demo["folder"])], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "report.en.html" in run.stdout
    assert (demo["attempt"] / "manifest.json").read_bytes() == before  # no capture touched
    assert (demo["root"] / "reports" / "index.html").exists()


def test_parity_matrix_legacy_padding_and_cold_start(demo: dict) -> None:
    """Issue 18: MiniLM's bf16 vectors change with the batch they are padded in (fp32 stays within 1e-6), every
    started server has its cold start, and the engine rows say why they did not run (engine off here)."""
    matrix = demo["summary"]["parity"]["matrix"]
    assert matrix["measured"] is True
    rows = {(r["check"], r["backend"], r["setting"]): r for r in matrix["rows"]}
    padding = "transformers (legacy padding)"
    fp32 = rows[("batch_invariance", padding, "float32 alone vs batch 8")]
    bf16 = rows[("batch_invariance", padding, "bfloat16 alone vs batch 8")]
    assert fp32["n"] == 32 and 1 - fp32["cos_min"] < 1e-6
    assert 1 - bf16["cos_min"] > 1e-6 and not bf16["figures"]["bit_identical"]
    cold = {r["backend"]: r for r in matrix["rows"] if r["check"] == "cold_start"}
    for name in ("legacy", "dynamo", "vllm"):
        assert cold[name]["figures"]["start_s"] > 0 and cold[name]["figures"]["first_ms"] > 0, name
    long_rows = [r for r in matrix["rows"] if r["check"] == "long_context"]
    assert {r["reason"]["code"] for r in long_rows} == {"parity_matrix_off"}
    report = (demo["root"] / "reports" / demo["folder"].name / "report.en.md").read_text()
    assert "### Parity matrix (article 003)" in report and "parity.checks.engine' is off" in report


def test_index_is_kept_on_the_demo(demo: dict) -> None:
    # identical vectors: the candidate's queries on the legacy index rank as legacy's, on a real embedded
    # PostgreSQL + pgvector that step 03 started and stopped (nothing of it is left: test_no_server_survives_the_run)
    index = demo["summary"]["index"]
    assert index["measured"] is True, index
    assert index["store"]["kind"] == "embedded" and index["store"]["pgvector_version"] == "0.8.5"
    assert (demo["attempt"] / "captures" / "index" / "searches.json").exists()
    assert not (demo["attempt"] / "index").exists()  # the data folder is rebuilt from the captures, not kept
    for name in ("dynamo", "vllm"):
        decision = demo["summary"]["decisions"]["index"][name]
        assert (decision["choice"], decision["sample"]) == ("keep", "keep_index"), decision["reason"]
        assert decision["cross"]["code"] == "equivalent" and decision["retention"] == pytest.approx(1.0)
        assert decision["adapter"]["identity"] is True and decision["adapter"]["residual_test"] < 1e-4
        assert decision["hnsw_recall"] is not None and decision["length"] == "same"
