"""The same probe sent several times (measure.repeats): answers that differ among identical requests are their own
verdict, ``nondeterministic``, told apart from a difference every repeat shows."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.answers.classify import classify
from embedswap.answers.repeats import representative, spread

VECTOR = list(np.linspace(-1, 1, 384) / np.linalg.norm(np.linspace(-1, 1, 384)))


def answer(vector: list[float] | None = None, status: int = 200, error: str | None = None) -> dict[str, Any]:
    vector = VECTOR if vector is None and status == 200 and error is None else vector
    return {"status": status, "error": error, "dim": None if vector is None else len(vector),
            "n_vectors": None if vector is None else 1, "prompt_tokens": 7, "encoding": "float", "vector": vector}


def probe(*answers: dict[str, Any]) -> dict[str, Any]:
    first, *rest = answers
    return {"probe": "plain", **first, **({"repeats": list(rest)} if rest else {})}


def test_one_short_answer_among_three_is_intermittent_not_a_dimension_difference() -> None:
    legacy = probe(answer(), answer(), answer())
    candidate = probe(answer(VECTOR[:-1]), answer(), answer())  # the first one landed on a 383-value answer
    verdict = classify(legacy, candidate)
    assert verdict.verdict == "nondeterministic" and verdict.aspects == ["repeats"]
    assert verdict.reason["params"] == {"side": "candidate", "differing": 1, "sent": 3, "repeat_cosine": "1.0000",
                                        "kinds": "none"}
    assert "dimension" not in verdict.detail and "1 of 3 identical requests" in verdict.detail
    # sent once, the same answer reads as a systematic difference (what the kit said before repeats)
    once = classify(probe(answer()), probe(answer(VECTOR[:-1])))
    assert once.verdict == "silent-divergence" and "dimension" in once.aspects


def test_a_difference_every_repeat_shows_is_systematic() -> None:
    turned = list(-np.asarray(VECTOR))
    verdict = classify(probe(answer(), answer(), answer()), probe(answer(turned), answer(turned), answer(turned)))
    assert verdict.verdict == "silent-divergence" and "direction" in verdict.aspects
    found = spread(probe(answer(turned), answer(turned), answer(turned)), 0.999)
    assert found is not None and (found.sent, found.differing, found.rate) == (3, 0, 0.0)


def test_the_rate_kinds_and_cosine_between_repeats() -> None:
    noisy = list(np.asarray(VECTOR) + np.random.default_rng(0).normal(scale=0.01, size=384))
    record = probe(answer(), answer(error="non-finite values (NaN/inf) in vectors", vector=None),
                   answer(noisy), answer(), answer(status=0, error="RemoteProtocolError: peer closed connection without "
                                                                   "sending complete message body (incomplete chunked read)"))
    found = spread(record, 0.999)
    assert found is not None and found.sent == 5 and found.differing == 3 and abs(found.rate - 0.6) < 1e-9
    assert found.kinds == {"non_finite": 1, "cut_body": 1}
    assert found.cosine_min is not None and 0.9 < found.cosine_min < 0.999
    verdict = classify(probe(answer()), record)
    assert verdict.verdict == "nondeterministic" and verdict.cosine == found.cosine_min
    assert "non_finite 1, cut_body 1" in verdict.detail


def test_the_legacy_side_is_named_when_it_is_the_one_that_varies() -> None:
    verdict = classify(probe(answer(), answer(status=0, error="ReadTimeout: timed out")), probe(answer(), answer()))
    assert verdict.verdict == "nondeterministic" and verdict.reason["params"]["side"] == "legacy"


def test_the_comparison_reads_the_most_common_answer() -> None:
    record = probe(answer(VECTOR[:-1]), answer(), answer())
    chosen = representative(record, 0.999)
    assert chosen["dim"] == 384 and chosen["probe"] == "plain"
    assert representative(probe(answer()), 0.999)["dim"] == 384  # sent once: the record itself
    assert spread(probe(answer()), 0.999) is None


def test_how_many_times_each_probe_is_sent() -> None:
    from embedswap.config.sections import ContractConfig
    from embedswap.measure.contract import catalogue_specs
    from embedswap.answers.repeats import probe_times

    specs = {spec.name: spec for spec in catalogue_specs()}
    default, once = ContractConfig(), ContractConfig(repeats=1)
    assert probe_times(specs["plain"], default) == 3 and probe_times(specs["plain"], once) == 1
    assert probe_times(specs["large_batch"], default) == 1 and probe_times(specs["over_long_input"], default) == 1
    # the same-text-twice probe is sent twice whatever the contract says: a second identical request answered
    # otherwise (a prefix cache meeting last-token pooling) is its verdict
    assert probe_times(specs["same_text_twice"], once) == 2 and probe_times(specs["same_text_twice"], default) == 2
    twice = probe(answer(), answer(list(np.asarray(VECTOR) * 0.5 + np.roll(VECTOR, 1))))
    assert classify(probe(answer(), answer()), twice).verdict == "nondeterministic"
