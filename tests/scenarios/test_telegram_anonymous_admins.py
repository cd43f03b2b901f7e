"""A group's anonymous admins (writing *as the group*, ``from`` GroupAnonymousBot) across the group's
upgrade to a supergroup: the gateway keeps knowing them by the group's id, as it keeps the chat."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

BOT = "sb_anonymous_admins_bot"
GROUP = -4001


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def texts(fake: FakeTelegram, chat: int | str) -> list[str]:
    return [m["text"] for m in fake.messages[str(chat)]]


async def test_the_anonymous_admins_a_group_allowed_are_still_answered_once_it_is_a_supergroup(
        fake: FakeTelegram, tmp_path) -> None:
    # They write as the supergroup after the upgrade: taken by its new id, the admins were refused at
    # once (the id the operator allowed was the group's), and the refusal named an id the operator
    # never saw before; a /stop of theirs no longer counted what they had waiting as their own.
    model = ScriptedModel({"parent": [[{"text": "hello admins"}], [{"text": "still here"}]]})
    config = make_config(tmp_path, platforms={"telegram": {"allowed_users": [GROUP]}})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=model)
    try:
        fake.push_message(GROUP, f"@{BOT} status?", chat_type="group", sender_chat=GROUP)
        await fake.wait_for(lambda: texts(fake, GROUP))
        supergroup = fake.upgrade_group(GROUP)
        fake.push_upgrade_updates(GROUP)
        fake.push_message(supergroup, f"@{BOT} and now?", chat_type="supergroup", sender_chat=supergroup)
        await fake.wait_for(lambda: texts(fake, supergroup))
        await fake.wait_for(lambda: not fake.pending)
        await settled(gateway)
        assert texts(fake, GROUP) == ["hello admins"]
        assert texts(fake, supergroup) == ["still here"]
        assert len(model.requests) == 2
    finally:
        await gateway.stop(grace=0)
