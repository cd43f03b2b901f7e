"""A slash command used in a thread: the real discord.py client against the loopback fake, which sends the
thread as the interaction's channel, as Discord does."""

from __future__ import annotations

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, running_discord

GUILD, CHANNEL, THREAD, USER = 900, 901, 902, 42

fake = fake_discord()


running = running_discord(command_guilds=(GUILD,))


async def test_a_command_in_a_thread_is_the_threads_and_its_answers_go_there(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    adapter, got = running
    fake.push_guild_message(GUILD, CHANNEL, USER, "hello", mention_bot=True, thread_id=THREAD)
    await fake.wait_for(lambda: got)
    fake.push_interaction("agents", USER, THREAD, guild=GUILD)
    await fake.wait_for(lambda: len(got) == 2)
    command = got[1]
    assert (command.chat_id, command.thread_id, command.is_private) == (str(CHANNEL), str(THREAD), False)
    sent = await adapter.send(Outbound(command.chat_id, command.thread_id, "No subagents.", kind="command",
                                       idempotency_key="c1:0", reply_token=command.reply_token))
    assert [(m.id, m.content) for m in fake.bot_messages(THREAD)] == [(sent.message_id, "No subagents.")]
    assert fake.bot_messages(CHANNEL) == []
    expired = await adapter.send(Outbound(command.chat_id, command.thread_id, "Later.", kind="command",
                                          idempotency_key="c1:1", reply_token=f"{fake.application_id}:gone"))
    assert [m.id for m in fake.bot_messages(THREAD)] == [sent.message_id, expired.message_id]  # not the channel
