"""The terminal chat is busy (`serve.chat_busy`, the adapter's ``busy``) while its messages wait in the store
(`session_registry.QUEUED`) for a read-back the store refused, no turn running or queued: Ctrl-C stops them as
``/stop`` (rather than the hint on how to leave, and a second press leaving them unanswered), and ``/quit`` waits
for them, as for those queued in memory."""

from __future__ import annotations

import asyncio

from agent.testing import FakeClock
from gateway import gc_tuning, session_registry
from gateway import serve as serving
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.local import CHAT_ID, LocalAdapter
from tests.gateway.test_session_queue_bound import echoing


class Terminal(RecordingAdapter):
    """Stands for the terminal chat: its platform's name and chat, and a start the test waits for."""

    def __init__(self) -> None:
        super().__init__(LocalAdapter.name)
        self.started = asyncio.Event()

    async def start(self, sink, commands=()):
        await super().start(sink, commands)
        self.started.set()


async def test_the_terminal_chat_is_busy_while_its_messages_wait_in_the_store(tmp_path, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    clock, model, chat = FakeClock(autojump=False), echoing(gate_first=True), Terminal()
    options: dict = {}
    built: list[Gateway] = []

    def adapters(config, **given):
        options.update(given)
        return [chat]

    def gateway_of(host, adapters):
        built.append(Gateway(host, adapters, clock=clock))
        return built[-1]

    monkeypatch.setattr(serving, "build_adapters", adapters)
    monkeypatch.setattr(serving, "AgentHost", lambda config: AgentHost(config, model=model, clock=clock))
    monkeypatch.setattr(serving, "Gateway", gateway_of)
    monkeypatch.setattr(gc_tuning, "tune_for_serving", lambda: None)  # not this test process's collector
    (tmp_path / "state").mkdir()  # as `switchboard chat` makes it
    served = asyncio.ensure_future(serving.serve(make_config(tmp_path, display={"busy_input_mode": "queue"}),
                                                 local=True))
    await asyncio.wait_for(chat.started.wait(), 5.0)
    [gateway], busy = built, options["local_busy"]
    try:
        assert not busy()
        await chat.say("m0", chat=CHAT_ID)
        await model.reached("first")
        for n in (1, 2, 3):
            await chat.say(f"m{n}", chat=CHAT_ID)
        session = gateway.sessions.find(chat.name, CHAT_ID, None)
        assert (len(session.queue), session.held) == (2, 1)

        def refused(*args):
            raise OSError("disk I/O error")

        with monkeypatch.context() as disk:
            disk.setattr(gateway.store.sessions, "held", refused)
            model.release("first")
            await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
            await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the worker ended, m3 still held
            assert session.running is None and not session.queue and session.held == 1
            assert busy()  # before: idle, so Ctrl-C said how to leave, and /quit left m3 unanswered
        clock.advance(PAY_AGAIN_FIRST)  # the store reads again
        await chat.wait_for(lambda: len(chat.texts("reply")) == 4)
        await settled(gateway)
        assert chat.texts("reply") == [f"re: m{n}" for n in range(4)]
        assert not busy()
    finally:
        options["on_local_exit"]()
        assert await asyncio.wait_for(served, 10.0) == 0
