"""Testing code built on the gateway: a recording adapter, a config on a temporary state
directory, and `settled` — the moment after which nothing more happens by itself.

`RecordingAdapter` implements the adapter protocol in memory and records every send,
edit and typing call; `say` feeds it a message as a platform would. For end-to-end
tests through a real SDK, use the loopback fakes in `platforms.fakes` instead. Use
`settled` instead of sleeping to show that nothing more arrives. `SlowToStop` makes a
stopped turn wind down only when the test says so, to show what a crash in between would find.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import SYSTEM_CLOCK, Clock, Model, ModelRequest, ModelResponse
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from platforms.base import (
    Accepted,
    Attachment,
    CommandSpec,
    DisplayTier,
    EditUnsupported,
    Inbound,
    InboundSink,
    Outbound,
    Sent,
)

MESSAGING = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=True)


@dataclass
class Delivered:
    message_id: str
    outbound: Outbound
    edits: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.edits[-1] if self.edits else self.outbound.text

    @property
    def kind(self) -> str:
        return self.outbound.kind


class RecordingAdapter:
    """Implements the adapter protocol in memory and records everything it is asked to do."""

    def __init__(self, name: str = "chat", tier: DisplayTier = MESSAGING, *, editable: bool = True,
                 text_limit: int = 4096) -> None:
        self.name = name
        self.tier = tier
        self.text_limit = text_limit
        self.typing_interval = 0.05
        self.editable = editable
        self.messages: list[Delivered] = []
        self.typing_calls = 0
        self.idle_calls = 0
        self.commands: Sequence[CommandSpec] = ()
        self._sink: InboundSink | None = None
        self._ids = itertools.count(1)
        self.changed = asyncio.Event()

    def measure(self, text: str) -> int:
        return len(text)

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        self._sink, self.commands = sink, commands

    async def stop(self) -> None:
        self._sink = None

    async def send(self, message: Outbound) -> Sent:
        delivered = Delivered(str(next(self._ids)), message)
        self.messages.append(delivered)
        self._changed()
        return Sent(delivered.message_id)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        if not self.editable:
            raise EditUnsupported("no edits here", method="edit", chat_id=chat_id)
        for delivered in self.messages:
            if delivered.message_id == message_id:
                delivered.edits.append(text)
                self._changed()
                return
        raise EditUnsupported("unknown message", method="edit", chat_id=chat_id)

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        self.typing_calls += 1

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        self.idle_calls += 1

    def web_routes(self) -> Sequence[Any]:
        return ()

    async def say(self, text: str, *, chat: str = "c1", user: str = "u1", event_id: str | None = None,
                  thread: str | None = None, name: str | None = "alice",
                  attachments: Sequence[Attachment] = (), sent_at: float | None = None,
                  private: bool = True, message_id: str | None = None) -> Accepted:
        """``private``: said in a direct chat (False: in a group); ``message_id``: the platform's id of
        the message, which a group's answers quote (`Outbound.reply_to`)."""
        assert self._sink is not None, "start the gateway first"
        return await self._sink(Inbound(self.name, chat, thread, user, name, text,
                                        event_id or f"ev-{os.urandom(6).hex()}", is_command=text.startswith("/"),
                                        is_private=private, attachments=tuple(attachments), sent_at=sent_at,
                                        message_id=message_id))

    def _changed(self) -> None:
        self.changed.set()

    def kinds(self, chat: str | None = None) -> list[str]:
        return [m.kind for m in self.messages if chat is None or m.outbound.chat_id == chat]

    def texts(self, kind: str | None = None) -> list[str]:
        return [m.text for m in self.messages if kind is None or m.kind == kind]

    async def wait_for(self, predicate, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                if predicate():
                    return
                await self.changed.wait()


def make_config(tmp_path, **sections: Any):
    """A `Config` with the state directory ``tmp_path/state``, the demo model answering at
    once unless ``model=`` says otherwise, and ``sections`` as the rest of the file."""
    raw: dict[str, Any] = {"state_dir": str(tmp_path / "state")}
    raw.update(sections)
    raw.setdefault("model", {}).setdefault("demo", {"child_steps": 1, "step_seconds": 0})
    loaded = config_from_mapping(raw)
    return loaded.config


class SlowToStop:
    """Wraps a model so that no call gives in to cancellation: a call ends only when the wrapped
    one returns. A turn stopped meanwhile winds down only once the test lets that call go on
    (``ScriptedModel.release``), so the test can look at what a crash before then would find."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.context_window = model.context_window
        self.supports_vision = model.supports_vision

    async def complete(self, request: ModelRequest) -> ModelResponse:
        call = asyncio.ensure_future(self.model.complete(request))
        while True:
            try:
                return await asyncio.shield(call)
            except asyncio.CancelledError:
                continue  # a stopped turn's hard interrupt: ignored until the call returns


async def start_gateway(config, adapters, *, model=None, script=None, clock: Clock = SYSTEM_CLOCK) -> Gateway:
    """A started gateway on ``config`` with these adapters; ``script`` runs a `ScriptedModel`.
    A start that fails is stopped before its error is raised, as `switchboard run` stops it: no
    caller holds that gateway to stop it (its log handler stayed on the root logger)."""
    model = model or (ScriptedModel(script) if script is not None else None)
    gateway = Gateway(AgentHost(config, model=model, clock=clock), adapters, clock=clock)
    try:
        await gateway.start()
    except BaseException:
        await gateway.stop(grace=0)
        raise
    return gateway


QUIET_ROUNDS = 20
"""Loop iterations the gateway must stay quiet in a row to count as settled: a finished child
hands its results on within a few, and they must not be missed in between."""


async def settled(gateway: Gateway, *, timeout: float = 5.0) -> None:
    """Return once the gateway has nothing left to do by itself: no turn running or queued, no
    child of any session alive, no background delegation waiting for its children, nothing
    waiting in the outbox — and it stays so for
    `QUIET_ROUNDS` loop iterations. Raises TimeoutError after ``timeout`` seconds of real time.

    Events a platform holds that the adapter has not fetched yet are not the gateway's: wait
    for the fake platform to have handed them over first."""
    async with asyncio.timeout(timeout):
        quiet = 0
        while quiet < QUIET_ROUNDS:
            await asyncio.sleep(0)
            quiet = quiet + 1 if gateway.quiet else 0
