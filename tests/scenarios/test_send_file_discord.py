"""``send_file`` on Discord, end to end: the real discord.py client posts the file to the fake as a
multipart message create (``payload_json`` + ``files[0]``) in the chat's thread, the caption as
its content, up to the guild's upload limit (10 MiB without boosts, more once boosted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads

MIB = 1024 * 1024


def sending(*files: tuple[str, str | None]) -> ScriptedModel:
    steps = [{"tool_calls": [{"name": "send_file", "arguments": {"path": path} | ({"caption": c} if c else {})}]}
             for path, c in files]
    return ScriptedModel({"parent": [[*steps, {"text": "done"}]]})


def tool_results(model: ScriptedModel) -> list[str]:
    return [str(m.get("content")) for m in model.requests[-1].messages if m.get("role") == "tool"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
    assert fake.errors == []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    return tmp_path / "state" / "workspace"


@pytest.fixture
async def start(tmp_path, fake: FakeDiscord):
    started = []

    async def start_(model: ScriptedModel):
        config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"discord": {"allow_all": True}})
        adapter = adapter_for(fake)
        started.append(await start_gateway(config, [adapter], model=model))
        return started[-1]

    yield start_
    for gateway in started:
        await gateway.stop(grace=0)
    await join_heartbeat_threads()


async def test_a_file_is_posted_in_the_thread_with_its_caption_and_the_parts_nonce(fake, start, workspace):
    (workspace / "q3.csv").write_text("region,total\n")
    gateway = await start(sending(("q3.csv", "**Q3**\n| a | b |\n|---|---|\n| 1 | 2 |")))
    fake.push_guild_message(7, 70, 5, "numbers?", mention_bot=True, thread_id=71)
    await fake.wait_for(lambda: len(fake.bot_messages(71)) == 2)
    await settled(gateway)
    posted, reply = fake.bot_messages(71)
    [attachment] = posted.attachments
    assert (attachment["filename"], fake.attachment_data[attachment["id"]]) == ("q3.csv", b"region,total\n")
    assert posted.content == "**Q3**\n\n```\na | b\n--+--\n1 | 2\n```"  # rendered as any reply: the table a code block
    assert reply.content == "done" and fake.bot_messages(70) == []
    [call] = [c for c in fake.calls_to("POST /channels/{channel_id}/messages") if c.body.get("files")]
    assert call.headers["Content-Type"].startswith("multipart/form-data")
    assert call.body["files"] == ["q3.csv"] and call.body["nonce"] == posted.nonce and call.body["enforce_nonce"]


async def test_the_limit_is_the_guilds_10_mib_unless_boosted(fake, start, workspace):
    (workspace / "big.bin").write_bytes(b"x" * (10 * MIB + 1))
    send = {"tool_calls": [{"name": "send_file", "arguments": {"path": "big.bin"}}]}
    model = ScriptedModel({"parent": [[send, {"text": "done"}], [send, {"text": "sent"}]]})
    gateway = await start(model)
    fake.push_guild_message(7, 70, 5, "send it", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(70))
    await settled(gateway)
    assert "'big.bin' is 10,485,761 bytes, larger than the 10,485,760 bytes a file sent on discord may be" \
        in tool_results(model)[0]
    fake.boost(7, 2)  # 50 MiB now
    fake.push_guild_message(7, 70, 5, "now?", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(70)) == 3, timeout=15)
    await settled(gateway)
    assert [m.attachments[0]["size"] if m.attachments else m.content for m in fake.bot_messages(70)] == [
        "done", 10 * MIB + 1, "sent"]


async def test_a_caption_of_only_invisible_characters_goes_as_no_content(fake, start, workspace):
    # Zero-width space and joiner, a Braille blank: Discord showed them as an empty line above the file.
    (workspace / "q3.csv").write_text("region,total\n")
    gateway = await start(sending(("q3.csv", "\u200b\u200d\u2800")))
    fake.push_guild_message(7, 70, 5, "numbers?", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(70)) == 2)
    await settled(gateway)
    posted, reply = fake.bot_messages(70)
    assert (len(posted.attachments), posted.content, reply.content) == (1, "", "done")
    [call] = [c for c in fake.calls_to("POST /channels/{channel_id}/messages") if c.body.get("files")]
    assert call.body.get("content") is None
