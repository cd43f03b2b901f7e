"""End to end on Telegram, webhook mode: an album posted in a supergroup right after the upgrade that
made it, delivered before Telegram's service messages of the upgrade. Like a single message, it
waits for them and goes on with the group's conversation (`platforms.telegram_moves`)."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from platforms.fakes._waiting import wait_until
from tests.platforms.test_telegram_files import PNG
from tests.scenarios.telegram_webhook_gateway import webhook_gateway
from tests.scenarios.test_telegram_chat import BOT, fake, gateways, texts  # noqa: F401  (fixtures)
from tests.scenarios.test_telegram_upgrade import GROUP, PACED, remembers_the_word


async def test_an_album_delivered_before_the_upgrade_goes_on_with_the_group(fake, gateways):  # noqa: F811
    # It started a conversation of its own under the supergroup's id: the album's hand-over never
    # waited for the upgrade, as a single message does.
    async with webhook_gateway(gateways, ScriptedModel({"parent": remembers_the_word})) as (gateway, adapter):
        told = fake.message_update(GROUP, f"@{BOT} the word is teal", chat_type="group", user_id=5, username="bob")
        assert await fake.deliver_webhook(told) == 200
        await fake.wait_for(lambda: texts(fake, GROUP) == ["noted"])

        supergroup = fake.upgrade_group(GROUP)
        in_group, in_supergroup = fake.upgrade_updates(GROUP)  # the supergroup's message 1, written first
        album = fake.album_updates(supergroup, [PNG, PNG + b"2"], caption=f"@{BOT} what was the word?",
                                   chat_type="supergroup", user_id=5, username="bob")
        delivering = [asyncio.create_task(fake.deliver_webhook(update)) for update in album]
        inbox = gateway.store.inbox
        # Gathered (a second without a new item), then handed over: waiting for the upgrade, or recorded.
        event = f"{fake.bot_user['id']}:{album[0]['update_id']}"  # Telegram's event ids name the bot too
        await wait_until(lambda: adapter.upgrade_wait.held or inbox.received_at("telegram", event) is not None, 10.0)
        assert await fake.deliver_webhook(in_supergroup) == 200
        assert await fake.deliver_webhook(in_group) == 200
        assert await asyncio.gather(*delivering) == [200, 200]

        await fake.wait_for(lambda: texts(fake, supergroup), PACED)
        await gateways.quiet()
        assert texts(fake, supergroup) == ["remembered: teal"]
        # Written in the supergroup, handed over under the group's id: its captioned item is quoted there.
        assert [m["reply_to"] for m in fake.messages[str(supergroup)]] == [album[0]["message"]["message_id"]]
        assert gateway.sessions.find("telegram", str(supergroup), None) is None  # no conversation of its own
