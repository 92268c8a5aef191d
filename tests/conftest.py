"""Fixtures shared by the whole suite: the summary fixtures of tests/fixtures, the tiny model zoo (built once per
session) and a free port. The helper modules (realkit, fakeservers, ports, synthetic_experiment, wordpiece) live in
tests/support, on the path through ``pythonpath`` in pyproject.toml."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from synthetic_experiment import load_summary

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on (ports.free_port: 18800-18899, never the same one twice in a session)."""
    from ports import free_port as take

    return take()
