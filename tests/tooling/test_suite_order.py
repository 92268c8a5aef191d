"""The order in which make test's second pass and its unit pass hand out their files (tests/conftest.py's scheduler):
longest first, from tests/support/durations.json and unit_durations.json, which `benchmarks/suite_time.py
--write-durations` writes from the passes' junit XML."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLES = [REPO / "tests" / "support" / name for name in ("durations.json", "unit_durations.json")]


def _suite_time():
    spec = importlib.util.spec_from_file_location("suite_time", REPO / "benchmarks" / "suite_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["suite_time"] = module  # its dataclasses look their module up
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", TABLES, ids=lambda path: path.name)
def test_every_file_in_the_table_exists(path: Path) -> None:
    """A renamed or deleted file left in the table would order nothing: the table is rewritten instead."""
    table = json.loads(path.read_text(encoding="utf-8"))
    assert table and all(isinstance(s, (int, float)) and s >= 0 for s in table.values())
    assert [m for m in table if not (REPO / m).is_file()] == []


def test_a_junit_report_becomes_seconds_per_file_longest_first(tmp_path: Path) -> None:
    report = tmp_path / "e2e.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest" time="9">'
        '<testcase classname="tests.e2e.test_a" name="t1" time="1.5"/>'
        '<testcase classname="tests.e2e.test_a" name="t2" time="2.0"/>'
        '<testcase classname="tests.e2e.test_b.TestGroup" name="t3" time="4.25"/>'
        '</testsuite></testsuites>', encoding="utf-8")
    seconds = _suite_time().file_seconds(report)
    assert list(seconds.items()) == [("tests/e2e/test_b.py", 4.2), ("tests/e2e/test_a.py", 3.5)]
