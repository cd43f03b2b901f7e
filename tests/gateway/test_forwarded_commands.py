"""A forwarded message is read as a message, never as a command, though its text starts with one: forwarding
someone's "/new plan the trip" (a tip, a transcript) reset the forwarder's session and lost the conversation."""

from __future__ import annotations

import dataclasses

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from platforms.base import Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink


async def test_a_forwarded_new_starts_a_turn_and_keeps_the_session(tmp_path) -> None:
    seen: list[int] = []

    def answer(request) -> dict:
        seen.append(len(request.messages))
        return {"text": "noted" if len(seen) == 1 else "still here"}

    model = ScriptedModel({"parent": answer})
    chat = RecordingAdapter()
    gateway = await start_gateway(make_config(tmp_path), [chat], model=model)
    try:
        await chat.say("remember the trip")
        await settled(gateway)
        forwarded = Inbound(chat.name, "c1", None, "u1", "alice", "/new plan the trip", "ev-forwarded",
                            forwarded=True)
        await chat._sink(forwarded)
        await settled(gateway)
        assert chat.texts() == ["noted", "still here"]  # answered as a message: no "Started a new session."
        assert seen[1] > seen[0]  # the conversation before it went with it: the session was not reset
    finally:
        await gateway.stop(grace=0)


def test_forwarded_survives_the_inbox() -> None:
    inbound = Inbound("telegram", "42", None, "7", "bob", "/stop", "1", forwarded=True)
    assert Inbound.from_json(inbound.to_json()) == inbound
    assert dataclasses.replace(inbound, forwarded=False) != inbound


async def test_a_forwarded_telegram_command_is_taken_as_a_message() -> None:
    async with FakeTelegram() as fake:
        adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
        await adapter.start(sink)
        try:
            update = fake.message_update(42, "/new plan the trip")  # with its bot_command entity, as forwarded
            update["message"]["forward_origin"] = {"type": "hidden_user", "date": 1, "sender_user_name": "Ann"}
            fake.push_update(update)
            fake.push_message(42, "/stop")
            await fake.wait_for(lambda: len(sink.inbound) == 2)
        finally:
            await adapter.stop()
    forwarded, typed = sink.inbound
    assert (forwarded.forwarded, forwarded.is_command, forwarded.text) == (True, False, "/new plan the trip")
    assert (typed.forwarded, typed.is_command) == (False, True)
