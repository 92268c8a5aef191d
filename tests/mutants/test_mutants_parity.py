"""Behaviour of the parity gate (parity.gate, gate_by_modality, thresholds) that the mutation run
(scripts/mutation.py, session `parity_gate`) found unchecked: the threshold is inclusive, the spread figures, the
five worst listed lowest first, the norm tolerance on both sides, the shapes refused. Vectors built by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from embedswap.parity.gate import (
    NORM_RELATIVE_TOLERANCE, _finite_or_none, gate, gate_by_modality, threshold_for, thresholds_from,
)

THRESHOLDS = {"text": 0.999, "text+image": 0.995}


def at(cosines: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Reference rows e0 and unit vectors at exactly the given cosines to them, in 2-D."""
    ref = np.tile([1.0, 0.0], (len(cosines), 1))
    vec = np.array([[c, math.sqrt(1 - c * c)] for c in cosines])
    return ref, vec


def test_the_threshold_is_reached_at_equality() -> None:
    ref, vec = at([1.0, 0.5])
    assert gate("b", "f32", "cpu", "text", ref, vec, ["a", "b"], threshold=0.5).passed is True
    assert gate("b", "f32", "cpu", "text", ref, vec, ["a", "b"], threshold=0.5000001).passed is False


def test_the_row_carries_its_figures() -> None:
    ref, vec = at([1.0, 0.6, 0.8, 0.9, 0.7, 0.95, 0.5])
    row = gate("vllm", "bf16", "cuda", "text", ref, vec, list("abcdefg"), threshold=0.4)
    assert (row.backend, row.dtype, row.device, row.modality, row.n) == ("vllm", "bf16", "cuda", "text", 7)
    assert row.cos_min == pytest.approx(0.5) and row.cos_median == pytest.approx(0.8)
    assert row.cos_max == pytest.approx(1.0) and row.threshold == 0.4 and row.passed is True
    assert [w["id"] for w in row.worst] == ["g", "b", "e", "c", "d"]  # the five lowest, lowest first
    assert row.worst[0]["cosine"] == pytest.approx(0.5)
    assert row.non_finite == 0 and row.why is None and row.reason is None
    assert isinstance(row.threshold, float)
    assert row.as_dict()["pass"] is True


def test_broken_vectors_are_listed_before_the_lowest_cosine() -> None:
    ref, vec = at([0.9, 1.0, 0.95])
    vec[1] = np.nan
    vec[2] = 0.0
    row = gate("b", "f32", "cpu", "text", ref, vec, ["a", "b", "c"], threshold=0.1)
    assert row.passed is False and row.non_finite == 2
    assert [w["id"] for w in row.worst] == ["b", "c", "a"] and row.worst[0]["cosine"] is None
    assert row.cos_min is None and row.cos_max is None


def test_an_empty_set_fails_without_figures() -> None:
    row = gate("b", "f32", "cpu", "text", np.zeros((0, 4)), np.zeros((0, 4)), [], threshold=0.9)
    assert row.passed is False and row.n == 0
    assert (row.cos_min, row.cos_median, row.cos_max, row.worst) == (None, None, None, [])


def test_thresholds_are_taken_by_modality_and_checked() -> None:
    ref, vec = at([0.997, 0.997])
    assert gate("b", "f32", "cpu", "text+image", ref, vec, ["a", "b"], thresholds=THRESHOLDS).passed is True
    assert gate("b", "f32", "cpu", "text", ref, vec, ["a", "b"], thresholds=THRESHOLDS).passed is False
    # a threshold given directly wins over the table
    assert gate("b", "f32", "cpu", "text", ref, vec, ["a", "b"], threshold=0.99, thresholds=THRESHOLDS).passed
    with pytest.raises(ValueError, match=r"no threshold for modality 'text\+image' \(have \['text'\]\)"):
        gate("b", "f32", "cpu", "text+image", ref, vec, ["a", "b"], thresholds={"text": 0.9})
    with pytest.raises(ValueError, match="give threshold or thresholds"):
        gate("b", "f32", "cpu", "text", ref, vec, ["a", "b"])
    with pytest.raises(ValueError, match="1 ids for 2 reference vectors"):
        gate("b", "f32", "cpu", "text", ref, vec, ["a"], threshold=0.9)
    with pytest.raises(ValueError, match=r"unknown modality 'audio' \(expected one of text, text\+image\)"):
        threshold_for("audio")
    assert threshold_for("text", 0.9, 0.8) == 0.9 and threshold_for("text+image", 0.9, 0.8) == 0.8


def test_thresholds_from_a_config() -> None:
    class Config:
        text_threshold = "0.99"
        multimodal_threshold = 0.9

    assert thresholds_from(Config) == {"text": 0.99, "text+image": 0.9}


@pytest.mark.parametrize(("factor", "fails"), [(1 + 2 * NORM_RELATIVE_TOLERANCE, True),
                                               (1 - 2 * NORM_RELATIVE_TOLERANCE, True),
                                               (1 + NORM_RELATIVE_TOLERANCE / 2, False),
                                               (1 - NORM_RELATIVE_TOLERANCE / 2, False)])
def test_the_norm_tolerance_is_relative_on_both_sides(factor: float, fails: bool) -> None:
    ref = np.eye(3) * 2.0  # norm 2: the tolerance scales with it
    row = gate("b", "f32", "cpu", "text", ref, ref * factor, ["a", "b", "c"], threshold=0.999)
    assert row.passed is not fails
    assert (row.reason or {}).get("code") == ("parity_norm_mismatch" if fails else None)


def test_the_norm_cause_names_both_medians() -> None:
    ref = np.eye(3)
    vec = np.eye(3) * np.array([[2.0], [3.0], [10.0]])  # median norm 3
    row = gate("b", "f32", "cpu", "text", ref, vec, ["a", "b", "c"], threshold=0.9)
    assert row.reason == {"code": "parity_norm_mismatch", "params": {"name": "b", "norm": "3", "reference": "1"}}
    assert "median norm 3" in row.why


def test_a_zero_reference_compares_norms_absolutely() -> None:
    ref = np.zeros((2, 2))
    row = gate("b", "f32", "cpu", "text", ref, np.zeros((2, 2)), ["a", "b"], threshold=0.9)
    assert row.reason is None  # no norm difference: both 0
    row = gate("b", "f32", "cpu", "text", ref, np.eye(2), ["a", "b"], threshold=0.9)
    assert row.reason["code"] == "parity_norm_mismatch"


def test_another_dimension_is_a_failure_row_with_its_threshold() -> None:
    ref = np.eye(3)
    row = gate("b", "f32", "cuda", "text+image", ref, np.ones((3, 2)), ["a", "b", "c"], thresholds=THRESHOLDS)
    assert (row.passed, row.n, row.threshold, row.worst, row.device) == (False, 3, 0.995, [], "cuda")
    assert row.reason["params"] == {"name": "b", "dim": 2, "reference": 3}
    # another number of vectors is not a dimension mismatch: numpy refuses the row-wise cosine
    with pytest.raises(ValueError):
        gate("b", "f32", "cpu", "text", ref, np.ones((2, 2)), ["a", "b", "c"], threshold=0.9)


def test_finite_or_none() -> None:
    assert _finite_or_none(np.float32(0.5)) == 0.5 and isinstance(_finite_or_none(np.float32(0.5)), float)
    assert _finite_or_none(float("nan")) is None and _finite_or_none(float("-inf")) is None


def test_gate_by_modality_splits_the_records_in_order() -> None:
    ref, vec = at([0.9999, 0.997, 0.9995, 0.990])
    rows = gate_by_modality("b", "f32", "cpu", ref, vec, ["t1", "i1", "t2", "i2"],
                            ["text", "text+image", "text", "text+image"], THRESHOLDS)
    assert [r.modality for r in rows] == ["text", "text+image"]
    text, image = rows
    assert text.passed and text.n == 2 and [w["id"] for w in text.worst] == ["t2", "t1"]
    assert not image.passed and [w["id"] for w in image.worst] == ["i2", "i1"]
    only_image = gate_by_modality("b", "f32", "cpu", ref[:1], vec[:1], ["x"], ["text+image"], THRESHOLDS)
    assert [r.modality for r in only_image] == ["text+image"]
    with pytest.raises(ValueError, match="1 modalities for 2 records"):
        gate_by_modality("b", "f32", "cpu", ref[:2], vec[:2], ["a", "b"], ["text"], THRESHOLDS)
    with pytest.raises(ValueError, match="unknown modality 'audio'"):
        gate_by_modality("b", "f32", "cpu", ref[:2], vec[:2], ["a", "b"], ["text", "audio"], THRESHOLDS)


def test_every_other_modality_name_is_refused_and_the_defaults_are_the_articles() -> None:
    assert threshold_for("text") == 0.999 and threshold_for("text+image") == 0.995
    for name in ("video", "zzz", "text+video", "TEXT"):
        with pytest.raises(ValueError, match="unknown modality"):
            threshold_for(name)
    ref, vec = at([1.0, 1.0])
    with pytest.raises(ValueError, match="unknown modality 'audio'"):  # the first unknown name, sorted
        gate_by_modality("b", "f32", "cpu", ref, vec, ["a", "b"], ["video", "audio"], THRESHOLDS)


def test_more_ids_than_vectors_is_refused() -> None:
    ref, vec = at([1.0, 1.0])
    with pytest.raises(ValueError, match="3 ids for 2 reference vectors"):
        gate("b", "f32", "cpu", "text", ref, vec, ["a", "b", "c"], threshold=0.9)


def test_a_large_set_passes() -> None:
    # 300 rows: lengths above CPython's small-int cache must still compare equal by value
    ref = np.tile([1.0, 0.0], (300, 1))
    row = gate("b", "f32", "cpu", "text", ref, ref.copy(), [str(i) for i in range(300)], threshold=0.999)
    assert row.passed and row.n == 300


def test_a_norm_off_by_exactly_the_tolerance_passes() -> None:
    ref = np.array([[100.0, 0.0], [100.0, 0.0]])  # 0.01 * 100 is exactly 1.0 in floating point
    row = gate("b", "f32", "cpu", "text", ref, ref + [[1.0, 0.0]], ["a", "b"], threshold=0.999)
    assert row.reason is None and row.passed


def test_the_norm_tolerance_is_relative_below_one_too() -> None:
    ref = np.eye(2) * 0.5  # median norm 0.5: the tolerance is 0.005, not 0.01
    row = gate("b", "f32", "cpu", "text", ref, ref * 1.015, ["a", "b"], threshold=0.999)
    assert row.reason["code"] == "parity_norm_mismatch"
    assert gate("b", "f32", "cpu", "text", ref, ref * 1.008, ["a", "b"], threshold=0.999).passed


def test_the_dimension_cause_names_the_dimensions_not_the_counts() -> None:
    ref = np.ones((4, 3))
    row = gate("b", "f32", "cpu", "text", ref, np.ones((4, 2)), list("abcd"), threshold=0.9)
    assert row.reason["params"] == {"name": "b", "dim": 2, "reference": 3}


def test_the_threshold_is_inclusive_on_an_exact_cosine() -> None:
    ref, vec = np.array([[5.0, 0.0]]), np.array([[3.0, 4.0]])  # cosine 15 / 25 = 0.6 exactly, same norm
    assert gate("b", "f32", "cpu", "text", ref, vec, ["a"], threshold=0.6).passed is True


def test_a_modality_read_from_json_is_compared_by_value() -> None:
    text, image = json.loads('["text", "text+image"]')  # new string objects, not the module's constants
    assert threshold_for(text) == 0.999 and threshold_for(image) == 0.995


@pytest.mark.parametrize(("ref_shape", "vec_shape"), [((2,), (2, 3)), ((2, 3, 4), (2, 4)), ((2, 3), (2, 3, 1)),
                                                      ((2, 3), (3, 2)), ((3, 2), (2, 3)), ((2, 3), (2,)),
                                                      ((2, 3), (2, 4, 1))])
def test_other_array_shapes_are_a_callers_error(ref_shape: tuple, vec_shape: tuple) -> None:
    ids = [str(i) for i in range(ref_shape[0])]
    with pytest.raises(ValueError):
        gate("b", "f32", "cpu", "text", np.ones(ref_shape), np.ones(vec_shape), ids, threshold=0.9)


def test_a_large_set_of_another_dimension_is_a_failure_row() -> None:
    row = gate("b", "f32", "cpu", "text", np.ones((300, 3)), np.ones((300, 2)), [str(i) for i in range(300)],
               threshold=0.9)
    assert row.passed is False and row.reason["code"] == "parity_dimension_mismatch"


def test_more_modalities_than_records_is_refused() -> None:
    ref, vec = at([1.0, 1.0])
    with pytest.raises(ValueError, match="3 modalities for 2 records"):
        gate_by_modality("b", "f32", "cpu", ref, vec, ["a", "b"], ["text"] * 3, THRESHOLDS)


def test_model_sized_vectors_pass_and_a_wider_answer_is_a_failure_row() -> None:
    ref = np.tile(np.eye(384)[0], (3, 1))  # 384 dimensions: above CPython's small-int cache
    assert gate("b", "f32", "cpu", "text", ref, ref.copy(), ["a", "b", "c"], threshold=0.999).passed
    row = gate("b", "f32", "cpu", "text", np.ones((3, 2)), np.ones((3, 4)), ["a", "b", "c"], threshold=0.9)
    assert row.reason["params"] == {"name": "b", "dim": 4, "reference": 2}


def test_a_broken_vector_is_listed_before_a_negative_cosine() -> None:
    ref = np.array([[1.0, 0.0], [1.0, 0.0]])
    vec = np.array([[-1.0, 0.0], [np.nan, 0.0]])
    row = gate("b", "f32", "cpu", "text", ref, vec, ["neg", "nan"], threshold=0.1)
    assert [w["id"] for w in row.worst] == ["nan", "neg"]
    # a NaN norm is no norm difference: the cosine fails it, and says so (the finite one below the threshold)
    assert row.reason["code"] == "parity_cosine_below" and row.non_finite == 1
    assert row.reason["params"] == {"name": "b", "cosine": "-1.0000", "worst": "neg", "below": 1, "n": 2,
                                    "threshold": "0.1"}


def test_many_records_split_by_modality() -> None:
    ref = np.tile([1.0, 0.0], (300, 1))
    rows = gate_by_modality("b", "f32", "cpu", ref, ref.copy(), [str(i) for i in range(300)], ["text"] * 300,
                            THRESHOLDS)
    assert [(r.modality, r.n, r.passed) for r in rows] == [("text", 300, True)]


def test_a_zero_reference_keeps_a_tolerance_floor() -> None:
    # the 1e-12 floor: against a zero reference, rounding noise of 1e-15 is no norm difference
    ref = np.zeros((2, 2))
    row = gate("b", "f32", "cpu", "text", ref, np.eye(2) * 1e-15, ["a", "b"], threshold=-1.0)
    assert row.reason is None
