"""Another bot's messages are never the Discord adapter's to answer, even when they mention or reply to
it: two bots answering each other's status lines would talk in a loop, filling the channel."""

from __future__ import annotations

from platforms.base import Outbound
from platforms.fakes import _discord_model
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, USER, OTHER_BOT = 500, 600, 42, 77

fake = fake_discord()


async def test_another_bots_mention_and_reply_are_not_taken(fake: FakeDiscord, monkeypatch) -> None:
    user = _discord_model._user
    monkeypatch.setattr(_discord_model, "_user", lambda uid, name=None, *, bot=False:
                        user(uid, name, bot=bot or uid == str(OTHER_BOT)))
    seen = []

    async def sink(inbound) -> None:
        seen.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [])
    try:
        fake.push_guild_message(GUILD, CHANNEL, OTHER_BOT, "what are you working on?", mention_bot=True)
        await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="⏳ Working — 12 s"))
        fake.push_guild_message(GUILD, CHANNEL, OTHER_BOT, "still working?", reply_to_bot=True)
        human = fake.push_guild_message(GUILD, CHANNEL, USER, "how far along?", mention_bot=True)
        await fake.wait_for(lambda: seen)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [(e.event_id, e.user_id) for e in seen] == [(human, str(USER))]
