"""Reviewable notebooks: a tagged parameters cell, a paired percent-format .py in sync, no outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
BIN = Path(sys.executable).parent


def test_the_five_steps_are_there() -> None:
    assert [p.stem for p in NOTEBOOKS] == ["01_legacy_capture", "02_swap_deploy", "03_vector_contract_diff",
                                           "04_latency", "05_parity"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_tagged_parameters_cell_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert "experiment_dir" in tagged[0].source and "attempt" in tagged[0].source
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} is committed with outputs"
            assert cell.execution_count is None, f"{path.name} is committed with execution counts"
    assert notebook.metadata["kernelspec"]["name"] == "embedswap"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_paired_py_is_in_sync(path: Path) -> None:
    paired = path.with_suffix(".py")
    assert paired.exists(), f"{paired.name} missing: run `jupytext --sync {path}`"
    from_py = jupytext.read(paired)
    from_ipynb = nbformat.read(path, as_version=4)
    assert [(c.cell_type, c.source) for c in from_py.cells] == [(c.cell_type, c.source) for c in from_ipynb.cells]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_lists_every_parameter_with_help(path: Path) -> None:
    out = subprocess.run([str(BIN / "papermill"), "--help-notebook", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "experiment_dir: str" in out.stdout and "attempt: str" in out.stdout
    assert "experiment folder holding experiment.yaml" in out.stdout
    assert "Unable to parse" not in out.stderr
