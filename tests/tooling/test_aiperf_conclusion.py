"""benchmarks/aiperf_crosscheck.py: the sentence about the server's own p50 follows from the ratio (issue 23)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "aiperf_crosscheck.py"


@pytest.fixture(scope="module")
def crosscheck():
    spec = importlib.util.spec_from_file_location("aiperf_crosscheck", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("ratio", [1.0, 0.96, 1.04])
def test_a_server_that_ran_alike_is_not_blamed(crosscheck, ratio: float) -> None:
    said = crosscheck.server_conclusion(ratio)
    assert said.startswith("within 5% of 1") and "far from 1" not in said


@pytest.mark.parametrize(("ratio", "slower"), [(1.3, "embedswap's"), (1.06, "embedswap's"), (0.7, "AIPerf's"),
                                               (0.94, "AIPerf's")])
def test_a_server_that_ran_slower_is_named(crosscheck, ratio: float, slower: str) -> None:
    said = crosscheck.server_conclusion(ratio)
    assert said.startswith("far from 1") and f"slower in {slower} run" in said


def test_the_tolerance_is_the_goal(crosscheck) -> None:
    assert crosscheck.server_conclusion(1.08, tolerance=0.1).startswith("within 10% of 1")
    assert crosscheck.server_conclusion(1.08, tolerance=0.05).startswith("far from 1")
