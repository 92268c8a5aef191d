"""The unit pass's memo of pure, deterministic computations (tests/conftest.py's figures, upgrades, decide() and
latency bootstraps, typed_summary.decisions_of): each distinct input computed once per test process, a copy handed
out. A test that
uses `monkeypatch` may have changed what they compute, so while it runs (tests/conftest.py sets FRESH) it always gets
a fresh computation. tests/report/test_figures_memo.py checks, with the real functions, that they are deterministic."""

from __future__ import annotations

import copy
from typing import Any, Callable

MEMO: dict[tuple[Any, ...], Any] = {}
FRESH = {"now": False}


def memoised(kind: str, key: Any, compute: Callable[[], Any]) -> Any:
    if FRESH["now"]:
        return compute()
    full = (kind, key)
    if full not in MEMO:
        MEMO[full] = compute()
    return copy.deepcopy(MEMO[full])
