"""The notebooks' kernel talks over Unix sockets in a folder of its own, so no server's port can be taken from it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from embedswap.kernel import KitKernelManager


async def _run_once(km: KitKernelManager) -> tuple[dict, str]:
    await km.start_kernel()
    try:
        info = json.loads(Path(km.connection_file).read_text())
        client = km.client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        reply = await client.execute_interactive("print(6 * 7)", output_hook=lambda msg: None, timeout=60)
        client.stop_channels()
        return info, reply["content"]["status"]
    finally:
        await km.shutdown_kernel(now=True)


def test_the_kernel_binds_socket_files_not_tcp_ports_and_removes_them() -> None:
    km = KitKernelManager()
    info, status = asyncio.run(_run_once(km))
    assert status == "ok"
    assert info["transport"] == "ipc"
    folder = Path(info["ip"]).parent
    assert folder.name.startswith("embedswap-kernel-")
    assert not folder.exists(), "the socket folder outlived the kernel"


def test_two_kernels_get_two_folders() -> None:
    a, b = KitKernelManager(), KitKernelManager()
    a.transport = b.transport = "ipc"
    assert os.path.dirname(a.ip) != os.path.dirname(b.ip)
    a.cleanup_ipc_files()
    b.cleanup_ipc_files()


def test_run_notebook_kills_the_kernel_after_its_last_cell(monkeypatch, tmp_path) -> None:
    # a graceful shutdown waited 1.1-2.4 s a notebook for the kernel's interpreter to tear down (runner.run_notebook)
    import papermill

    from embedswap import runner
    from embedswap.captures import Attempt

    seen: dict = {}
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: seen.update(k))
    monkeypatch.setattr(runner, "notebook_dir", lambda experiment_dir: tmp_path)
    runner.run_notebook("04_latency", tmp_path, Attempt(tmp_path, tmp_path / "attempts" / "a"))
    assert seen["shutdown_kernel"] == "immediate"
    assert seen["kernel_manager_class"] is KitKernelManager


def test_papermill_is_imported_without_the_iri_grammars() -> None:
    # runner.import_papermill: rfc3987_syntax compiled 38 grammars on import, 1.0 s of CPU once per run; notebooks
    # still validate without it
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from embedswap.runner import import_papermill; "
            "import_papermill(); import nbformat; "
            "nbformat.validate(nbformat.read(sys.argv[2], as_version=4)); print(sys.modules['rfc3987_syntax'])")
    lib = Path(__file__).resolve().parents[2] / "lib"
    done = subprocess.run([sys.executable, "-c", code, str(lib),
                           str(lib / "embedswap" / "_assets" / "notebooks" / "04_latency.ipynb")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "None"
