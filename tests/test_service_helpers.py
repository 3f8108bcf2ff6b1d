"""The port helpers the service tests stand on."""

from __future__ import annotations

import socket

import pytest
from service_helpers import _ephemeral_range, free_port, listening_ports


def test_free_ports_are_distinct_bindable_and_outside_the_ephemeral_range():
    low, _ = _ephemeral_range()
    if low <= 21000:
        pytest.skip(f"the ephemeral range starts at {low}: free_port falls back to the kernel")
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == len(ports)
    assert all(20000 <= port < low for port in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[0]))


def test_listening_ports_sees_a_listener_and_forgets_it_once_closed():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert port not in listening_ports()  # bound is not listening
        sock.listen()
        assert port in listening_ports()
    assert port not in listening_ports()
