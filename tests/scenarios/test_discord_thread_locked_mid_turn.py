"""A Discord thread a moderator locks while the bot's turn runs there: the real discord.py client inside
`DiscordAdapter` against `FakeDiscord` (which refuses the bot's post in a locked thread, 403 50083, as Discord does
for a bot without Manage Threads), with the real `Gateway`. The answer is not lost: it is posted in the thread's
channel, naming the thread and pinging the asker, once: its post's answer lost, the outbox finds it by its nonce
rather than post it again, and a restart posts nothing more."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, THREAD, BOB = 500, 600, 701, 42
IN_CHANNEL = f"POST /channels/{CHANNEL}/messages"

fake = fake_discord()


def config(tmp_path):
    return make_config(tmp_path, platforms={"discord": {"allow_all": True}}, display={"progress": "off"})


async def test_an_answer_in_a_thread_locked_mid_turn_goes_to_its_channel_once(fake, tmp_path):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "answer for bob"}]]})
    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True, thread_id=THREAD)
        await model.reached("bob")
        fake.lock_thread(THREAD)
        # Posted, but its answer lost (the connection reset): the gateway cannot know that it was.
        fake.fail_next(IN_CHANNEL, after=True, drop=True)
        model.release("bob")
        await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()

    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        await settled(gateway)
    finally:
        await gateway.stop()  # a graceful stop flushes the outbox: a second copy, were one pending, would go now
        await join_heartbeat_threads()
    moved = fake.bot_messages(CHANNEL)
    assert [m.content for m in moved] == [
        f"**↪ For <@{BOB}>, from <#{THREAD}>** (the thread is locked):\nanswer for bob"]
    assert moved[0].pings.users == (str(BOB),)
    assert fake.bot_messages(THREAD) == []
    # One post in the channel, its answer dropped: the retry found it by its nonce rather than post it again.
    assert [c.status for c in fake.calls if c.method == "POST" and c.path == f"/channels/{CHANNEL}/messages"] == [0]
