"""The `slow` list (tests/support/slow_tests.py) names tests that exist: a renamed file or test would otherwise drop back
into the unit pass, or out of every pass's count, without a word."""

from __future__ import annotations

import ast
from pathlib import Path

from slow_tests import ALONE, SLOW

REPO = Path(__file__).resolve().parents[2]


def test_every_slow_entry_names_an_existing_file_or_test() -> None:
    missing = []
    for key, why in SLOW.items():
        path, _, name = key.partition("::")
        if not (REPO / path).is_file():
            missing.append(key)
            continue
        if name:
            tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
            if name not in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}:
                missing.append(key)
        assert why, key
    assert missing == []


def test_every_test_run_alone_is_a_slow_one() -> None:
    assert ALONE <= set(SLOW)
