"""A typing indicator never outlives the reply: a typing request still on the wire when a turn ends is answered
(or, past `TYPING_FINISH_SECONDS` on the gateway's clock, cancelled) before the reply goes, since Telegram
shows "typing…" for 5 s after a sendChatAction it gets after the answer. And a /stop ends the refreshing at
once, not when the stopped turn has wound down. The real aiogram client in `TelegramAdapter` talks to the
loopback `FakeTelegram`, which holds sendChatAction unanswered for as long as a test says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, SlowToStop, make_config, settled
from gateway.turn_runner import TYPING_FINISH_SECONDS
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

EVERYONE = {"telegram": {"allow_all": True}}
GATED = {"parent": [[{"wait": "go", "text": "the answer"}]]}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # asked for before ``gateways``: closed after they stopped
        yield fake


def typing_loops() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if t.get_coro().__name__ == "_keep_typing" and not t.done()]


async def answering_while_typing(fake: FakeTelegram, gateways, tmp_path) -> tuple[FakeClock, object]:
    """A gateway whose turn ends while its first sendChatAction waits, held by the fake, for an answer;
    returns once the reply went, or the turn's end waits for that request."""
    clock, model = FakeClock(autojump=False), ScriptedModel(GATED)
    config = make_config(tmp_path, platforms=EVERYONE, display={"interim_assistant_messages": False})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await gateways(config, [adapter], model=model, clock=clock)
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.hold("sendChatAction")
    fake.push_message(42, "hello")
    await model.reached("go")
    await fake.wait_for(lambda: fake.calls_to("sendChatAction"))
    model.release("go")
    await fake.wait_for(lambda: fake.calls_to("sendMessage") or TYPING_FINISH_SECONDS in clock.sleeps)
    return clock, gateway


async def test_the_reply_goes_once_the_typing_request_on_the_wire_is_answered(fake, gateways, tmp_path):
    clock, gateway = await answering_while_typing(fake, gateways, tmp_path)
    assert fake.calls_to("sendMessage") == []  # it would land under the answer
    fake.release("sendChatAction")
    await fake.wait_for(lambda: fake.messages["42"])
    assert [m["text"] for m in fake.messages["42"]] == ["the answer"]
    assert len(fake.calls_to("sendChatAction")) == 1  # none started after the turn's end
    await settled(gateway)
    assert typing_loops() == []


async def test_a_typing_request_never_answered_holds_the_reply_no_longer_than_the_bound(fake, gateways, tmp_path):
    clock, gateway = await answering_while_typing(fake, gateways, tmp_path)
    assert fake.calls_to("sendMessage") == []
    clock.advance(TYPING_FINISH_SECONDS)  # Telegram never answers it: the reply goes all the same
    await fake.wait_for(lambda: fake.messages["42"])
    assert [m["text"] for m in fake.messages["42"]] == ["the answer"]
    await settled(gateway)
    assert typing_loops() == []  # cancelled, and awaited


async def test_a_stop_ends_the_typing_at_once_though_the_turn_winds_down_later(fake, gateways, tmp_path):
    model = ScriptedModel(GATED)
    config = make_config(tmp_path, platforms=EVERYONE, display={"interim_assistant_messages": False})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await gateways(config, [adapter], model=SlowToStop(model))
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.push_message(42, "hello")
    await model.reached("go")
    await fake.wait_for(lambda: fake.calls_to("sendChatAction"))
    fake.push_message(42, "/stop")
    await fake.wait_for(lambda: fake.messages["42"])
    assert fake.messages["42"][0]["text"].startswith("Stopped the running turn")
    [session] = gateway.sessions
    winding_down, refreshing = session.running is not None, typing_loops()
    model.release("go")
    assert winding_down  # its model call ignores the stop: the turn ends only now
    # Refreshed until then (every 4 s), "typing…" showed under "Stopped" for as long.
    assert refreshing == []
    await settled(gateway)
    assert [m["text"] for m in fake.messages["42"]] == [fake.messages["42"][0]["text"]]


class ClearedAfterTheReply(RecordingAdapter):
    """An adapter whose indicator `idle` clears once the reply went (as Slack deletes its placeholder), and whose
    typing request never ends: waited for, a placeholder would be posted for nothing, the reply held up."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        self.asked.set()
        await asyncio.Event().wait()


async def test_where_idle_clears_the_indicator_the_reply_does_not_wait_for_typing(gateways, tmp_path):
    clock, model, chat = FakeClock(autojump=False), ScriptedModel(GATED), ClearedAfterTheReply()
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": False}), [chat],
                             model=model, clock=clock)
    await chat.say("hello")
    await model.reached("go")
    await asyncio.wait_for(chat.asked.wait(), 5)
    model.release("go")
    await chat.wait_for(lambda: chat.texts("reply"))  # the clock never moved: nothing waited on it
    await settled(gateway)
    assert typing_loops() == []
