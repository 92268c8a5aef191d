"""Issue 54, A/A: the kit's own legacy server compared with itself says "nothing differs" everywhere.

One running legacy server (started once, by this module's fixture, with the kit's own command:
``targets.legacy.LegacyServerTarget``) is named as both targets of an experiment, ``old`` (the legacy server) and
``same`` (the candidate), both ``kind: external`` at that one URL: an A/A that costs no second server start. Then
``embedswap run FOLDER`` runs every step the kit runs for such an experiment, and ``aa_check.aa_failures`` lists
every way the run fails to say "nothing differs" (the contract, the shim, the vectors, the index, latency, the
post read from its stored document, every language's post written). The test that breaks it on purpose rebuilds
the summary from the A/A run's captures with one probe's baseline changed back to the old rule, and the checker
must name that probe.
"""

from __future__ import annotations

from typing import Any

import pytest

from aa_check import AA_LANGUAGES, aa_experiment, aa_failures, change_probe, copy_experiment, rebuild, run_aa
from embedswap.config import load_experiment
from embedswap.config.targets import LegacyTarget
from embedswap.measure.contract import CATALOGUE
from embedswap.models import resolve_model_path
from embedswap.targets.legacy import LegacyServerTarget
from ports import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.quiet_host, pytest.mark.timeout(1200)]  # decides latency verdicts: run alone

LEGACY, CANDIDATE = "old", "same"
LANGUAGES = AA_LANGUAGES  # every language's post is checked
PROBES = [entry["name"] for entry in CATALOGUE]


@pytest.fixture(scope="module")
def aa_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("aa")
    (port,) = free_ports(1)
    # no latency phase of the legacy server alone: the six interleaved blocks of step 02 are both sides' latency
    folder = aa_experiment(root, f"http://127.0.0.1:{port}", PROBES, LEGACY, CANDIDATE, LANGUAGES, legacy_phase=False)
    experiment = load_experiment(folder)
    # the kit's own command for its legacy server (python -m embedswap.legacy_server ...), started once
    server = LegacyServerTarget("aa-legacy", LegacyTarget(kind="legacy", port=port, startup_timeout_s=180),
                                experiment.model, resolve_model_path(experiment.model.path), root / "logs")
    return run_aa(folder, server, [port])


def test_aa_run_completes(aa_run: dict[str, Any]) -> None:
    run = aa_run["run"]
    steps = aa_run["summary"]["steps"]
    assert all(step["status"] == "complete" for step in steps.values()), steps
    assert set(aa_run["posts"]) == set(LANGUAGES), run.stdout[-3000:] + run.stderr[-3000:]
    # the latency the A/A's "nothing differs" reads was decided, from the interleaved blocks (aa_failures reads no
    # verdict where none was decided; the legacy server has no phase of its own here)
    ratio = aa_run["summary"]["decisions"]["latency"]["ratios"][CANDIDATE]
    assert ratio["drift"]["design"] == "interleaved" and set(ratio["verdicts"]) == {"sequential", "concurrent"}, ratio


def test_aa_says_nothing_differs(aa_run: dict[str, Any]) -> None:
    failures = aa_failures(aa_run["summary"], aa_run["posts"], LEGACY, CANDIDATE, languages=LANGUAGES,
                           captures=aa_run["attempt"] / "captures")
    assert failures == [], "\n".join(failures)


def _legacy_answers_another_probe(record: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The old rule of ``v2_embed_query``: the legacy side of the row is its answer to ``input_type_query``
    (on /v1/embeddings, 200) in place of its own answer to ``POST /v2/embed`` (404)."""
    kept = {k: record[k] for k in ("probe", "description", "path", "sent") if k in record}
    return {**records["input_type_query"], **kept}


def _candidate_vector_turned(record: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The candidate's answer to ``encoding_float`` with its vector turned away (cosine ~0.98 to the legacy one),
    the same in every repeat of the request (a systematic difference, not a nondeterministic one)."""
    def turned(answer: dict[str, Any]) -> dict[str, Any]:
        if not answer.get("vector"):
            return answer
        vector = list(answer["vector"])
        vector[0] += 0.2
        return {**answer, "vector": vector}

    return {**turned(record), "repeats": [turned(r) for r in record.get("repeats") or []]}


BREAKS = {  # probe -> (the target whose record changes, how)
    "v2_embed_query": (LEGACY, _legacy_answers_another_probe),
    "encoding_float": (CANDIDATE, _candidate_vector_turned),
}


def test_rebuilt_from_captures_alone_is_still_aa(aa_run: dict[str, Any],
                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """The control of the test below: the same captures, rebuilt and rendered again unchanged, still pass."""
    folder = copy_experiment(aa_run["folder"], tmp_path_factory.mktemp("aa-rebuilt"))
    attempt = aa_run["attempt"].name
    summary, posts = rebuild(folder, attempt, LANGUAGES)
    failures = aa_failures(summary, posts, LEGACY, CANDIDATE, languages=LANGUAGES,
                           captures=folder / "attempts" / attempt / "captures")
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("probe", list(BREAKS))
def test_a_changed_probe_fails_the_aa(aa_run: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                                      probe: str) -> None:
    """Broken on purpose: one probe's record changed in a copy of the A/A run's captures (the legacy side of
    ``v2_embed_query`` taken from another probe, as the old rule did; the candidate's ``encoding_float`` vector
    turned), the summary rebuilt from the captures: the checker names that probe and the conclusion is no longer
    drop-in, in the summary and in the post it words (read from the stored post decisions, tests/support/aa_post.py),
    while every language's post is still written."""
    folder = copy_experiment(aa_run["folder"], tmp_path_factory.mktemp(f"aa-broken-{probe}"))
    attempt = aa_run["attempt"].name
    target, change = BREAKS[probe]
    change_probe(folder / "attempts" / attempt / "captures", target, probe, change)
    summary, posts = rebuild(folder, attempt, LANGUAGES)
    failures = aa_failures(summary, posts, LEGACY, CANDIDATE, languages=LANGUAGES)
    print("\n".join(failures))
    assert any(f.startswith(f"contract: probe `{probe}`") for f in failures), failures
    assert any(f.startswith("conclusion:") and probe in f for f in failures), failures
    assert any(f.startswith("post: post.closings says") and CANDIDATE in f for f in failures), failures
    assert set(posts) == set(LANGUAGES) and not any(f.startswith("post.") for f in failures), failures
