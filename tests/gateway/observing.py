"""Helpers for the tests of what operators see: a gateway served over HTTP, an adapter that fails on cue."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agent import ToolRegistry
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.events import GatewayEvents
from gateway.server import Server
from gateway.testing import RecordingAdapter, make_config
from platforms.base import Outbound, Sent
from tests.polling import until

LIST = "Compare these:\n- apples\n- pears"


class Lookups:
    """Records the outbox's lookups, as the metrics see them."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []
        self.events = GatewayEvents()
        self.events.subscribe(self)

    def looked_up(self, platform: str, outcome: str) -> None:
        self.outcomes.append(f"{platform}:{outcome}")


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


PLUGIN_TURN = "turn-of-a-plugin"


@asynccontextmanager
async def restarted_with_children_on_temporal(
        tmp_path: Path, gateways: Any, temporal_server: Any, completion: str
) -> AsyncIterator[tuple[Gateway, RecordingAdapter]]:
    """A gateway on a Temporal dev server, restarted while children wait for the model on a worker
    (only a stop ends them): chat c1 delegated "apples" and "pears" in the background ("on it"),
    and in chat c2 a plugin launched "plums" and "figs" from the turn `PLUGIN_TURN` (through the
    lifecycle, not delegate_task: no delegation waits for them). Yields the new gateway and its
    adapter: c1's session is loaded (its delegation's delivery needs it), c2's is not. The parent
    answers c1's results with ``completion``."""
    from agent.testing import inside_turn
    from lifecycle import SubagentLaunchRequest
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    leaves = ScriptedModel({"leaf": lambda request: {"wait": "forever", "text": "never found"}})
    settings = TemporalSettings(address=temporal_server.address, task_queue=f"restart-{uuid.uuid4().hex[:10]}")
    config = make_config(tmp_path, delegation={"gateway_mode": "background"}, lifecycle={
        "engine": "temporal", "temporal": {"address": settings.address, "task_queue": settings.task_queue}})
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: leaves)
    tasks = {"tasks": [{"goal": "apples"}, {"goal": "pears"}]}
    async with ChildWorker(await connect(settings), settings.task_queue, toolbox, heartbeat_seconds=0.2):
        try:
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [[
                {"tool_calls": [{"name": "delegate_task", "arguments": tasks}]}, {"text": "on it"}]]}))
            await chat.say("compare", chat="c1")
            await chat.wait_for(lambda: chat.texts() == ["on it"])
            with inside_turn(gateway.sessions.get("chat", "c2", None).agent, PLUGIN_TURN):
                for goal in ("plums", "figs"):
                    await gateway.host.lifecycle.launch(SubagentLaunchRequest(goal=goal))
            await until(lambda: len(leaves.requests) == 4, 15)
            await gateway.stop(grace=0)  # the children run on, on the worker

            chat2 = RecordingAdapter()
            gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": [[{"text": completion}]]}))
            yield gateway2, chat2
        finally:
            leaves.release("forever")
