"""What the chat reads while a typing request is still on the wire keeps the turn's order: on Telegram, where
nothing clears the indicator, a reply waits for that request (`TYPING_FINISH_SECONDS` at most), and so does
what comes after the turn: a background delegation's card due meanwhile follows the reply that acknowledges it,
and a /stop's confirmation waits for the stopped turn's request as a reply would ("typing…" showed under
"Stopped." for 5 s). The real aiogram client in `TelegramAdapter` talks to the loopback `FakeTelegram`, which
holds sendChatAction unanswered for as long as a test says."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.progress_card import CHILD_TICK_SECONDS
from gateway.testing import make_config, settled
from gateway.turn_runner import TYPING_FINISH_SECONDS
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.gateway.test_ledger import parent
from tests.gateway.test_typing_before_reply import typing_loops

EVERYONE = {"telegram": {"allow_all": True}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # asked for before ``gateways``: closed after they stopped
        yield fake


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages["42"]]


async def test_a_delegations_card_due_while_the_reply_waits_for_typing_follows_the_reply(fake, gateways, tmp_path):
    clock = FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent(), "leaf": lambda r: {"wait": "work", "text": "found"}})
    display = {"interim_assistant_messages": True, "progress": "card", "progress_delay": 1}
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await gateways(make_config(tmp_path, platforms=EVERYONE, display=display), [adapter], model=model,
                             clock=clock)
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.hold("sendChatAction")
    fake.push_message(42, "please delegate")
    await model.reached("work")  # dispatched: its card is due a second from now
    await fake.wait_for(lambda: TYPING_FINISH_SECONDS in clock.sleeps)  # "on it" waits for the typing request
    looks = clock.sleeps.count(CHILD_TICK_SECONDS)
    clock.advance(1)
    # The card's first look at its subagents is done: it sleeps until the next.
    await fake.wait_for(lambda: clock.sleeps.count(CHILD_TICK_SECONDS) > looks)
    assert await gateway.outbox.flush(timeout=5)
    assert texts(fake) == []  # before, the card: the chat read the work before the reply that started it
    fake.release("sendChatAction")
    await fake.wait_for(lambda: texts(fake))
    clock.advance(CHILD_TICK_SECONDS)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[0] == "on it"
    assert texts(fake)[1].startswith("⏳ Waiting for subagents: 0 of 2 done")
    assert typing_loops() == []
    model.release("work")


async def stopping_while_typing(fake: FakeTelegram, gateways, tmp_path, command: str = "/stop"
                                ) -> tuple[FakeClock, object]:
    """A gateway whose turn ``command`` (/stop, /new) ends while its first sendChatAction waits, held by the fake,
    for an answer; returns once the command's answer went, or waits for that request."""
    clock, model = FakeClock(autojump=False), ScriptedModel({"parent": [[{"wait": "go", "text": "the answer"}]]})
    config = make_config(tmp_path, platforms=EVERYONE, display={"interim_assistant_messages": False})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await gateways(config, [adapter], model=model, clock=clock)
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.hold("sendChatAction")
    fake.push_message(42, "hello")
    await model.reached("go")
    await fake.wait_for(lambda: fake.calls_to("sendChatAction"))
    fake.push_message(42, command)
    await fake.wait_for(lambda: fake.calls_to("sendMessage") or TYPING_FINISH_SECONDS in clock.sleeps)
    return clock, gateway


@pytest.mark.parametrize("command, answer", [("/stop", "Stopped the running turn."),
                                             ("/new", "Started a new session.")])
async def test_a_stops_answer_goes_once_the_typing_request_on_the_wire_is_answered(
        fake, gateways, tmp_path, command, answer):
    clock, gateway = await stopping_while_typing(fake, gateways, tmp_path, command)
    assert fake.calls_to("sendMessage") == []  # "typing…" would show under it
    fake.release("sendChatAction")
    await fake.wait_for(lambda: texts(fake))
    [said] = texts(fake)
    assert said.startswith(answer)
    assert len(fake.calls_to("sendChatAction")) == 1
    await settled(gateway)
    assert typing_loops() == []


async def test_a_typing_request_never_answered_holds_a_stops_confirmation_no_longer_than_the_bound(
        fake, gateways, tmp_path):
    clock, gateway = await stopping_while_typing(fake, gateways, tmp_path)
    assert fake.calls_to("sendMessage") == []
    clock.advance(TYPING_FINISH_SECONDS)  # Telegram never answers it: the confirmation goes all the same
    await fake.wait_for(lambda: texts(fake))
    assert texts(fake) == ["Stopped the running turn."]
    await settled(gateway)
    assert typing_loops() == []
