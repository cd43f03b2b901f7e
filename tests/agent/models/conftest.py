"""Fixtures the model-server circuit's tests share."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose backlog is full: a connection to it is never opened, as to a host no packet reaches."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(0)
    port = listening.getsockname()[1]
    waiting = []
    for _ in range(3):
        waiting.append(socket.socket())
        waiting[-1].setblocking(False)
        waiting[-1].connect_ex(("127.0.0.1", port))
    yield port
    for sock in (*waiting, listening):
        sock.close()
