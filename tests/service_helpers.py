"""Helpers for tests that start real services (Ray nodes, a coordinator, Redis)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
