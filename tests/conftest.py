"""Fixtures shared by the whole suite: the summary fixtures of tests/fixtures, the tiny model zoo (built once per
session) and a free port. The helper modules (realkit, fakeservers, ports, synthetic_experiment, wordpiece) live in
tests/support, on the path through ``pythonpath`` in pyproject.toml."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mark_scope import E2E_FOLDER, can_select, whole_mark
from memo import FRESH, memoised
from slow_tests import ALONE, SLOW
from synthetic_experiment import load_summary

# make test's second pass: each file's seconds (setup + call + teardown) in the last measured run, for the order
# in which the scheduler hands out files (`benchmarks/suite_time.py --write-durations` rewrites it from e2e.xml)
DURATIONS = Path(__file__).resolve().parent / "support" / "durations.json"
# the unit pass's (`--dist loadfile`): each file's seconds in the last measured unit pass, from unit.xml (the same
# command writes it)
UNIT_DURATIONS = Path(__file__).resolve().parent / "support" / "unit_durations.json"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the servers, kernels and CLIs the tests start write their bytecode, as under make (the Makefile's comment on
# PYTHONDONTWRITEBYTECODE): without it each of them compiled torch's imports from source again, 7-9 s a process
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

@pytest.hookimpl(tryfirst=True)  # before the -m deselection reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::")[0]
        if module in SLOW or item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
        if module in ALONE:
            item.add_marker(pytest.mark.quiet_host)
        if module.startswith(E2E_FOLDER):  # each file's pytestmark says so too; here it holds by construction
            item.add_marker(pytest.mark.e2e)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    try:
        relative = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    mark = whole_mark(relative)
    if mark is not None and not can_select(config.option.markexpr, mark):
        return True
    return None  # the other hooks (and pytest's own --ignore) decide


@functools.cache
def _file_group(module: str) -> str:
    """The `xdist_group(name="...")` a test file names in its pytestmark (files that share a server:
    tests/e2e/conftest.py), else the file itself."""
    path = Path(__file__).resolve().parent.parent / module  # node ids are relative to the repository root
    found = re.search(r'xdist_group\(name="([^"]+)"\)', path.read_text(encoding="utf-8")) if path.is_file() else None
    return found.group(1) if found else module


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` (make test's second pass) as whole files, files naming one group together: a module- or
    session-scoped fixture starts once. pytest-xdist's own loadgroup reads the group from a suffix it adds to each
    node id, which does not reach the scheduler with this pytest (9.2): tests of one file were run on both workers,
    each starting the file's servers (measured: the demo and the qwen3 runs twice in one pass).
    `--dist loadfile` (the unit pass) the same way, its files longest first from UNIT_DURATIONS."""
    dist = config.getvalue("dist")
    if dist not in ("loadgroup", "loadfile"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    table = DURATIONS if dist == "loadgroup" else UNIT_DURATIONS
    expected: dict[str, float] = {}  # a group's or file's seconds in the last measured pass
    for module, seconds in json.loads(table.read_text(encoding="utf-8")).items():
        expected[_file_group(module)] = expected.get(_file_group(module), 0.0) + float(seconds)

    class FileGroups(LoadScopeScheduling):  # type: ignore[misc]
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _file_group(nodeid.split("::")[0])

        def _assign_work_unit(self, node: Any) -> None:
            # Longest first (LPT): xdist orders the units by their number of tests, which left the one-test engine
            # A/As (~150 s each) for the end, one worker running them while the other had nothing left (in the
            # unit pass: few-test files of renders). A unit the table does not know (a new file) keeps its place
            # after the known ones (a stable sort).
            if not self.ordered:
                units = sorted(self.workqueue.items(), key=lambda unit: -expected.get(unit[0], 0.0))
                self.workqueue.clear()
                self.workqueue.update(units)
                self.ordered = True
            super()._assign_work_unit(node)

    return FileGroups(config, log)


@pytest.fixture(scope="session", autouse=True)
def reference_cache_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Step 05's reference cache (embedswap.parity.reference_cache; step 03's truth pass too) in a folder of this
    session, shared by its pytest-xdist workers (their base temps are folders of the session's): the first run of a
    model on a workload computes its witnesses, the later ones read them, and no session reads what an earlier one
    left in the user's ~/.cache. Set in the environment, so the `embedswap run` subprocesses and their papermill
    kernels inherit it.
    A value already set (``off``, or a folder) is the caller's and kept."""
    from embedswap.parity.reference_cache import SWITCH

    if os.environ.get(SWITCH):
        yield os.environ[SWITCH]
        return
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "reference-cache"
    os.environ[SWITCH] = str(folder)
    yield str(folder)
    os.environ.pop(SWITCH, None)


@pytest.fixture
def complete() -> dict[str, Any]:
    """The synthetic complete summary (tests/fixtures/summary_complete.json) as stored: schema version 1."""
    return load_summary("complete")


@pytest.fixture
def complete_upgraded(complete: dict[str, Any]) -> dict[str, Any]:
    """The complete summary upgraded to the current schema (its decisions computed), as the report reads it."""
    from embedswap.analysis.upgrade import upgrade_summary

    return upgrade_summary(complete)


@pytest.fixture
def smoke() -> dict[str, Any]:
    """The real partial summary (tests/fixtures/summary_smoke.json: the legacy server missing) as stored."""
    return load_summary("smoke")


@pytest.fixture(scope="session")
def tiny_zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny BERT of embedswap.zoo.bert.ZOO, built once per session: name -> model folder. Read-only: a test
    that changes a model copies its folder first."""
    from embedswap.zoo.bert import ZOO, build_tiny_bert

    root = tmp_path_factory.mktemp("zoo")
    return {name: build_tiny_bert(root / name, variant) for name, variant in ZOO.items()}


# Pure functions the unit tests call hundreds of times on a few dozen distinct inputs (docs/testing.md: 371 upgrades
# of 61 distinct summaries in tests/report; ~0.5 s each, mostly decide()'s bootstraps; matplotlib ~1.9 s per
# language of a render): each distinct input is computed once per test process and a copy handed out (memo.py; the
# support module typed_summary's decisions_of too). All are deterministic (tests/report/test_figures_memo.py checks
# it with the real functions). A test that uses `monkeypatch` may have changed what they compute, so it always gets
# a fresh computation.
@pytest.fixture(autouse=True)
def _memo_unless_monkeypatched(request: pytest.FixtureRequest) -> Any:
    FRESH["now"] = "monkeypatch" in request.fixturenames
    yield
    FRESH["now"] = False


@pytest.fixture(scope="session", autouse=True)
def figures_drawn_once() -> Any:
    """``report.publish.draw_figures`` once per distinct (summary, language); yields the real function."""
    from embedswap.report import publish

    original = publish.draw_figures

    def draw(summary: Any, lang: str = "en") -> dict[str, bytes]:
        return memoised("figures", (summary.model_dump_json(), lang), lambda: original(summary, lang))

    publish.draw_figures = draw
    yield original
    publish.draw_figures = original


@pytest.fixture(scope="session", autouse=True)
def summaries_upgraded_once() -> Any:
    """``analysis.upgrade.upgrade_summary`` (which decides) once per distinct summary.json; yields the real one."""
    from embedswap.analysis import upgrade

    original = upgrade.upgrade_summary

    def upgraded(summary: Any) -> Any:
        try:
            key = json.dumps(summary, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError):  # not JSON (the function's own error path): nothing to remember
            return original(summary)
        return memoised("upgrade", key, lambda: original(summary))

    upgrade.upgrade_summary = upgraded
    yield original
    upgrade.upgrade_summary = original


def _state_key(*values: Any) -> bytes | None:
    """The digest of ``values`` pickled: objects (typed summaries, arrays) with equal pickles have equal state,
    so a deterministic function gives them one result (a pickle that differs only costs a computation); NaN and
    None stay apart, which a JSON dump would merge. None: not picklable, nothing to remember."""
    try:
        return hashlib.sha256(pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)).digest()
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def _memoised_in_place(owner: Any, name: str, key_of: Any, every_binding: bool = False) -> Iterator[Any]:
    """``owner.name`` (a pure function) answered from the memo once per distinct ``key_of(*args, **kwargs)``
    (:func:`_state_key` of it: None, not picklable, computes afresh) while the session lasts; yields the real one.
    ``every_binding``: every loaded module that bound the name (``from ... import name``) is pointed at it too."""
    original = getattr(owner, name)

    def remembered(*args: Any, **kwargs: Any) -> Any:
        key = _state_key(*key_of(*args, **kwargs))
        if key is None:
            return original(*args, **kwargs)
        return memoised(name, key, lambda: original(*args, **kwargs))

    bound = ([module for module in list(sys.modules.values())
              if getattr(module, "__dict__", {}).get(name) is original] if every_binding else [owner])
    for module in bound:
        setattr(module, name, remembered)
    yield original
    for module in bound:
        setattr(module, name, original)


@pytest.fixture(scope="session", autouse=True)
def decided_once() -> Any:
    """``analysis.decide`` once per distinct (typed summary, config); yields the real one. The upgrade and
    decisions_of memos key on the summary.json dict, and many dicts validate to a summary decided before (one with
    its decisions stored, upgraded again; the index and story builders' summaries): in the unit pass 98 of 197
    decide() calls decided such a summary again, 45 of their 70 CPU-s (issue 61). Every module that bound the name
    (`from embedswap.analysis import decide`: the upgrade, the support builders, test modules) is pointed at it."""
    import embedswap.analysis as analysis

    def key_of(summary: Any, config: Any = None) -> tuple[Any, ...]:
        return type(summary).__qualname__, summary, config

    yield from _memoised_in_place(analysis, "decide", key_of, every_binding=True)


@pytest.fixture(scope="session", autouse=True)
def latency_estimated_once() -> Any:
    """``analysis.intervals.estimate`` (a latency point's bootstrap intervals and replicates) once per distinct
    point: its requests' arrays and walls, seed, resamples and block; yields the real one. Distinct summaries mostly
    carry the same latency points (a fixture with another language, verdict or index): 4,322 calls on 59 distinct
    points, 30 CPU-s, in the unit pass before this memo and decide()'s."""
    from embedswap.analysis import latency_intervals

    def key_of(requests: Any, seed: int, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return requests.latency, requests.docs, requests.wall, seed, args, sorted(kwargs.items())

    yield from _memoised_in_place(latency_intervals, "estimate", key_of)


@pytest.fixture(scope="session", autouse=True)
def ranking_variant_decided_once() -> Any:
    """``analysis.ranking_verdict._variant_verdict`` (one variant's paired tests, equivalence verdicts and language
    slices: a pure function of its arguments) once per distinct (candidate entry, variant, legacy run, config,
    question); yields the real one. Summaries that differ elsewhere carry the same ranking: 220 ranking_verdicts()
    calls on 59 distinct rankings, 24 CPU-s, in the unit pass before this memo and decide()'s."""
    from embedswap.analysis import ranking_verdict

    yield from _memoised_in_place(ranking_verdict, "_variant_verdict",
                                  lambda *args, **kwargs: (args, sorted(kwargs.items())))


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on (ports.free_port: 18800-18899, never the same one twice in a session)."""
    from ports import free_port as take

    return take()
