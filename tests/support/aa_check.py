"""What an A/A run must say (issue 54): a server compared with itself differs nowhere.

``aa_failures(summary, posts, legacy, candidate)`` lists every way one run fails to say "nothing differs", one line
each, naming the probe, the section, the statement or the language where it does: the conclusion ``drop_in``
(stored), every contract probe ``same`` or not applicable, the shim a pass-through with nothing opened, the vectors
the same (every per-document cosine 1, equal sha256), the search ranking unchanged, the index kept, no latency
verdict ``different`` or ``failed`` (:func:`summary_failures`); and the post (tests/support/aa_post.py): its stored
document passes the checks of embedswap/report/post_checks.py, no statement of it says a difference, the
conclusion's contract and vectors sentences are the catalogue's ``same`` and the closing ``drop_in``, each
language's post.<lang>.md written and rendered (the markdown is read for that only). An empty list is an A/A that
passes. Reads summary.json as stored (a dict); used by tests/e2e/test_aa_e2e.py, test_aa_vllm_e2e.py,
test_aa_infinity_e2e.py and test_aa_llamacpp_e2e.py (``aa_experiment`` and ``run_aa`` set up and run such an
experiment for any server kind).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aa_post import post_failures

# a probe answered alike by both sides
SAME_VERDICTS = ("same", "not-applicable")
# ShimConfig (embedswap.shim.settings) fields that rewrite a request or an answer (or its retries), and their
# pass-through values: kept here rather than read from ShimConfig.rewrites(), so the check does not rest on the code
# it checks
PASS_THROUGH: dict[str, Any] = {
    "strip_dimensions": False,  # `dimensions` dropped and emulated (slice + renormalise)
    "prepend_query_instruction": False,  # `input_type`/`instruction` dropped, the prompt put in the text
    "max_input_tokens": None,  # inputs cut to a token limit
    "model_override": None,  # `model` replaced
    "drop_fields": [],  # fields removed
    "force_float": False,  # `encoding_format` replaced by "float"
    "renormalise": False,  # answers L2-renormalised
    "reject_empty_strings": False,  # "" answered 400 by the shim itself
    "non_retryable_statuses": [],  # statuses never retried (learned as disguised client errors)
}
# a vector of the same server for the same text: the same float32 values
SAME_COSINE = 1 - 1e-6
BAD_CODES = ("different", "failed")


def read_posts(folder: Path, languages: list[str]) -> dict[str, str]:
    """post.<lang>.md of each language found in a report folder."""
    out = {}
    for lang in languages:
        path = folder / f"post.{lang}.md"
        if path.exists():
            out[lang] = path.read_text(encoding="utf-8")
    return out


def _verdict_text(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return "no verdict"
    detail = verdict.get("detail") or ""
    aspects = verdict.get("aspects") or []
    return f"{verdict.get('verdict')}" + (f" [{', '.join(aspects)}]" if aspects else "") + (
        f" ({detail})" if detail else "")


def _conclusion_failures(summary: dict[str, Any], candidate: str) -> list[str]:
    conclusions = (summary.get("decisions", {}).get("post") or {}).get("conclusions") or []
    mine = next((c for c in conclusions if c.get("name") == candidate), None)
    if mine is None:
        return [f"conclusion: decisions.post has no conclusion for `{candidate}`"]
    if mine.get("code") == "drop_in":
        return []
    named = {k: mine.get(k) for k in ("silent", "refused", "accepted", "retry", "shape", "shim_left") if mine.get(k)}
    return [f"conclusion: `{candidate}` is {mine.get('code')!r}, not 'drop_in' ({mine.get('differ')} of "
            f"{mine.get('compared')} compared probes differ: {named}; cosine_min {mine.get('cosine_min')})"]


def _contract_failures(summary: dict[str, Any], candidate: str) -> list[str]:
    rows = summary.get("contract")
    if not isinstance(rows, list):
        return [f"contract: not measured ({(rows or {}).get('why')})"]
    out = []
    for row in rows:
        verdict = (row.get("verdicts") or {}).get(candidate)
        if (verdict or {}).get("verdict") not in SAME_VERDICTS:
            base = f", compared with the legacy answer to `{row['compare_to']}`" if row.get("compare_to") else ""
            out.append(f"contract: probe `{row['probe']}`: {_verdict_text(verdict)}{base}")
    return out


def _shim_failures(summary: dict[str, Any], candidate: str, captures: Path | None) -> list[str]:
    out = []
    shim = summary.get("shim") or {}
    configs = {"summary.shim.config": (shim.get("config") or {}).get(candidate)}
    if captures is not None:
        path = captures / candidate / "shim_config.json"
        configs[f"captures/{candidate}/shim_config.json"] = json.loads(path.read_text()) if path.exists() else None
    for where, config in configs.items():
        if config is None:
            continue  # the shim not derived: nothing rewritten (the rows below say whether it was probed)
        reasons = config.get("reasons") or {}
        for key, passing in PASS_THROUGH.items():
            value = config.get(key)
            if (list(value) if isinstance(value, (list, tuple)) else value) != passing:
                why = f": {reasons[key]}" if reasons.get(key) else ""
                out.append(f"shim: {where} rewrites, {key} = {value!r} (pass-through: {passing!r}){why}")
    for row in shim.get("rows") or []:
        verdict = (row.get("verdicts") or {}).get(candidate)
        if verdict is not None and verdict.get("verdict") not in (*SAME_VERDICTS, None):
            out.append(f"shim: probe `{row['probe']}` through the shim: {_verdict_text(verdict)}")
    outcome = (summary.get("decisions", {}).get("shim") or {}).get(candidate) or {}
    for probe in outcome.get("opened") or []:
        out.append(f"shim: opened a difference on `{probe}` (decisions.shim.{candidate}.opened)")
    return out


def _vector_failures(summary: dict[str, Any], legacy: str, candidate: str) -> list[str]:
    vectors = summary.get("vectors") or {}
    comparison = (vectors.get("comparisons") or {}).get(candidate)
    if not comparison or not comparison.get("measured"):
        return [f"vectors: `{candidate}` not compared ({(comparison or {}).get('why')})"]
    out = []
    low = [(d.get("doc_id"), d.get("cosine")) for d in comparison.get("per_document") or []
           if d.get("cosine") is None or d["cosine"] < SAME_COSINE]
    if not comparison.get("per_document"):
        out.append("vectors: no per-document cosine")
    if low:
        out.append(f"vectors: {len(low)} documents with cosine below {SAME_COSINE}: {low[:5]}")
    by_target = vectors.get("by_target") or {}
    sha = {name: (by_target.get(name) or {}).get("sha256") for name in (legacy, candidate)}
    if not sha[legacy] or sha[legacy] != sha[candidate]:
        out.append(f"vectors: sha256 of the document vectors differ or are missing: {sha}")
    decided = (summary.get("decisions", {}).get("vectors") or {}).get(candidate)
    if decided is not None and (decided.get("overall") or {}).get("code") in BAD_CODES:
        out.append(f"vectors: decisions.vectors.{candidate} is {decided['overall'].get('code')} "
                   f"({decided['overall'].get('direction')})")
    return out


def _index_failures(summary: dict[str, Any], candidate: str) -> list[str]:
    decision = (summary.get("decisions", {}).get("index") or {}).get(candidate)
    if decision is None:
        return [f"index: no decision for `{candidate}` (decisions.index)"]
    if decision.get("choice") != "keep":
        return [f"index: `{candidate}` is {decision.get('choice')!r}, not 'keep' ({decision.get('reason')})"]
    return []


def _ranking_failures(summary: dict[str, Any], candidate: str) -> list[str]:
    decided = ((summary.get("decisions", {}).get("ranking") or {}).get("by_candidate") or {}).get(candidate)
    if decided is None or decided.get("decision") == "none":
        return []
    changed = {variant: (decided.get(variant) or {}).get("changed_queries") for variant in ("naive", "shim")}
    return [f"ranking: `{candidate}` is {decided.get('decision')!r}, not 'none' (queries ranked otherwise: {changed})"]


def _latency_failures(summary: dict[str, Any], candidate: str) -> list[str]:
    ratio = ((summary.get("decisions", {}).get("latency") or {}).get("ratios") or {}).get(candidate)
    if ratio is None:
        return []  # latency not measured: nothing claimed
    out = []
    verdicts = {"headline": ratio.get("verdict")}
    for point, figures in (ratio.get("verdicts") or {}).items():
        for figure in ("p50", "p99", "docs_per_s", "verdict"):
            verdicts[f"{point}.{figure}"] = (figures or {}).get(figure)
    for where, verdict in verdicts.items():
        if verdict and verdict.get("code") in BAD_CODES:
            out.append(f"latency: {where} is {verdict['code']} ({verdict.get('direction')})")
    return out


def summary_failures(summary: dict[str, Any], legacy: str, candidate: str, captures: Path | None = None) -> list[str]:
    """Every way the sections of summary.json (a dict, as stored) fail to say that ``candidate`` differs nowhere:
    the conclusion's code, the contract, the shim, the vectors, the ranking, the index and latency."""
    return [*_conclusion_failures(summary, candidate), *_contract_failures(summary, candidate),
            *_shim_failures(summary, candidate, captures), *_vector_failures(summary, legacy, candidate),
            *_ranking_failures(summary, candidate), *_index_failures(summary, candidate),
            *_latency_failures(summary, candidate)]


def aa_failures(summary: dict[str, Any], posts: dict[str, str], legacy: str, candidate: str, *,
                languages: list[str] | None = None, captures: Path | None = None) -> list[str]:
    """Every way the run of ``legacy`` against ``candidate`` (the same server twice) fails to say "nothing differs";
    empty when it says so everywhere: its sections (:func:`summary_failures`) and its post, read from the stored
    post document and the decisions it is worded from (:func:`aa_post.post_failures`). ``languages``: the posts
    that must exist (default: those given); ``captures``: the attempt's captures folder, whose
    ``<candidate>/shim_config.json`` is checked too."""
    return [*summary_failures(summary, legacy, candidate, captures),
            *post_failures(summary, posts, candidate, languages)]


# --- breaking an A/A run on purpose: its captures copied, one probe record changed, the summary rebuilt -----------
def copy_experiment(folder: Path, root: Path) -> Path:
    """The experiment folder (experiment.yaml and its attempts) under ``root/experiments``, so that its summary and
    report can be rebuilt there without touching the original."""
    import shutil

    target = root / "experiments" / folder.name
    shutil.copytree(folder, target)
    return target


def change_probe(captures: Path, target: str, probe: str, change: Any) -> None:
    """Replace ``probe``'s record in ``captures/<target>/probes.jsonl`` by ``change(record, records)`` (records:
    that target's records by probe name)."""
    path = captures / target / "probes.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_name = {r["probe"]: r for r in records}
    assert probe in by_name, f"{target} has no record of {probe}"
    records = [change(r, by_name) if r["probe"] == probe else r for r in records]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def rebuild(folder: Path, attempt: str, languages: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The attempt's summary built again from its captures alone (the pipeline every step ends with) and its report
    rendered again: (summary.json as written, the posts by language)."""
    from embedswap.paths import report_dir
    from embedswap.report.publish import render_report
    from embedswap.steps.context import open_step

    step = open_step(folder, attempt)
    step.summary()  # builds, decides and writes summary.json
    render_report(folder, attempt)
    summary = json.loads(step.attempt.summary_path.read_text())
    return summary, read_posts(report_dir(folder), languages)


# --- an A/A experiment: one running server named as both targets ---------------------------------------------------
AA_LANGUAGES = ["ko", "en", "ja", "zh"]
# an engine's A/A (vLLM, Infinity, llama.cpp): the post's sentences are the same code in every language, which the
# legacy server's A/A checks in all four; two here (the original's and English) keep make test shorter
ENGINE_AA_LANGUAGES = ["ko", "en"]
# one server answers for both sides: latency in alternating blocks, so the host's load reaches both alike (in phases,
# 6 requests a side, a shared 2-core host made the same server 1.36x "slower"); short blocks, many of them
AA_LATENCY = {"repeats": 6, "sequential_requests": 3, "concurrent_requests": 8, "concurrency": 4}
# an engine's A/A, beside other tests in make test's second pass: two blocks a side, one in each order (the block
# interval needs two; fewer blocks widen it, which an A/A, asserting "not different", allows; with four, the load
# beside them once read as a difference: docs/testing.md); the latency A/A with power is the legacy server's, alone
ENGINE_AA_LATENCY = {**AA_LATENCY, "repeats": 2}


def aa_experiment(root: Path, url: str, probes: list[str], legacy: str = "old", candidate: str = "same",
                  languages: list[str] | None = None, latency: dict[str, Any] | None = None,
                  legacy_phase: bool = True, **target: Any) -> Path:
    """An experiment under ``root/experiments`` whose legacy target and candidate are both ``kind: external`` at
    ``url`` (``target``: more fields of both, e.g. routes), every step on, the report in ``languages``, the latency
    runs ``latency`` (default :data:`AA_LATENCY`). ``legacy_phase=False``: the legacy target captures everything
    but a latency phase of its own in step 01; under ``interleave`` the candidate's ratios divide by the legacy
    blocks measured beside it in step 02 (``<candidate>/paired_legacy``), never by that phase, so the verdicts the
    A/A asserts are the same runs (the legacy server's A/A: 28.6 of its 194 s, docs/testing.md)."""
    import yaml
    from realkit import make_experiment

    external = {"kind": "external", "url": url, "startup_timeout_s": 180, **target}
    folder = make_experiment(root, "aa", external, {candidate: dict(external)}, probes=probes)
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["targets"] = {legacy: config["targets"].pop("legacy"), **config["targets"]}
    config["legacy"] = legacy
    config["report"]["languages"] = list(languages or AA_LANGUAGES)
    config["sequencing"].update(stop_legacy_before_candidates=False, interleave=True)
    config["latency"].update(latency or AA_LATENCY)
    if not legacy_phase:
        config["targets"][legacy]["capture"] = ["workload", "queries", "probes"]
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return folder


def run_aa(folder: Path, server: Any, ports: list[int], timeout_s: float = 900) -> dict[str, Any]:
    """Start ``server`` (an ``embedswap.targets`` Target) once, run ``embedswap run FOLDER`` (every step) against
    it, stop it: the attempt, the run, its seconds, summary.json and the posts."""
    import os
    import subprocess
    import time

    from embedswap.config import load_experiment
    from embedswap.paths import report_dir
    from realkit import EMBEDSWAP, wait_no_processes

    started = time.monotonic()
    server.start()
    try:
        ready_s = time.monotonic() - started
        began = time.monotonic()
        run = subprocess.run([EMBEDSWAP, "run", str(folder)], capture_output=True, text=True, timeout=timeout_s,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
        run_s = time.monotonic() - began
    finally:
        server.stop()
    assert wait_no_processes(ports) == []
    print(f"A/A {server.kind}: server ready in {ready_s:.1f} s; embedswap run (all steps) took {run_s:.1f} s")
    attempt = next((folder / "attempts").iterdir())
    assert attempt.joinpath("summary.json").exists(), run.stdout[-3000:] + run.stderr[-3000:]
    languages = list(load_experiment(folder).report.languages)
    return {"folder": folder, "attempt": attempt, "run": run, "run_s": run_s, "languages": languages,
            "summary": json.loads(attempt.joinpath("summary.json").read_text()),
            "posts": read_posts(report_dir(folder), languages)}


def run_failures(result: dict[str, Any], legacy: str = "old", candidate: str = "same",
                 gate_may_fail: bool = False) -> list[str]:
    """:func:`aa_failures` of a :func:`run_aa` result, after its steps: each ``complete`` (``gate_may_fail``: the
    parity step may have failed its gate, which the same server fails on both sides: a note, not a difference)."""
    steps = result["summary"]["steps"]
    out = [f"step {name}: {step.get('status')} ({step.get('detail') or step.get('problems')})"
           for name, step in steps.items() if step.get("status") != "complete"
           and not (gate_may_fail and name == "parity" and step.get("detail") == "gate failed")]
    if out:
        out.append(result["run"].stderr[-3000:])
    return out + aa_failures(result["summary"], result["posts"], legacy, candidate, languages=result["languages"],
                             captures=result["attempt"] / "captures")
