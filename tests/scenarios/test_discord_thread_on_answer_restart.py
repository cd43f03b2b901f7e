"""A thread a member opens on the bot's answer after a restart, on an answer the process before it posted: the new
process does not hold its id in memory, the gateway's outbox does (`platforms.base.RemembersAnswers`), so the thread's
messages are answered without a mention, as they were before the restart. The real discord.py client inside
`DiscordAdapter` against `FakeDiscord`, with the real `Gateway`, stopped and started on the same state."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, BOB, ALICE = 500, 600, 42, 43

fake = fake_discord()


def config(tmp_path):
    return make_config(tmp_path, platforms={"discord": {"allow_all": True}}, display={"progress": "off"})


async def test_a_thread_opened_after_a_restart_on_an_earlier_answer_is_answered_unmentioned(fake, tmp_path):
    model = ScriptedModel({"parent": [[{"text": "about 3 MB"}]]})  # each session's first turn
    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True)
        [answer] = await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
        await settled(gateway)
    finally:
        await gateway.stop()
        await join_heartbeat_threads()

    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer.id)
        [said] = await fake.wait_for(lambda: fake.bot_messages(answer.id))
        await settled(gateway)
    finally:
        await gateway.stop()
        await join_heartbeat_threads()
    assert said.content == "about 3 MB" and "and compressed?" in str(model.requests[-1].messages)
