"""`make lab` starts JupyterLab on 127.0.0.1 with the kit's kernel registered."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_kernel_is_registered_in_the_kit_environment() -> None:
    out = subprocess.run([str(BIN / "jupyter"), "kernelspec", "list", "--json"], capture_output=True, text=True)
    specs = json.loads(out.stdout)["kernelspecs"]
    assert "embedswap" in specs, "run `make kernel`"
    argv = specs["embedswap"]["spec"]["argv"]
    assert Path(argv[0]).parent == BIN, argv  # the kit venv itself, not whatever python is first on PATH


def test_lab_starts_on_localhost_and_serves_lab(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "embedswap-test"
    process = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS=--port {port} --IdentityProvider.token={token}"],
        cwd=REPO, stdout=(tmp_path / "lab.log").open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")},
    )
    try:
        deadline = time.monotonic() + 90
        status = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/lab?token={token}", timeout=5).status_code
                if status == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        assert status == 200, (tmp_path / "lab.log").read_text()[-2000:]
        kernels = httpx.get(f"http://127.0.0.1:{port}/api/kernelspecs?token={token}", timeout=5).json()
        assert "embedswap" in kernels["kernelspecs"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
