"""A long formatted answer end to end: the gateway's outbox splits the agent's Markdown, each
adapter renders every part, and the real SDKs deliver them to the fakes. Every part fits the
platform's limit as the platform counts it, and styles, code and tables survive the cuts."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.testing import make_config, start_gateway
from platforms.base import utf16_length
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads

BOLD = "**" + " ".join(f"bold{i}" for i in range(900)) + "**"  # ~6,300 characters of one bold span
CODE = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(150)) + "\n```"
TABLE = "| name | stock |\n|---|---|\n" + "\n".join(f"| item{i} | {i} widgets on shelf {i % 7} |"
                                                  for i in range(300))
REPLY = f"Intro with a [link](https://example.com).\n\n{BOLD}\n\n{CODE}\n\n{TABLE}\n\nThe end."


@pytest.fixture
async def telegram(tmp_path) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], script={"parent": [[{"text": REPLY}]]})
        yield fake
        await gateway.stop(grace=0)


@pytest.fixture
async def discord_chat(tmp_path) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        config = make_config(tmp_path, platforms={"discord": {"allow_all": True}})
        adapter = adapter_for(fake)
        gateway = await start_gateway(config, [adapter], script={"parent": [[{"text": REPLY}]]})
        yield fake
        await gateway.stop(grace=0)
        await join_heartbeat_threads()


async def test_telegram_parts_fit_4096_units_after_parsing_and_keep_their_styles(telegram: FakeTelegram) -> None:
    fake = telegram
    fake.push_message(42, "write a lot")
    await fake.wait_for(lambda: fake.messages["42"] and fake.messages["42"][-1]["text"].endswith("The end."),
                        timeout=20)
    parts = fake.messages["42"]
    assert len(parts) >= 4
    assert all(utf16_length(p["text"]) <= 4096 and p["parse_mode"] == "HTML" for p in parts)
    bold = [p for p in parts if any(e["type"] == "bold" for e in p["entities"])]
    assert len(bold) >= 2  # the bold span crossed a cut: closed, then reopened
    bold_words = [w for p in bold for e in p["entities"] if e["type"] == "bold"
                  for w in p["text"][e["offset"]:e["offset"] + e["length"]].split()]
    assert bold_words == [f"bold{i}" for i in range(900)]
    code = [e for p in parts for e in p["entities"] if e["type"] == "pre" and e.get("language") == "python"]
    assert len(code) >= 1
    lines = [line for p in parts for line in p["text"].splitlines()]
    assert [line for line in lines if line.startswith("value_")] == [f"value_{i} = compute({i})"
                                                                  for i in range(150)]
    rows = [line for line in lines if line.startswith("item")]
    assert [r.split()[0] for r in rows] == [f"item{i}" for i in range(300)]
    headers = [line for line in lines if line.startswith("name ")]
    assert len(headers) >= 2  # the table continued in a later part under its header
    assert len(fake.calls_to("sendMessage")) == len(parts)  # none refused: not too long, no parse error


async def test_discord_parts_fit_2000_characters_of_content(discord_chat: FakeDiscord) -> None:
    fake = discord_chat
    channel = fake.dm_channel(7)
    fake.push_dm(7, "write a lot")
    await fake.wait_for(lambda: fake.bot_messages(channel)
                        and fake.bot_messages(channel)[-1].content.endswith("The end."), timeout=20)
    parts = [m.content for m in fake.bot_messages(channel)]
    assert len(parts) >= 8 and all(len(p) <= 2000 for p in parts)
    assert all(p.count("```") % 2 == 0 and p.count("**") % 2 == 0 for p in parts)
    assert sum(p.count("```python") for p in parts) >= 2
