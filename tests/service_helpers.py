"""Helpers for tests that start real services (Ray nodes, a coordinator, Redis)."""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Ports handed out by this process: two picks never collide with each other.
_HANDED_OUT: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port nothing listens on right now, below the kernel's ephemeral range.

    A port the kernel picked (bind to 0) lies in the ephemeral range, where any
    outgoing connection on the machine (the test session's own Ray opens hundreds)
    may take it before the server we hand it to binds it: a `ray start --block`
    whose agent loses its port that way shuts the whole node down. Ports from
    20000 up to the ephemeral range are never assigned implicitly (Ray's own worker
    ports end at 19999), so a free one stays free until used.
    """
    low_ephemeral, _ = _ephemeral_range()
    # Parallel test workers (pytest-xdist) pick from disjoint residues: two workers
    # never hand out the same port between its check and its bind.
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    candidates = list(range(20000 + worker, low_ephemeral, max(1, workers)))
    random.shuffle(candidates)
    for port in candidates[:2000]:
        if port not in _HANDED_OUT and _bindable(port):
            _HANDED_OUT.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening_ports() -> set[int]:
    """TCP ports something on this machine listens on, any address (from /proc/net)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_for(
    predicate: Callable[[], Any], timeout: float = 120.0, what: str = "", interval: float = 0.5
) -> Any:
    """Poll `predicate` until it returns something truthy (returned), or time out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what or predicate}")
