"""End to end on Slack: a private channel given a new id while the bot talks in it (shared over Slack Connect:
``channel_id_changed``). The real `SlackAdapter` talks to `FakeSlack` over Socket Mode, with the real `Gateway`
behind it: the conversation goes on under the id it had, its history and what is under way in it too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import bot_posts

PLACEHOLDER = "_working…_"


def remembers_the_word(request: ModelRequest) -> dict:
    """Answers whether an earlier message of the conversation named the word; waits at ``moved`` first when asked
    to take its time."""
    said = [str(m["content"]) for m in request.messages if m["role"] == "user"]
    if "take your time" in said[-1]:
        return {"wait": "moved", "text": "the slow answer"}
    return {"text": "remembered: teal" if any("teal" in s for s in said[:-1]) else "noted"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def gateways(fake: FakeSlack, tmp_path) -> AsyncIterator[Callable[[ScriptedModel], Awaitable[Gateway]]]:
    """``await gateways(model)``: a gateway on the one state directory (a restart starts another), with a Slack
    adapter on ``fake``; all stopped after the test."""
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    running: list[Gateway] = []

    async def start(model: ScriptedModel) -> Gateway:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        running.append(await start_gateway(config, [adapter], model=model))
        return running[-1]

    yield start
    for gateway in running:
        await gateway.stop(grace=0)


def texts(fake: FakeSlack, channel: str, thread: str) -> list[str]:
    return [m.get("text", "") for m in bot_posts(fake, channel, thread)]


async def answered(fake: FakeSlack, gateway: Gateway, channel: str, thread: str, count: int) -> list[str]:
    await fake.wait_for(lambda: len(texts(fake, channel, thread)) >= count
                        and PLACEHOLDER not in texts(fake, channel, thread))
    await settled(gateway)
    return texts(fake, channel, thread)


async def test_the_conversation_goes_on_in_the_channel_with_its_new_id_also_after_a_restart(fake, gateways):
    model = ScriptedModel({"parent": remembers_the_word})
    gateway = await gateways(model)
    thread = (await fake.push_mention("G1", "U1", "the word is teal"))["event"]["ts"]
    assert await answered(fake, gateway, "G1", thread, 1) == ["noted"]

    moved_at = len(fake.calls)
    await fake.change_channel_id("G1", "C1")
    await fake.wait_for(lambda: gateway.store.chat_moves.of("slack") == {"G1": "C1"})
    await fake.push_message("C1", "U1", "what was the word?", thread_ts=thread)  # the bot's thread: no mention
    assert await answered(fake, gateway, "C1", thread, 2) == ["noted", "remembered: teal"]
    await gateway.stop(grace=0)

    gateway = await gateways(model)  # a new process knows the move, and the thread, from the database only
    await fake.push_message("C1", "U1", "and the word now?", thread_ts=thread)
    assert await answered(fake, gateway, "C1", thread, 3) == ["noted", "remembered: teal", "remembered: teal"]
    assert len(gateway.sessions) == 1
    assert [c.method for c in fake.calls[moved_at:] if c.params.get("channel") == "G1"] == []  # none refused


async def test_the_answer_of_a_turn_running_during_the_move_arrives_in_the_channel_as_it_is_now(fake, gateways):
    model = ScriptedModel({"parent": remembers_the_word})
    gateway = await gateways(model)
    thread = (await fake.push_mention("G1", "U1", "take your time"))["event"]["ts"]
    await model.reached("moved")
    await fake.change_channel_id("G1", "C1")
    await fake.wait_for(lambda: gateway.store.chat_moves.of("slack"))
    model.release("moved")
    assert await answered(fake, gateway, "C1", thread, 1) == ["the slow answer"]
    assert gateway.sessions.find("slack", "G1", thread) is not None
