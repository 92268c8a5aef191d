"""Identical servers are identical (issue 54), on in-process fakes: two servers that refuse the same requests and
ignore the same fields give no difference on any probe, a pass-through shim that opens nothing, and re-probes
that send the direct probes' exact requests. The end-to-end A/A runs on real servers are tests/e2e/test_aa_e2e.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from embedswap.answers.classify import classify
from embedswap.captures import new_attempt
from embedswap.config import parse_experiment
from embedswap.measure.capture import capture_probes
from embedswap.measure.contract import CATALOGUE
from embedswap.measure.shim_probes import capture_shim_probes
from embedswap.measure.workload import load_workload
from embedswap.shim.settings import ShimConfig
from embedswap.summary.sections.contract import contract_section
from embedswap.summary.sections.shim import shim_section
from embedswap.wire.client import EmbeddingClient
from test_shim import DATA, MODEL, SERVED, FakeServer, _serve

# every probe but the 512-input batch (slow through the fake's tokenizer, and about batch limits)
PROBES = [entry["name"] for entry in CATALOGUE if entry["name"] != "large_batch"]


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets another test of this worker registered (a 4-letter key "wrong") would be redacted from the captures
    written here ("wrong_type" -> "[redacted]_type"): this file starts from none."""
    from embedswap import redact

    monkeypatch.setattr(redact, "_registered", set())


def _aa(tmp_path: Path, kind: str) -> tuple[list[dict], dict, dict, list[dict], list[dict]]:
    """Two fakes of one kind as legacy and candidate: (contract rows, shim section, shim config, direct candidate
    probe records, shim probe records)."""
    experiment = parse_experiment({
        "name": "aa", "date": "2026-12-05", "model": {"path": MODEL, "served_name": SERVED},
        "workload": {"documents": str(DATA / "documents.jsonl"), "queries": str(DATA / "queries.jsonl"),
                     "qrels": str(DATA / "qrels.jsonl")},
        "targets": {"old": {"kind": "external", "url": "http://127.0.0.1:1"},
                    "same": {"kind": "external", "url": "http://127.0.0.1:1"}},
        "legacy": "old", "candidates": ["same"], "contract": {"probes": PROBES},
    })
    workload = load_workload(experiment, tmp_path)
    attempt = new_attempt(tmp_path)
    servers = []
    try:
        for name in ("old", "same"):
            server, url = _serve(FakeServer(kind))
            servers.append(server)
            with EmbeddingClient(url, SERVED) as client:
                capture_probes(client, experiment, workload, attempt, name, MODEL)
            if name == "same":
                capture_shim_probes(url, experiment, workload, attempt, name, MODEL)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    return (contract_section(experiment, attempt), shim_section(experiment, attempt),
            attempt.read_json("same/shim_config.json"), attempt.read_jsonl("same/probes.jsonl"),
            attempt.read_jsonl("same/shim_probes.jsonl"))


@pytest.mark.parametrize("kind", ["legacy", "vllm", "dynamo"])
def test_a_server_against_itself_differs_nowhere(tmp_path: Path, kind: str) -> None:
    rows, shim, config, direct, through = _aa(tmp_path, kind)
    verdicts = {r["probe"]: r["verdicts"]["same"] for r in rows}
    assert set(verdicts) == set(PROBES)
    assert {p: v["verdict"] for p, v in verdicts.items() if v["verdict"] != "same"} == {}
    assert not any(v.get("baseline") for v in verdicts.values())  # each read against the same request
    # the shim: nothing to rewrite, nothing it opens or leaves
    assert ShimConfig.from_dict(config).rewrites() == [], config["reason_codes"]
    assert {r["probe"]: r["verdict"] for r in shim["rows"] if r["verdict"] != "same"} == {}
    # a re-probe sends the direct probe's exact request (the same window of the same-text probe, issue 54)
    sent = {r["probe"]: r["sent"] for r in direct}
    assert {r["probe"]: r["sent"] for r in through} == {p: s for p, s in sent.items() if p in
                                                        {r["probe"] for r in through}}


def test_departures_both_servers_share_are_notes_not_differences(tmp_path: Path) -> None:
    """The vLLM-like fakes both ignore `input_type` and echo their own model name: a note about both servers."""
    rows, *_ = _aa(tmp_path, "vllm")
    by_probe = {r["probe"]: r for r in rows}
    # both answer the base64 ask in base64 and refuse what the other refuses; nothing of it is the candidate's
    for row in rows:
        assert set(row["conformance"].get("same", [])) == set(row["conformance"].get("old", [])), row["probe"]
    assert by_probe["unknown_model"]["verdicts"]["same"]["verdict"] == "same"


def test_a_shared_departure_becomes_a_difference_when_only_the_candidate_shows_it() -> None:
    """The rule the A/A test rests on, broken on purpose: the same departure on the candidate alone differs."""
    sent = {"model": "minilm", "input": ["a"], "encoding_format": "base64"}
    base = {"status": 200, "dim": 2, "n_vectors": 1, "vector": [1.0, 0.0], "sent": sent, "model": "minilm"}
    assert classify({**base, "encoding": "float"}, {**base, "encoding": "float"}).verdict == "same"
    assert classify({**base, "encoding": "base64"}, {**base, "encoding": "float"}).verdict == "format-difference"


def test_repeats_that_vary_on_both_sides_are_a_note_about_both() -> None:
    """A server that answers identical requests otherwise among themselves, compared with itself: not a finding
    about the candidate (its representatives agree); on the candidate alone it is ``nondeterministic``."""
    steady = {"status": 200, "dim": 2, "n_vectors": 1, "vector": [1.0, 0.0], "sent": {"input": ["a"]}}
    varying = {**steady, "repeats": [{**steady, "vector": [0.0, 1.0]}, {**steady}]}
    both = classify(varying, varying)
    assert (both.verdict, both.shared) == ("same", ["repeats"])
    assert classify({**steady, "repeats": [steady, steady]}, varying).verdict == "nondeterministic"
