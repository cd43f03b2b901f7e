"""End to end on Discord: a `/stop` and a message sent just after it. The adapter acknowledges a slash
command ("thinking…") before handing it over, while a message is handed over as it arrives, so the
message, though sent later, can reach the gateway first; the command must still be told apart as the
earlier one, or it stops (or drops) the message it was never meant for."""

from __future__ import annotations

from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.discord_urls import discord
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
USER = 42


fake = fake_discord()


def script(request: ModelRequest) -> dict:
    text = str(request.messages[-1].get("content"))
    if "first job" in text:
        return {"wait": "first", "text": "answer to the first job"}
    return {"wait": "second", "text": "answer to the second job"}


@pytest.mark.parametrize(("mode", "stop_answer"), [
    ("interrupt", "The running turn was not stopped: it answers a message sent after this /stop."),
    ("queue", "Stopped the running turn."),
])
async def test_a_message_sent_just_after_a_slash_stop_is_neither_stopped_nor_dropped(
        tmp_path: Path, fake: FakeDiscord, mode: str, stop_answer: str) -> None:
    model = ScriptedModel({"parent": script})
    config = make_config(tmp_path, platforms={"discord": {"allow_all": True}}, display={"busy_input_mode": mode})
    gateway = await start_gateway(config, [adapter_for(fake)], model=model)
    dm = fake.dm_channel(USER)
    try:
        fake.push_dm(USER, "the first job")
        await model.reached("first")
        acknowledged = fake.hold(CALLBACK)  # a slow round trip: the acknowledgement holds the command back
        stop = fake.push_interaction("stop", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        # Discord dates in milliseconds: the message goes in a later one than the command, as a person's would.
        await fake.wait_for(lambda: discord.utils.time_snowflake(discord.utils.utcnow()) >> 22 > int(stop) >> 22)
        later = fake.push_dm(USER, "the second job, sent after the /stop")
        await fake.wait_for(lambda: gateway.store.inbox.received_at("discord", later) is not None)
        acknowledged.set()

        token = fake.interactions[stop]["token"]
        answered = await fake.wait_for(lambda: [c for c in fake.calls_to(ANSWER) if token in c.path])
        assert answered[0].body["content"].startswith(stop_answer)
        model.release("second")
        await fake.wait_for(lambda: any(m.content == "answer to the second job" for m in fake.bot_messages(dm)))
        await settled(gateway)
        assert "answer to the first job" not in [m.content for m in fake.bot_messages(dm)]
    finally:
        model.release("first")
        model.release("second")
        await gateway.stop(grace=0)
        await join_heartbeat_threads()
