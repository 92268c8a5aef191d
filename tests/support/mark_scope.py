"""Which test files a `-m` expression can select nothing from (issue 61): tests/conftest.py's
``pytest_ignore_collect`` leaves them uncollected, so no pytest-xdist worker imports a module only to deselect all of
its tests."""

from __future__ import annotations

import functools
import itertools
import re

from slow_tests import SLOW

# Folders and files whose every test carries one mark (tests/conftest.py's collection hook adds it), so that a -m expression no test
# with that mark can satisfy has nothing to run there. Not collecting them spares each pytest-xdist worker of the
# unit pass (`-m "not e2e and not slow"`) importing their modules only to deselect all of their tests: ray through
# tests/e2e/test_open_loop_ray_e2e.py, torch and transformers through the slow diagnosis and zoo files; collection
# took 13.4 -> ~10 user CPU-s a worker (docs/testing.md, issue 61).
E2E_FOLDER = "tests/e2e/"


def whole_mark(relative: str) -> str | None:
    if relative == E2E_FOLDER.rstrip("/") or relative.startswith(E2E_FOLDER):
        return "e2e"
    return "slow" if relative in SLOW else None  # a whole module's entry (a test's id has "::")


@functools.cache
def can_select(markexpr: str, mark: str) -> bool:
    """Whether `-m markexpr` selects some test that carries `mark`, whatever its other marks: the expression is
    evaluated with `mark` on for every assignment of the other names it contains. An expression with arguments
    (`name(key=value)`) or more than 10 names is assumed to select one (collected as before)."""
    if not markexpr.strip() or any(name not in ("and", "or", "not")
                                   for name in re.findall(r"([\w:+\-.\[\]\\/]+)\s*\(", markexpr)):
        return True
    from _pytest.mark.expression import Expression  # what -m itself compiles with (pytest has no public name)

    names = sorted(set(re.findall(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+", markexpr)) - {"and", "or", "not", mark})
    if len(names) > 10:
        return True
    expression = Expression.compile(markexpr)
    for bits in itertools.product((False, True), repeat=len(names)):
        on = {mark} | {name for name, bit in zip(names, bits) if bit}
        if expression.evaluate(lambda name, /, **kwargs: name in on):
            return True
    return False
