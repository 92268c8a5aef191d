"""Free ports for the tests that start servers: one helper for the whole suite (the ``free_port`` fixture of
tests/conftest.py hands out one). Ports come from 18800-18899, never the same one twice in a test session, and a
port counts as free only when nothing listens on it and no process names it on its command line."""

from __future__ import annotations

import os
import socket

import psutil

PORT_RANGE = range(18800, 18900)


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return not port_processes([port])


_handed_out: set[int] = set()


def free_ports(n: int) -> list[int]:
    """``n`` ports of 18800-18899 that nothing listens on (never the same one twice in a test session)."""
    ports = []
    for port in PORT_RANGE:
        if port in _handed_out or not port_free(port):
            continue
        _handed_out.add(port)
        ports.append(port)
        if len(ports) == n:
            return ports
    raise RuntimeError("no free port left in 18800-18899")


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
    """One port of 18800-18899 that nothing listens on (never the same one twice in a test session)."""
    return free_ports(1)[0]

