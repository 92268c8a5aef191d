"""The unit pass's memo of pure, deterministic computations (tests/conftest.py's figures, upgrades, decide(),
latency bootstraps and ranking verdicts, typed_summary.decisions_of): each distinct input computed once per test
process, a copy handed out. A test that uses `monkeypatch` may have changed what they compute, so while it runs
(tests/conftest.py sets FRESH) it always gets a fresh computation. tests/report/test_figures_memo.py checks, with the
real functions, that they are deterministic."""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

# (kind, key) -> the result pickled (each copy one pickle.loads: an upgraded complete summary 1.7 ms against 9.9 ms
# for copy.deepcopy), or (result,) where it does not pickle (then deep-copied)
MEMO: dict[tuple[Any, ...], bytes | tuple[Any]] = {}
FRESH = {"now": False}


def memoised(kind: str, key: Any, compute: Callable[[], Any]) -> Any:
    if FRESH["now"]:
        return compute()
    full = (kind, key)
    if full not in MEMO:
        result = compute()
        try:
            MEMO[full] = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            MEMO[full] = (result,)
    stored = MEMO[full]
    return pickle.loads(stored) if isinstance(stored, bytes) else copy.deepcopy(stored[0])
