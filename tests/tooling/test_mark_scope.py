"""The files make test's passes leave uncollected (tests/support/mark_scope.py): a pass skips tests/e2e or a whole
slow module only where its `-m` expression can select no test carrying that mark, whatever the test's other marks."""

from __future__ import annotations

import pytest
from mark_scope import can_select, whole_mark


@pytest.mark.parametrize(("markexpr", "mark", "selects"), [
    ("not e2e and not slow", "e2e", False),  # the unit pass: tests/e2e is not collected
    ("not e2e and not slow", "slow", False),  # nor a whole slow module
    ("(e2e or slow) and not quiet_host", "e2e", True),  # the second pass
    ("(e2e or slow) and not quiet_host", "slow", True),
    ("quiet_host", "e2e", True),  # the third pass: an e2e test may be marked quiet_host too
    ("quiet_host", "slow", True),
    ("slow", "e2e", True),  # an e2e test may be marked slow as well
    ("not e2e", "e2e", False),
    ("not e2e", "slow", True),
    ("e2e and not e2e", "e2e", False),
    ("", "e2e", True),  # no -m: everything
    ("timeout(900)", "e2e", True),  # marks with arguments: assumed to select, collected as before
])
def test_an_expression_selects_a_marked_test_unless_no_assignment_of_its_other_names_does(
        markexpr: str, mark: str, selects: bool) -> None:
    assert can_select(markexpr, mark) is selects


def test_the_marked_folders_and_modules() -> None:
    assert whole_mark("tests/e2e") == "e2e" and whole_mark("tests/e2e/test_faults.py") == "e2e"
    assert whole_mark("tests/test_cli.py") == "slow"  # a whole module in slow_tests.SLOW
    # a single test's entry in SLOW leaves the rest of its module to the unit pass
    assert whole_mark("tests/structure/test_imports.py") is None
    assert whole_mark("tests/e2e_helpers.py") is None and whole_mark("tests/report/test_report.py") is None
