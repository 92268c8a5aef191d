"""The diagnosis' inputs from an attempt's captures (issue 24): the limits servers state or show when probed."""

from __future__ import annotations

from pathlib import Path

from embedswap.captures import new_attempt
from embedswap.diagnosis.step import probed_limits


def test_probed_limits_from_an_error_text_and_from_a_silently_truncated_input(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    attempt.write_jsonl("vllm/probes.jsonl", [
        {"probe": "plain", "status": 200, "prompt_tokens": 7, "error": None},
        {"probe": "over_long_input", "status": 400,
         "error": "This model's maximum context length is 256 tokens. However, your prompt contains at least 257"}])
    attempt.write_jsonl("legacy/probes.jsonl", [
        {"probe": "plain", "status": 200, "prompt_tokens": 7, "error": None},
        {"probe": "over_long_input", "status": 200, "prompt_tokens": 12, "error": None}])  # truncated, answered
    attempt.write_jsonl("dynamo/probes.jsonl", [{"probe": "over_long_input", "status": 500,
                                                 "error": "Internal server error"}])  # states nothing
    assert probed_limits(attempt, "vllm") == [256]
    assert probed_limits(attempt, "legacy") == [12]  # a plain answer's token count is no limit
    assert probed_limits(attempt, "dynamo") == []
    assert probed_limits(attempt, "never-captured") == []


def test_the_stored_hypothesis_has_every_field_of_the_diagnosis_one() -> None:
    """summary.json's typed Hypothesis is read back from what diagnosis.findings.Hypothesis.as_dict writes: a field
    added to one and not the other would fail at load (extra="forbid") or be dropped."""
    from dataclasses import fields

    from embedswap.diagnosis.findings import Hypothesis
    from embedswap.summary.types_sections import Hypothesis as StoredHypothesis

    diagnosed = {f.name for f in fields(Hypothesis)}
    assert set(StoredHypothesis.model_fields) - {"cos_min"} == diagnosed
    every = Hypothesis("cls", True, False, eos=True, prompt="p: ", max_tokens=64, dtype="bfloat16",
                       batching="mask_ignored")
    assert StoredHypothesis.model_validate({**every.as_dict(), "cos_min": 0.5}).model_dump(exclude={"cos_min"}) \
        == every.as_dict()
