"""Another API shape with a real server nobody here wrote (issue 64): vLLM's own Cohere-style route ``/v2/embed``
(``api_shape: cohere-v2``) as the candidate against the same vLLM server spoken to in the OpenAI shape as legacy.
One server, two shapes: whatever differs is the shape's, so the conclusion must name the shape change once (not a
drop-in), count no difference beyond it on the requests both shapes carry, read the stated model on the shape's
own model route, and the shim must carry the old client's calls in the candidate's shape. The worker's shared vLLM fp32 server (``vllm_fp32_minilm``): no engine start of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from realkit import make_experiment, measured_attempt, pooled_target

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900), pytest.mark.xdist_group(name="vllm-fp32-minilm")]

# requests both shapes carry as the same request (the shape-specific probes are not-applicable on one side)
PROBES = ["plain", "batch8_member", "whitespace_padded", "unicode_mixed"]


@pytest.fixture(scope="module")
def cohere_run(tmp_path_factory: pytest.TempPathFactory, vllm_fp32_minilm: Any) -> Iterator[dict[str, Any]]:
    from embedswap.pipeline.build import write_summary
    from embedswap.report.publish import render_report

    root: Path = tmp_path_factory.mktemp("shape-cohere")
    capture = ["workload", "probes"]
    folder = make_experiment(root, "shape-cohere", pooled_target(vllm_fp32_minilm, capture),
                             {"cohere": pooled_target(vllm_fp32_minilm, capture, api_shape="cohere-v2")},
                             probes=PROBES)
    attempt, summary = measured_attempt(folder)
    write_summary(summary, attempt)
    written = render_report(folder, attempt.name)
    yield {"summary": summary, "post": written["post.en.md"].read_text(encoding="utf-8")}


def test_the_shape_change_is_named_once_and_nothing_beyond_it_differs(cohere_run: dict[str, Any]) -> None:
    summary, post = cohere_run["summary"], cohere_run["post"]
    verdicts = {r["probe"]: r["verdicts"]["cohere"]["verdict"] for r in summary["contract"]}
    assert verdicts == dict.fromkeys(PROBES, "same"), verdicts  # one server: the same vectors through both shapes
    conclusion = next(c for c in summary["decisions"]["post"]["conclusions"] if c["name"] == "cohere")
    assert conclusion["api_shape"] == "cohere-v2" and conclusion["differ"] == 0, conclusion
    assert conclusion["code"] != "drop_in"  # the client's requests change with the shape
    assert post.count("speaks another API shape than the legacy server") == 1, post
    assert "Swapping only the address works" not in post
    # the shim said the old client's OpenAI calls in the Cohere shape to the real server and read its answers back
    # (step 02's re-probe): every probe compared, none different through it
    shim = summary["decisions"]["shim"]["cohere"]
    assert (shim["compared"], shim["differ_after"], shim["opened"]) == (len(PROBES), 0, []), shim


def test_the_same_model_is_read_on_the_shape_s_own_model_route(cohere_run: dict[str, Any],
                                                               vllm_fp32_minilm: Any) -> None:
    summary = cohere_run["summary"]
    identity = summary["targets"]["cohere"]["identity"]
    assert vllm_fp32_minilm.served_name in (identity.get("served_models") or []), identity
    plan = summary["plan"]["by_candidate"]["cohere"]
    assert plan["comparison"] == "same_model" and plan["probes_against"] == "legacy", plan
