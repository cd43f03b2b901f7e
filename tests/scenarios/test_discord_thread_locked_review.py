"""Review probes: what the agent sends besides the final text (a file, a message of its own) in a locked thread."""

from __future__ import annotations

from pathlib import Path

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, THREAD, BOB = 500, 600, 701, 42

fake = fake_discord()


def config(tmp_path):
    return make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"discord": {"allow_all": True}},
                       display={"progress": "off"})


async def run(fake, tmp_path, first_step):
    (tmp_path / "state" / "workspace").mkdir(parents=True, exist_ok=True)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\n")
    model = ScriptedModel({"parent": [[{"wait": "bob", **first_step}, {"text": "done"}]]})
    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "numbers?", mention_bot=True, thread_id=THREAD)
        await model.reached("bob")
        fake.lock_thread(THREAD)
        model.release("bob")
        await fake.wait_for(lambda: any(m.content.endswith("done") for m in fake.bot_messages(CHANNEL)))
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()
    return fake.bot_messages(CHANNEL)


async def test_a_file_the_agent_sends_in_a_locked_thread_goes_to_the_channel(fake, tmp_path: Path):
    moved = await run(fake, tmp_path, {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv"}}]})
    assert [m.attachments[0]["filename"] for m in moved if m.attachments] == ["q3.csv"]
    assert moved[-1].content.endswith("done")
    assert any(m.pings.users == (str(BOB),) for m in moved)  # the asker is pinged once


async def test_a_message_the_agent_sends_in_a_locked_thread_goes_to_the_channel(fake, tmp_path: Path):
    moved = await run(fake, tmp_path, {"tool_calls": [{"name": "send_message", "arguments": {"text": "on it"}}]})
    assert [m.content.rsplit("\n", 1)[-1] for m in moved] == ["on it", "done"]
    assert moved[0].pings.users == (str(BOB),)

