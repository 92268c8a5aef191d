"""Free ports for the tests that start servers: one helper for the whole suite (the ``free_port`` fixture of
tests/conftest.py hands out one). Ports come from 18800-19299 (split between pytest-xdist workers), taken in turn around the range, so a port comes back
only after all the others (a server a test stopped may still be winding down on it); a whole ``make test`` asks for
more than 100. A port counts as free only when nothing listens on it and no process names it on its command line."""

from __future__ import annotations

import os
import socket

import psutil

ALL_PORTS = range(18800, 19300)


def _worker_range(ports: range = ALL_PORTS) -> range:
    """This pytest-xdist worker's share of the range (``make test`` runs the unit tests in several workers): two
    workers searching the same range from the same start would both find a port free and both take it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return ports
    size = len(ports) // count
    start = ports.start + int(worker[2:]) * size
    return range(start, start + size)


PORT_RANGE = _worker_range()


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return not port_processes([port])


_next = 0  # where the next search starts: the ports go round the range, so a port comes back last


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports, taken in turn around the range."""
    global _next
    ports: list[int] = []
    for step in range(len(PORT_RANGE)):
        port = PORT_RANGE[(_next + step) % len(PORT_RANGE)]
        if not port_free(port):
            continue
        ports.append(port)
        if len(ports) == n:
            _next = (port - PORT_RANGE.start + 1) % len(PORT_RANGE)
            return ports
    raise RuntimeError(f"no {n} free ports in {PORT_RANGE.start}-{PORT_RANGE.stop - 1}")


def port_processes(ports: list[int]) -> list[str]:
    """Processes whose command line names one of the ports, and sockets listening on them."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if any(f"--port {p}" in cmdline or f":{p}" in cmdline for p in ports) and proc.pid != os.getpid():
            found.append(f"pid {proc.info['pid']}: {cmdline[:160]}")
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port in ports:
                found.append(f"listening on {conn.laddr.ip}:{conn.laddr.port} (pid {conn.pid})")
    except psutil.AccessDenied:
        pass
    return found


def free_port() -> int:
    """One free port of the range (see :func:`free_ports`)."""
    return free_ports(1)[0]

