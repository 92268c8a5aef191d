"""The README's quickstart, run as written against two fake OpenAI-compatible servers.

The block after ``<!-- quickstart`` in README.md is run line by line by bash (``set -e``), in an empty folder, with
three substitutions a reader makes by hand, all documented here:

- the README's example URLs ``http://10.0.0.4:8080/v1`` (legacy) and ``http://10.0.0.5:8000/v1`` (candidate) are
  replaced by two in-process fake servers (``tests/support/fakeservers.py``) on free 127.0.0.1 ports;
- ``embedswap`` on PATH is this checkout's ``embedswap.cli`` (``EMBEDSWAP_ROOT`` = the folder the block makes, which
  is where an installed kit writes; in a checkout it would otherwise be the repository);
- ``$EDITOR`` is a script that checks the keys the README tells the reader to edit are in the generated file
  (``model.path``, ``model.served_name``, ``api_shape``) and sets ``served_name`` to the fakes' model. ``model.path``
  stays the default (the embedded MiniLM), which is the local model copy the reference is computed from.

The whole ``embedswap run`` is executed (five notebooks through papermill, no Jupyter kernel to register; about two
minutes on 2 cores). The fakes' vectors are not the model's, so the parity gate fails and the run exits 1, as it
should; every step must still finish ``ok`` and the report must be written. Any wrong command, flag, path or key in
the README's block fails this test.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from fakeservers import Behaviour, serve

README = Path(__file__).resolve().parents[2] / "README.md"
LEGACY_URL, CANDIDATE_URL = "http://10.0.0.4:8080/v1", "http://10.0.0.5:8000/v1"

EDITOR = """\
import sys, yaml
path = sys.argv[-1]
text = open(path, encoding="utf-8").read()
config = yaml.safe_load(text)
assert "path" in config["model"] and "served_name" in config["model"], config["model"]
assert "api_shape" in text, "the README says to set api_shape here: the file should show where"
assert all(t["kind"] == "external" for t in config["targets"].values()), config["targets"]
open(path, "w", encoding="utf-8").write(text.replace("served_name: minilm", "served_name: embedder", 1))
"""


def quickstart_block(readme: str) -> str:
    """The first fenced bash block after the ``<!-- quickstart`` marker."""
    match = re.search(r"<!-- quickstart.*?-->\s*```bash\n(.*?)```", readme, re.S)
    assert match, "README.md has no ```bash block after a <!-- quickstart ... --> marker"
    return match.group(1)


def test_quickstart_block_is_found_and_uses_the_documented_urls() -> None:
    block = quickstart_block(README.read_text(encoding="utf-8"))
    assert LEGACY_URL in block and CANDIDATE_URL in block, block
    assert "embedswap new" in block and "embedswap run" in block and "EDITOR" in block


@pytest.mark.e2e  # a whole `embedswap run` through the five notebooks (about 2 min)
def test_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    block = quickstart_block(README.read_text(encoding="utf-8"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "embedswap"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m embedswap.cli "$@"\n')
    editor = bin_dir / "edit-experiment"
    editor.write_text(f'#!/bin/sh\nexec "{sys.executable}" - "$@" <<\'EOF\'\n{EDITOR}EOF\n')
    for path in (shim, editor):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    lib = str(Path(__file__).resolve().parents[2] / "lib")
    with serve(Behaviour()) as legacy_port, serve(Behaviour()) as candidate_port:
        script = (block.replace(LEGACY_URL, f"http://127.0.0.1:{legacy_port}/v1")
                  .replace(CANDIDATE_URL, f"http://127.0.0.1:{candidate_port}/v1"))
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "EDITOR": str(editor),
               "EMBEDSWAP_ROOT": str(tmp_path / "myswap"), "HF_HUB_OFFLINE": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (lib, os.environ.get("PYTHONPATH")) if p)}
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)
    out = done.stdout + done.stderr
    # exit 1: the parity gate fails (the fakes are not the model); 2 would be a bad command or experiment.yaml
    assert done.returncode == 1, out[-4000:]
    assert "[embedswap] parity gate: FAIL" in done.stdout, out[-4000:]
    for step in ("01_legacy_capture", "02_swap_deploy", "03_vector_contract_diff", "04_latency", "05_parity"):
        assert f"[embedswap] {step}: ok" in done.stdout, out[-4000:]
    (experiment,) = (tmp_path / "myswap" / "experiments").glob("*-myswap")
    assert (experiment / "experiment.yaml").read_text().count("served_name: embedder") == 1
    report = tmp_path / "myswap" / "reports" / experiment.name
    for name in ("report.ko.md", "report.en.md", "report.md", "report.html"):
        assert (report / name).is_file(), sorted(p.name for p in report.iterdir())
