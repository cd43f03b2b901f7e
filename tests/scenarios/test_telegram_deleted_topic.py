"""A forum topic an admin deletes while the bot works there: Telegram refuses every write into it for good ("message
thread not found"), so the topic's work stops as a Discord thread's does when deleted: its running turn, and the
messages waiting there for their turns, which would each have cost a model call for an answer refused. The forum's
other topics go on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

BOT = "sb_deleted_topic_bot"
FORUM = -1001
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
CAROL = dict(chat_type="supergroup", user_id=6, username="carol")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def answers(request) -> dict:
    asked = str(request.messages[-1].get("content"))
    return {"wait": "77", "text": "answer in 77"} if "first in 77" in asked else {"text": f"answer to {asked}"}


async def test_a_deleted_topics_waiting_messages_cost_no_model_call_and_other_topics_go_on(fake, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="gateway")
    model = ScriptedModel({"parent": answers})
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"progress": "off"})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    adapter.typing_interval = 0.6  # "typing" renewed every 0.5 s, the gateway's shortest: the turn runs long
    gateway = await start_gateway(config, [adapter], model=model)
    try:
        await asked_and_deleted(fake, gateway, model, caplog)
    finally:
        await gateway.stop(grace=0)


async def asked_and_deleted(fake: FakeTelegram, gateway, model: ScriptedModel, caplog) -> None:
    fake.push_message(FORUM, f"@{BOT} first in 77", thread_id=77, **BOB)
    await model.reached("77")
    for n in (1, 2):  # another member's: they wait for Bob's turn
        fake.push_message(FORUM, f"@{BOT} carol's {n} in 77", thread_id=77, **CAROL)
    await fake.wait_for(lambda: not fake.pending)
    await queued(gateway, "77", 2)
    fake.delete_topic(FORUM, 77)
    typed = len(fake.calls_to("sendChatAction"))
    await fake.wait_for(lambda: len(fake.calls_to("sendChatAction")) > typed)  # refused: the topic is gone
    with contextlib.suppress(TimeoutError):  # never, when nothing stops the topic's work: the asserts say what ran
        await queued(gateway, "77", 0, timeout=2)
    model.release("77")
    await settled(gateway, timeout=10)
    fake.push_message(FORUM, f"@{BOT} a question in 88", thread_id=88, **BOB)
    await fake.wait_for(lambda: fake.messages[str(FORUM)], timeout=10)
    await settled(gateway)
    assert [(m["thread_id"], m["text"]) for m in fake.messages[str(FORUM)]] == [
        (88, f"answer to [@bob] @{BOT} a question in 88")]
    asked = [str(request.messages[-1].get("content")) for request in model.requests]
    assert not any("carol" in text for text in asked)  # each would have been answered into a topic that is gone
    assert len(asked) == 2
    stops = [r.getMessage() for r in caplog.records if "can no longer be written to" in r.getMessage()]
    assert stops == [f"telegram chat {FORUM} thread 77 can no longer be written to (the forum topic was deleted):"
                     " stopped the running turn; dropped 2 waiting messages"]


async def queued(gateway, thread: str, count: int, timeout: float = 5) -> None:
    """Until exactly ``count`` messages wait in the topic's queue."""
    async with asyncio.timeout(timeout):
        while sum(len(s.queue) for s in gateway.sessions if s.thread_id == thread) != count:
            await asyncio.sleep(0.01)
