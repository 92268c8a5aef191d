"""Property-based tests (hypothesis) of the statistics and verdict functions (issue 23): percentiles and intervals on
arbitrary samples, cosine and norm verdicts under scaling and permutation, redaction of secrets in arbitrary text."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from embedswap import redact as redact_module
from embedswap.analysis.intervals import Requests, estimate, repeats_overlap, direction
from embedswap.answers.classify import NORM_TOLERANCE, classify, cosine
from embedswap.measure.load import percentile
from embedswap.stats.vectors import UNIT_NORM_TOLERANCE, norms, rowwise_cosine

# fewer examples under mutation testing (scripts/mutation.sh), where the suite runs once per mutant
SETTINGS = settings(max_examples=int(os.environ.get("EMBEDSWAP_HYPOTHESIS_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
latency = st.floats(min_value=0.01, max_value=1e5, allow_nan=False, allow_infinity=False)
samples = st.lists(latency, min_size=1, max_size=80)
coord = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_infinity=False)


def vector(dim: int = 8) -> st.SearchStrategy[np.ndarray]:
    return st.lists(coord, min_size=dim, max_size=dim).map(np.asarray).filter(lambda v: np.linalg.norm(v) > 1e-3)


# --- percentiles and intervals ---------------------------------------------------------------------------------------
@SETTINGS
@given(samples, st.randoms(use_true_random=False))
def test_percentiles_are_ordered_bounded_and_order_free(values: list[float], rnd) -> None:
    p50, p90, p99 = (percentile(values, q) for q in (50, 90, 99))
    assert min(values) <= p50 <= p90 <= p99 <= max(values)
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert percentile(shuffled, 99) == p99


@SETTINGS
@given(samples, st.floats(min_value=0.01, max_value=100))
def test_percentiles_scale_with_the_sample(values: list[float], factor: float) -> None:
    assert percentile([v * factor for v in values], 90) == pytest.approx(percentile(values, 90) * factor, rel=1e-9)


def test_percentile_of_nothing_and_of_one() -> None:
    assert percentile([], 50) is None
    assert percentile([7.5], 99) == 7.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5  # numpy "linear": halfway between the middle two


@st.composite
def point(draw) -> Requests:
    repeats = draw(st.integers(1, 3))
    latencies = [draw(st.lists(latency, min_size=1, max_size=60)) for _ in range(repeats)]
    docs = [[draw(st.sampled_from([0, 8, 8, 8])) for _ in lat] for lat in latencies]
    walls = [draw(st.floats(min_value=0.1, max_value=100)) for _ in latencies]
    return Requests(latencies, docs, walls)


@SETTINGS
@given(point(), st.integers(0, 2**31))
def test_intervals_hold_their_value_inside_the_sample(requests: Requests, seed: int) -> None:
    figures, _ = estimate(requests, seed, resamples=200)
    ok = requests.pooled_ok()
    assert figures.n == len(ok)
    for key in ("p50", "p90", "p99"):
        f = getattr(figures, key)
        if not len(ok):
            assert f.value is None and f.estimable is False
            continue
        assert ok.min() <= f.value <= ok.max()
        if f.estimable:
            assert ok.min() <= f.low <= f.high <= ok.max()
        else:
            assert f.low is None and f.high is None and (f.n < f.n_min)
    if len(ok):
        assert figures.p50.value <= figures.p90.value <= figures.p99.value


@SETTINGS
@given(point(), st.integers(0, 2**31), st.floats(min_value=0.1, max_value=10))
def test_intervals_scale_with_the_latencies(requests: Requests, seed: int, factor: float) -> None:
    assume(requests.n_ok)
    scaled = Requests([lat * factor for lat in requests.latency], requests.docs, requests.wall)
    a, _ = estimate(requests, seed, resamples=200)
    b, _ = estimate(scaled, seed, resamples=200)
    for key in ("p50", "p99"):
        before, after = getattr(a, key), getattr(b, key)
        assert after.value == pytest.approx(before.value * factor, rel=1e-9)
        if before.estimable:
            assert after.low == pytest.approx(before.low * factor, rel=1e-9)
            assert after.high == pytest.approx(before.high * factor, rel=1e-9)


ratios = st.floats(min_value=0.01, max_value=100)


@SETTINGS
@given(ratios, ratios, st.booleans())
def test_a_ratio_verdict_flips_with_the_ratio(x: float, y: float, lower_is_better: bool) -> None:
    low, high = min(x, y), max(x, y)
    said = direction(low, high, lower_is_better)
    if low <= 1 <= high:
        assert said == "no_difference"
    else:
        assert said in ("faster", "slower")
        assert (said == "slower") == ((low > 1) == lower_is_better)
        # reference / candidate instead: the reciprocal interval says the opposite
        assert direction(1 / high, 1 / low, lower_is_better) == {"faster": "slower", "slower": "faster"}[said]


@SETTINGS
@given(st.lists(ratios, max_size=4), st.lists(ratios, max_size=4))
def test_overlap_is_symmetric(a: list[float], b: list[float]) -> None:
    assert repeats_overlap(a, b) == repeats_overlap(b, a)
    if len(a) >= 2 and len(b) >= 2:
        assert repeats_overlap(a, b) == (max(min(a), min(b)) <= min(max(a), max(b)))
    else:
        assert repeats_overlap(a, b) is None


# --- cosine and norm verdicts ----------------------------------------------------------------------------------------
@SETTINGS
@given(vector(), vector(), st.floats(min_value=1e-3, max_value=1e3), st.permutations(range(8)))
def test_cosine_ignores_scale_and_a_shared_permutation(a, b, factor: float, order) -> None:
    c = cosine(a, b)
    assert -1 - 1e-9 <= c <= 1 + 1e-9
    assert cosine(a, b * factor) == pytest.approx(c, abs=1e-9)
    assert cosine(a, -b) == pytest.approx(-c, abs=1e-9)
    assert cosine(a[list(order)], b[list(order)]) == pytest.approx(c, abs=1e-9)
    assert cosine(a, a * factor) == pytest.approx(1.0, abs=1e-9)
    assert np.isnan(cosine(a, b[:-1]))  # another length: no cosine


def answer(vec: np.ndarray, **over) -> dict:
    return {"status": 200, "error": None, "encoding": "float", "dim": len(vec), "n_vectors": 1, "prompt_tokens": 5,
            "vector": vec.tolist(), **over}


@SETTINGS
@given(vector(), st.floats(min_value=1e-3, max_value=1e3))
def test_a_rescaled_answer_points_the_same_way_but_differs_in_length(a, factor: float) -> None:
    """Cosine is blind to scale; the verdict is not (issue 16): a dot-product index ranks rescaled vectors
    differently, so any factor beyond the norm tolerance is a length difference, never 'same'."""
    assume(abs(abs(factor - 1) - NORM_TOLERANCE) > 1e-9)  # not on the tolerance's edge (rounding decides)
    got = classify(answer(a), answer(a * factor))
    if abs(factor - 1) <= NORM_TOLERANCE:
        assert got.verdict == "same" and got.aspects == []
    else:
        assert got.verdict == "silent-divergence"
        assert got.aspects == ["length"]  # the direction is the same
        assert got.cosine == pytest.approx(1.0, abs=1e-9)


@SETTINGS
@given(vector(), st.permutations(range(8)))
def test_a_permuted_answer_diverges_silently_unless_it_points_the_same_way(a, order) -> None:
    permuted = a[list(order)]
    got = classify(answer(a), answer(permuted))
    expected = "same" if cosine(a, permuted) >= 0.999 else "silent-divergence"
    assert got.verdict == expected
    assert got.cosine == pytest.approx(cosine(a, permuted))


@SETTINGS
@given(st.integers(500, 599), st.sampled_from([200, 400, 404, 422]))
def test_a_server_error_against_an_answer_is_a_retry_hazard(error: int, other: int) -> None:
    vec = np.ones(4)
    assert classify(answer(vec, status=other), answer(vec, status=error)).verdict == "retry-hazard"
    assert classify(answer(vec, status=error), answer(vec, status=other)).verdict == "retry-hazard"


@SETTINGS
@given(st.lists(vector(), min_size=1, max_size=6), st.floats(min_value=0.1, max_value=10), st.randoms())
def test_norms_and_rowwise_cosine_under_scaling_and_row_order(rows, factor: float, rnd) -> None:
    assume(abs(abs(factor - 1) - UNIT_NORM_TOLERANCE) > 1e-9)  # not on the tolerance's edge (rounding decides)
    a = np.stack(rows)
    unit = a / np.linalg.norm(a, axis=1, keepdims=True)
    assert norms(unit)["not_unit_length"] == []
    scaled = norms(unit * factor)
    assert scaled["median"] == pytest.approx(factor)
    assert scaled["not_unit_length"] == ([] if abs(factor - 1) <= UNIT_NORM_TOLERANCE else list(range(len(rows))))
    b = np.roll(unit, 1, axis=1)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    np.testing.assert_allclose(rowwise_cosine(unit[order], b[order]), rowwise_cosine(unit, b)[order], atol=1e-12)
    np.testing.assert_allclose(rowwise_cosine(unit, unit * factor), 1.0, atol=1e-9)


# --- redaction ------------------------------------------------------------------------------------------------------
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
alnum = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=30, max_size=40)


@SETTINGS
@given(text, text, st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=8, max_size=40))
def test_a_registered_secret_never_survives(before: str, after: str, secret: str) -> None:
    assume(secret not in before + after and redact_module.REDACTED not in secret)
    redact_module._registered.add(secret)
    try:
        out = redact_module.redact(before + secret + after)
        assert secret not in out
        assert redact_module.redact(out) == out  # idempotent: redacting twice changes nothing more
    finally:
        redact_module._registered.discard(secret)


@SETTINGS
@given(text, text, alnum, st.sampled_from(["hf_{}", "sk-{}", "Bearer {}", "Authorization: Bearer {}",
                                           "--api-key {}", '{{"api_key": "{}"}}', "OPENAI_API_KEY={}",
                                           "https://user:{}@host/", "?token={}"]))
def test_credentials_by_their_shape_never_survive(before: str, after: str, token: str, shape: str) -> None:
    assume(token not in before + after)
    out = redact_module.redact(f"{before} {shape.format(token)} {after}")
    assert token not in out
    assert redact_module.REDACTED in out
