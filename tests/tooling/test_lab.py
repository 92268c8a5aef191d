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
from realkit import listening_addresses

REPO = Path(__file__).resolve().parents[2]
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
        # reachable on 127.0.0.1 is not enough: Lab on 0.0.0.0 answers there too; what it listens on must be loopback
        assert listening_addresses(process.pid, port) == {"127.0.0.1"}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def test_the_bind_check_catches_a_server_on_every_interface() -> None:
    """What the Lab test relies on: a listener on 0.0.0.0 is reported as such, one on 127.0.0.1 as loopback."""
    for address in ("0.0.0.0", "127.0.0.1"):
        with socket.socket() as sock:
            sock.bind((address, 0))
            sock.listen()
            assert listening_addresses(os.getpid(), sock.getsockname()[1]) == {address}
