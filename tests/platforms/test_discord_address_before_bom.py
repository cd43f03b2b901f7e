"""A U+FEFF (zero-width no-break space, a byte order mark pasted in) right after an address the model writes as
itself, on Discord. Markdown takes it into the address, and the renderer leaves it after the link; but Discord's
client reads it as a space (JavaScript's ``\\s`` holds U+FEFF, unlike Python's), so the address needs no ``<>``,
which would cost it its preview. The other invisible marks, which Discord takes in, still get them
(tests/platforms/test_address_invisible_marks.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.formatting import discord_markdown
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.test_address_invisible_marks import discord_links

ADDRESS = "https://example.com/a"
BOM = "\ufeff"

fake = fake_discord()


@pytest.mark.parametrize("markdown", [f"see {ADDRESS}{BOM} now", f"see {ADDRESS}{BOM}", f"see {ADDRESS}{BOM}!",
                                      f"**{ADDRESS}{BOM}**", f"ראה {ADDRESS}{BOM} עוד"])
def test_an_address_before_a_bom_stays_bare_and_keeps_its_preview(markdown: str) -> None:
    rendered = discord_markdown.render(markdown)
    assert f"{ADDRESS}{BOM}" in rendered and f"<{ADDRESS}>" not in rendered
    assert discord_links(rendered) == [ADDRESS]


def test_a_bom_within_an_address_is_the_address_own_and_discord_links_it_whole() -> None:
    # Markdown reads on past it; Discord's client would stop there, so this address goes between <>.
    rendered = discord_markdown.render(f"see {ADDRESS}{BOM}b now")
    assert discord_links(rendered) == [f"{ADDRESS}{BOM}b"]


@pytest.fixture
async def discord_adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = adapter_for(fake)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()
    await join_heartbeat_threads()


async def test_discord_gets_the_address_before_a_bom_bare(fake: FakeDiscord, discord_adapter: DiscordAdapter) -> None:
    channel = fake.dm_channel(42)
    await discord_adapter.send(Outbound(chat_id=channel, thread_id=None, text=f"see {ADDRESS}{BOM} now"))
    assert fake.bot_messages(channel)[-1].content == f"see {ADDRESS}{BOM} now"
