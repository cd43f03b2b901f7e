"""Which of Telegram's words stop a chat's work (`platforms.telegram_membership`): a ``my_chat_member`` of a bot
demoted or restricted but still a member stops nothing, nor does a write refused for a right the bot lacks (a
closed or deleted topic, no right to send text); Telegram's descriptions of a bot blocked, removed or whose chat is
gone do. A supergroup's removal is told under the id the gateway knows the chat by, the group's it was; a webhook
answers a removal the store refused 500, and Telegram's redelivery tells it."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import DeliveryError
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.test_telegram_chat_lost import GROUP, Lost, reply

RESTRICTED = {"status": "restricted", "until_date": 0, **dict.fromkeys((
    "can_send_messages", "can_send_audios", "can_send_documents", "can_send_photos", "can_send_videos",
    "can_send_video_notes", "can_send_voice_notes", "can_send_polls", "can_send_other_messages",
    "can_add_web_page_previews", "can_react_to_messages", "can_edit_tag", "can_change_info", "can_invite_users",
    "can_pin_messages", "can_manage_topics"), False)}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def started(fake) -> AsyncIterator[tuple[TelegramAdapter, Lost]]:
    adapter, lost = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1), Lost()
    adapter.bind_chat_lost(lost)
    await adapter.start(Sink())
    try:
        yield adapter, lost
    finally:
        await adapter.stop()


def membership(fake, chat_id: int, chat_type: str, new: dict, old_status: str = "member") -> int:
    """Queue Telegram's ``my_chat_member`` update of the bot's new status ``new`` in the chat."""
    return fake.push_update({"my_chat_member": {
        "chat": fake._chat(chat_id, chat_type), "from": {"id": 1, "is_bot": False, "first_name": "Admin"},
        "date": int(time.time()), "old_chat_member": {"status": old_status, "user": fake.bot_user},
        "new_chat_member": {"user": fake.bot_user, **new}}})


async def test_only_a_bot_no_longer_in_the_chat_stops_its_work(fake, started):
    adapter, lost = started
    membership(fake, GROUP, "supergroup", {"status": "member"}, old_status="administrator")  # demoted
    membership(fake, -1007, "supergroup", {**RESTRICTED, "is_member": True})  # muted, still there
    membership(fake, -1008, "channel", {"status": "left"})  # a channel it administered: nothing runs there
    membership(fake, -1009, "supergroup", {**RESTRICTED, "is_member": False})  # restricted and removed
    await fake.wait_for(lambda: not fake.pending and len(lost.told) == 2)
    assert lost.told == [("-1008", "the bot was removed from the chat"), ("-1009", "the bot was removed from the chat")]


@pytest.mark.parametrize("status,description,stops", [
    (403, "Forbidden: not enough rights to send text messages to the chat", False),
    (400, "Bad Request: not enough rights to send text messages to the chat", False),
    (403, "Forbidden: CHAT_WRITE_FORBIDDEN", False),
    (400, "Bad Request: TOPIC_CLOSED", False),
    (400, "Bad Request: message thread not found", False),
    (403, "Forbidden: bot can't initiate conversation with a user", False),
    (403, "Forbidden: need administrator rights in the channel chat", False),
    (400, "Bad Request: chat not found", False),
    (403, "Forbidden: bot is not a member of the supergroup chat", True),
    (403, "Forbidden: bot is not a member of the channel chat", True),
    (403, "Forbidden: the group chat was deleted", True),
    (403, "Forbidden: user is deactivated", True),
    (403, "Forbidden: bot was kicked from the group chat", True),
])
async def test_a_write_refused_stops_the_work_only_when_the_bot_is_gone_from_the_chat(
        fake, started, status, description, stops):
    adapter, lost = started
    fake.fail_next("sendMessage", status, description=description)
    with pytest.raises(DeliveryError):
        await adapter.send(reply(GROUP))
    # A refusal known to stop, in another chat: told after any the first made.
    fake.remove_bot(77, update=False)
    with pytest.raises(DeliveryError):
        await adapter.send(reply(77))
    await fake.wait_for(lambda: ("77", "bot was blocked by the user") in lost.told)
    told = [(str(GROUP), description.removeprefix("Forbidden: "))] if stops else []
    assert lost.told == [*told, ("77", "bot was blocked by the user")]


async def test_an_upgraded_groups_supergroup_is_told_by_the_groups_id(fake, started):
    adapter, lost = started
    old = -4242
    fake._chat(old, "group")
    new = fake.upgrade_group(old)
    fake.push_upgrade_updates(old)
    # Telegram tells the bot it joined the supergroup, and nothing of the group it left by the upgrade.
    membership(fake, new, "supergroup", {"status": "member"}, old_status="left")
    await fake.wait_for(lambda: not fake.pending)
    fake.remove_bot(new, update=False)
    with pytest.raises(DeliveryError):
        await adapter.send(reply(old))  # sent to the supergroup, refused there
    await fake.wait_for(lambda: lost.told)
    fake.remove_bot(new)  # the update comes after all: told already
    await fake.wait_for(lambda: not fake.pending)
    assert lost.told == [(str(old), "bot was kicked from the supergroup chat")]


async def test_a_webhook_answers_a_removal_the_store_refused_500_and_its_redelivery_tells_it(fake):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook",
                              webhook_url=f"http://127.0.0.1:{sock.getsockname()[1]}/telegram")
    lost = Lost()
    adapter.bind_chat_lost(lost)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await adapter.start(Sink())
        fake.remove_bot(42)
        update = fake.pending.pop()
        lost.refuse = 1
        assert await fake.deliver_webhook(update) == 500
        assert lost.told == []
        assert await fake.deliver_webhook(update) == 200
        assert await fake.deliver_webhook(update) == 200  # a 200 Telegram did not get: told once all the same
        assert lost.told == [("42", "the bot was blocked by the user")]
    finally:
        await adapter.stop()
        await runner.cleanup()
