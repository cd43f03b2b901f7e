"""`Inbound.reply_to` of Discord messages: the message a reply (type 19) replies to; none for a forward, which
references the message it forwards without replying to it, nor for a plain message. The real discord.py client
inside `DiscordAdapter` against `FakeDiscord`."""

from __future__ import annotations

from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, running_discord

GUILD, CHANNEL, USER = 500, 600, 42

fake = fake_discord()
running = running_discord()


async def test_a_reply_names_the_message_it_replies_to_and_a_forward_or_plain_message_none(
        fake: FakeDiscord, running) -> None:
    _, got = running
    fake.push_guild_message(GUILD, CHANNEL, USER, "hello", mention_bot=True)
    fake.push_dm(USER, "a forwarded note", forwarded=True)
    fake.push_guild_message(GUILD, CHANNEL, USER, "about that", reply_to_bot=True)
    await fake.wait_for(lambda: len(got) == 3)
    [answered] = [m for m in fake.messages[str(CHANNEL)] if m.from_bot]  # the fake's stand-in for the bot's answer
    assert [(i.text, i.reply_to) for i in got] == [
        ("hello", None), ("a forwarded note", None), ("about that", answered.id)]
