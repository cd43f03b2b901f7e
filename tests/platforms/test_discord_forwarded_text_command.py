"""A forwarded Discord message is a message, never a command (`Inbound.forwarded`), though its text is ``!stop``:
one the gateway fails on (a bug it trips) is dropped without a word, as any message is. The adapter read its text
alone, took it for a text command and answered "could not handle `!stop`", to a user who had run no command. The
real discord.py against the loopback fake."""

from __future__ import annotations

from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from platforms.not_recorded import NOT_HANDLED
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42

fake = fake_discord()


class FailsOnOdd:
    """A gateway that a bug makes fail on every event whose text ends with "odd"."""

    def __init__(self) -> None:
        self.taken: list[str] = []

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text.endswith("odd"):
            raise ValueError("a bug an odd event trips")
        self.taken.append(inbound.text)


async def test_a_forwarded_text_command_the_gateway_fails_on_is_not_answered_as_a_command(fake: FakeDiscord) -> None:
    adapter, sink = adapter_for(fake), FailsOnOdd()
    dm = fake.dm_channel(USER)
    await adapter.start(sink, [CommandSpec("stop", "Stop the current turn")])
    try:
        fake.push_dm(USER, "!stop odd", forwarded=True)
        fake.push_dm(USER, "/stop odd", forwarded=True)
        fake.push_dm(USER, "!stop odd")  # typed: a command, answered as before
        fake.push_dm(USER, "next")
        await fake.wait_for(lambda: sink.taken == ["next"] and fake.bot_messages(dm))
    finally:
        await adapter.stop()  # waits for the answers under way
        await join_heartbeat_threads()
    assert [m.content for m in fake.bot_messages(dm)] == [NOT_HANDLED.format(command="!stop")]
