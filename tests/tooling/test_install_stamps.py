"""The install scripts rebuild an environment exactly when a pin changed: each stamps its venv with the sha256 of
its lock files (the kit's with pyproject.toml), does nothing while the stamp matches, and rebuilds from scratch
when it does not. Run on copies of the real scripts and locks; the "python" that would build the venv is a stand-in
that records its call and fails, so nothing is downloaded."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = {
    "kit": ("scripts/install-kit.sh", ["requirements/kit.lock", "pyproject.toml"], ".installed"),
    "engine": ("scripts/install-engine-cpu.sh", ["requirements/engine-cpu.lock", "requirements/engine-cpu-nodeps.lock"],
               ".embedswap-engine-installed"),
    "infinity": ("scripts/install-infinity.sh", ["requirements/infinity.lock"], ".installed"),
    # layered over .venvs/infinity: either lock changing rebuilds it (issue 54's upgrade pair)
    "infinity-previous": ("scripts/install-infinity-previous.sh",
                          ["requirements/infinity-previous.lock", "requirements/infinity.lock"], ".installed"),
}
VENV_ARGS = {"infinity-previous": ["--without-pip"]}  # a venv without pip: the Infinity environment's pip installs


def _layout(tmp_path: Path, case: str) -> tuple[Path, Path, Path]:
    script, files, stamp_name = CASES[case]
    repo = tmp_path / "repo"
    for relative in [script, "scripts/venv-lib.sh", *files]:  # the scripts source venv-lib.sh
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / relative, repo / relative)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "kept").write_text("an installed environment")
    stamp = "".join(subprocess.run(["sha256sum", f], cwd=repo, capture_output=True, text=True, check=True).stdout
                    for f in files)
    (venv / stamp_name).write_text(stamp)
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'python-called'}\nexit 3\n")
    python.chmod(0o755)
    return repo, venv, python


def _run(repo: Path, case: str, venv: Path, python: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(repo / CASES[case][0]), str(venv)], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": str(python)}, timeout=60)


def _bump_one_pin(lock: Path) -> None:
    """Change the version of the first pinned package (what a pin change in a lock looks like)."""
    lines = lock.read_text().splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if "==" in line and not line.startswith(("#", " ")))
    name, rest = lines[i].split("==", 1)
    lines[i] = f"{name}==0.0.1 {rest.split(' ', 1)[1] if ' ' in rest else chr(10)}"
    lock.write_text("".join(lines))


@pytest.mark.parametrize("case", list(CASES))
def test_an_unchanged_lock_keeps_the_environment(tmp_path: Path, case: str) -> None:
    repo, venv, python = _layout(tmp_path, case)
    result = _run(repo, case, venv, python)
    assert result.returncode == 0 and "is up to date" in result.stdout, result.stdout + result.stderr
    assert (venv / "kept").exists() and not (tmp_path / "python-called").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_one_changed_pin_rebuilds_the_environment_from_scratch(tmp_path: Path, case: str) -> None:
    repo, venv, python = _layout(tmp_path, case)
    lock = repo / CASES[case][1][-1 if case == "engine" else 0]
    before = lock.read_text()
    _bump_one_pin(lock)
    assert lock.read_text() != before
    result = _run(repo, case, venv, python)
    assert "changed, rebuilding it" in result.stdout, result.stdout + result.stderr
    assert (tmp_path / "python-called").read_text().split() == ["-m", "venv", *VENV_ARGS.get(case, []), str(venv)]
    assert result.returncode != 0 and not (venv / "kept").exists()  # the stand-in python failed: no stamp written
    assert not (venv / CASES[case][2]).exists()


def test_a_changed_pyproject_alone_reinstalls_only_the_kit(tmp_path: Path) -> None:
    repo, venv, python = _layout(tmp_path, "kit")
    (venv / "bin").mkdir()
    pip = venv / "bin" / "pip"
    pip.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'pip-called'}\n")
    pip.chmod(0o755)
    with (repo / "pyproject.toml").open("a") as handle:
        handle.write("# a new entry point, say\n")
    result = _run(repo, "kit", venv, python)
    assert result.returncode == 0 and "pyproject.toml changed, re-installing the kit" in result.stdout, result.stderr
    assert (tmp_path / "pip-called").read_text().split() == ["install", "-q", "--no-deps", "-e", str(repo)]
    assert (venv / "kept").exists() and not (tmp_path / "python-called").exists()
    assert _run(repo, "kit", venv, python).stdout.strip().endswith("is up to date")  # stamped


def _names(lines: list[str]) -> set[str]:
    import re

    return {re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for line in lines if line.strip() and not line.lstrip().startswith(("#", "-"))}


def test_the_locks_hold_every_declared_dependency() -> None:
    """A dependency added to pyproject.toml or an engine input without `make lock` would not be installed."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = _names(project["dependencies"] + project["optional-dependencies"]["dev"]) - {"torch"}
    kit_lock = _names([line for line in (REPO / "requirements/kit.lock").read_text().splitlines()
                       if not line.startswith(" ")])
    assert declared - kit_lock == set(), "run `make lock`"
    for source, lock in [("engine-cpu.txt", "engine-cpu.lock"), ("engine-cpu-nodeps.txt", "engine-cpu-nodeps.lock"),
                         ("infinity.txt", "infinity.lock"), ("infinity-previous.txt", "infinity-previous.lock"),
                         ("mutation.txt", "mutation.lock")]:
        wanted = _names((REPO / "requirements" / source).read_text().splitlines())
        locked = _names([line for line in (REPO / "requirements" / lock).read_text().splitlines()
                         if not line.startswith(" ")])
        assert wanted - locked == set(), f"requirements/{lock} misses {sorted(wanted - locked)}: run `make lock`"
