"""A slash command's "thinking…" acknowledgement (`platforms.discord_commands.received`) when Discord's
answer to it is lost: the real discord.py client against the loopback fake."""

from __future__ import annotations

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads, running_discord

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
USER = 42

fake = fake_discord()


running = running_discord()


async def test_a_thinking_response_discord_took_but_answered_with_a_5xx_is_answered_in_place(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """discord.py sends the acknowledgement again after a 5xx, and Discord, which had taken the first,
    refuses it: "already acknowledged" (40060). The interaction shows "thinking…" all the same; answered
    in the channel instead, it showed "thinking…" until it failed, beside the answer."""
    adapter, got = running
    fake.fail_next(CALLBACK, 500, message="Internal Server Error", after=True)
    interaction = fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    [command] = got
    assert [c.status for c in fake.calls_to(CALLBACK)] == [500, 400]
    assert fake.interactions[interaction]["responses"] == [5] and command.reply_token is not None
    sent = await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                       idempotency_key="c1:0", reply_token=command.reply_token))
    [answer] = fake.bot_messages(command.chat_id)
    assert (answer.id, answer.content, answer.flags) == (sent.message_id, "No subagents.", 0)  # "thinking…" replaced
    assert fake.calls_to(FOLLOW_UP) == []


async def test_a_thinking_response_discord_never_answers_is_given_up_and_the_command_answered_in_the_channel(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """Unbounded, the acknowledgement waited for aiohttp's own limit (5 minutes) before the command was
    handed over, though Discord takes one within 3 seconds only: past its bound it goes on, keeping its
    interaction (Discord may have taken it), which Discord says it never took: answered in the channel."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake, acknowledge_timeout=0.2, interaction_window=0.2)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        fake.hold(CALLBACK)  # Discord never answers it
        fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: got)
        [command] = got
        assert command.reply_token is not None and len(fake.calls_to(CALLBACK)) == 1
        assert ("could not acknowledge /agents from user 42 (NetworkError); Discord may have taken it"
                in caplog.text)
        sent = await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                           idempotency_key="c1:0", reply_token=command.reply_token))
        [answer] = fake.bot_messages(command.chat_id)
        assert (answer.id, answer.content) == (sent.message_id, "No subagents.")
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
