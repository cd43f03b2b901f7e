"""Who sees an interaction's answers on the fake Discord, as on Discord: the deferral (or first response) fixes
the visibility of what replaces its "thinking…", a follow-up sent while "thinking…" shows replaces it with that
visibility whatever its own flags, and only a follow-up sent after that (or once the deferred response is
deleted) is ephemeral by its own flag 64. Driven by discord.py's own interaction API, against the fake."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from platforms.discord_urls import claim, discord
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, join_heartbeat_threads

EPHEMERAL = 64
USER = 42

fake = fake_discord()
Answer = Callable[[discord.Interaction], Awaitable[None]]


@pytest.fixture
async def answering(fake: FakeDiscord) -> AsyncIterator[dict[str, Answer]]:
    """A bare discord.py client on the fake, its slash commands answered as the test puts them in the dict."""
    answers: dict[str, Answer] = {}
    override = claim(fake.api_base)
    override.set_gateway(fake.gateway_url)
    client = fake.client_factory(intents=discord.Intents.none())
    tree = discord.app_commands.CommandTree(client)
    for name in ("public", "hidden", "late", "deleted"):
        async def callback(interaction: discord.Interaction, name: str = name) -> None:
            await answers[name](interaction)
        tree.add_command(discord.app_commands.Command(name=name, description=name, callback=callback))
    ready = asyncio.Event()
    client.event(_set_on_ready(ready))
    await client.login(fake.token)
    running = asyncio.create_task(client.connect(reconnect=False))
    try:
        await asyncio.wait_for(ready.wait(), 5)
        yield answers
    finally:
        await client.close()
        await asyncio.gather(running, return_exceptions=True)
        override.release()
        await join_heartbeat_threads()


def _set_on_ready(ready: asyncio.Event) -> Callable[[], Awaitable[None]]:
    async def on_ready() -> None:
        ready.set()
    return on_ready


async def answered(fake: FakeDiscord, name: str, count: int) -> list[tuple[str, bool]]:
    """Push ``/name`` and wait for ``count`` messages of the bot in the DM: (content, ephemeral) of each."""
    fake.push_interaction(name, USER)
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: len([m for m in fake.bot_messages(dm) if m.content]) >= count)
    return [(m.content, bool(m.flags & EPHEMERAL)) for m in fake.bot_messages(dm)]


async def test_an_ephemeral_deferral_keeps_its_answer_to_the_user(fake: FakeDiscord,
                                                                 answering: dict[str, Answer]) -> None:
    async def hidden(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send("only you", ephemeral=False)  # replaces "thinking…": stays ephemeral

    answering["hidden"] = hidden
    assert await answered(fake, "hidden", 1) == [("only you", True)]


async def test_the_first_follow_up_of_a_public_deferral_is_public_whatever_its_flag(
        fake: FakeDiscord, answering: dict[str, Answer]) -> None:
    async def public(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send("for all", ephemeral=True)
        await interaction.followup.send("for you", ephemeral=True)

    answering["public"] = public
    assert await answered(fake, "public", 2) == [("for all", False), ("for you", True)]


async def test_a_public_deferral_deleted_lets_a_follow_up_be_ephemeral(fake: FakeDiscord,
                                                                      answering: dict[str, Answer]) -> None:
    async def deleted(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.delete_original_response()
        await interaction.followup.send("not allowed", ephemeral=True)

    answering["deleted"] = deleted
    assert await answered(fake, "deleted", 1) == [("not allowed", True)]


async def test_an_ephemeral_first_response_says_so(fake: FakeDiscord, answering: dict[str, Answer]) -> None:
    said: list[bool] = []

    async def late(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("just you", ephemeral=True)
        said.append((await interaction.original_response()).flags.ephemeral)

    answering["late"] = late
    assert await answered(fake, "late", 1) == [("just you", True)]
    await fake.wait_for(lambda: said)
    assert said == [True]
