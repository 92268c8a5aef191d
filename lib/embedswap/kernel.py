"""The notebooks' kernel: the interpreter the kit is installed in.

`embedswap run` does not need a registered Jupyter kernel: papermill gets a kernel manager whose spec is this
very interpreter (``sys.executable -m ipykernel_launcher``), so a fresh ``pip install`` runs the steps as they
are. JupyterLab lists kernels by name, so `embedswap lab` (and `make kernel`) registers one named ``embedswap``
in this environment on first use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from traitlets import default

KERNEL_NAME = "embedswap"


def kit_kernel_spec() -> KernelSpec:
    """What `ipykernel install` would register for this interpreter (argv, protocol, encryption support)."""
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    spec["argv"][0] = sys.executable
    return KernelSpec(**{**spec, "display_name": KERNEL_NAME})


class KitKernelManager(AsyncKernelManager):
    """A kernel manager that starts this interpreter whatever kernel name the notebook asks for.

    Its kernel talks over Unix sockets in a folder of its own, not TCP. Over TCP, jupyter_client picks five free
    ports, closes them and lets the kernel bind them a moment later; a server starting beside it (vLLM and
    Dynamo open ZMQ and NATS ports of their own) can take one in between. CI's run of 757dc36 lost step 02 of
    a whole experiment that way ("ZMQError: Address already in use", "Kernel died before replying to
    kernel_info"). A socket file in a fresh folder cannot be taken by anyone else.
    """

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc"

    @default("ip")
    def _kit_ip_default(self) -> str:  # the sockets' path prefix; short, as a Unix socket path is (<108 bytes)
        if self.transport != "ipc":
            return super()._ip_default()
        return os.path.join(tempfile.mkdtemp(prefix="embedswap-kernel-"), "k")

    def cleanup_ipc_files(self) -> None:
        super().cleanup_ipc_files()
        if self.transport == "ipc" and os.path.basename(self.ip) == "k":
            shutil.rmtree(os.path.dirname(self.ip), ignore_errors=True)

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        if self._kernel_spec is None:
            self._kernel_spec = kit_kernel_spec()
        return self._kernel_spec


def registered_kernel() -> Path | None:
    """The folder of the kernel named ``embedswap`` that Jupyter finds, or None."""
    try:
        return Path(KernelSpecManager().get_kernel_spec(KERNEL_NAME).resource_dir)
    except NoSuchKernel:
        return None


def registered_interpreter() -> str | None:
    try:
        return KernelSpecManager().get_kernel_spec(KERNEL_NAME).argv[0]
    except (NoSuchKernel, IndexError):
        return None


def _same_env(a: str, b: str) -> bool:
    """Two interpreters of one environment (their bin folders are the same folder; the binaries are links)."""
    return Path(a).parent.resolve() == Path(b).parent.resolve()


def ensure_registered() -> tuple[Path, bool]:
    """Register the ``embedswap`` kernel in this environment (sys.prefix) unless one pointing at this
    interpreter is there already. Returns (its folder, whether it was installed now)."""
    folder, argv0 = registered_kernel(), registered_interpreter()
    if folder is not None and argv0 and _same_env(argv0, sys.executable):
        return folder, False
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL_NAME,
                    "--display-name", KERNEL_NAME], check=True, capture_output=True, text=True)
    return Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME, True
