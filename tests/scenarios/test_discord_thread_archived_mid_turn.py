"""A Discord thread that archives itself while the bot's turn runs there: the real discord.py client inside
`DiscordAdapter` against `FakeDiscord` (which refuses an edit in an archived thread, 400 50083 "Thread is archived",
and unarchives one on a post, as Discord does), with the real `Gateway`. The answer still arrives in the thread,
once, quoting the question, and the "still working" notice Discord will not edit there is posted anew."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, THREAD, BOB = 500, 600, 701, 42
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"

fake = fake_discord()


async def test_a_thread_archived_mid_turn_still_gets_the_answer_and_is_unarchived(fake, tmp_path):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "answer for bob"}]]})
    config = make_config(tmp_path, platforms={"discord": {"allow_all": True}}, display={"progress": "off"},
                         agent={"gateway_notify_interval": 0.05})
    gateway = await start_gateway(config, [adapter_for(fake)], model=model)
    try:
        await archived_mid_turn(fake, gateway, model)
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()


async def archived_mid_turn(fake, gateway, model) -> None:
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True,
                                   thread_id=THREAD)
    await model.reached("bob")
    await fake.wait_for(lambda: fake.bot_messages(THREAD))  # the "still working" notice
    fake.archive_thread(THREAD)
    await fake.wait_for(lambda: [c for c in fake.calls_to(EDIT) if c.status == 400])
    model.release("bob")
    await fake.wait_for(lambda: "answer for bob" in [m.content for m in fake.bot_messages(THREAD)])
    await settled(gateway)
    answers = [m for m in fake.bot_messages(THREAD) if m.content == "answer for bob"]
    assert [m.reply_to for m in answers] == [bobs]
    assert fake._guilds[str(GUILD)]["threads"][str(THREAD)]["thread_metadata"]["archived"] is False
