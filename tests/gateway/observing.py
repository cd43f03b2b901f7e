"""Helpers for the tests of what operators see: a gateway served over HTTP, an adapter that fails on cue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from gateway.app import Gateway
from gateway.server import Server
from gateway.testing import RecordingAdapter
from platforms.base import Outbound, Sent

LIST = "Compare these:\n- apples\n- pears"


class FailingAdapter(RecordingAdapter):
    """A `RecordingAdapter` whose next sends raise the errors given to `fail_next`, in order."""

    def __init__(self, name: str = "chat", **kw) -> None:
        super().__init__(name, **kw)
        self._failures: list[Exception] = []

    def fail_next(self, *errors: Exception) -> None:
        self._failures.extend(errors)

    async def send(self, message: Outbound) -> Sent:
        if self._failures:
            raise self._failures.pop(0)
        return await super().send(message)


@asynccontextmanager
async def served(gateway: Gateway) -> AsyncIterator[Server]:
    """The gateway's HTTP server on a free loopback port, for the block."""
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def samples(text: str) -> Callable[..., float]:
    """``value(name, **labels)`` of the sample in a /metrics page parsed by prometheus_client's
    own parser; 0.0 for a sample that is not there."""
    from prometheus_client.parser import text_string_to_metric_families

    found = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in text_string_to_metric_families(text) for s in family.samples}

    def value(name: str, **labels: str) -> float:
        return found.get((name, tuple(sorted(labels.items()))), 0.0)

    value.names = {name for name, _ in found}  # type: ignore[attr-defined]
    value.labels = lambda name, label: {dict(labels)[label] for n, labels in found if n == name}  # type: ignore
    return value
