"""Messages for the bot in a thread discord.py does not hold, and the gateway did not know, that came together: the
first is asked of Discord (``GET /channels/{id}``), and those queued behind it join the thread's conversation by
what that told, without asking again (`platforms.discord.DiscordAdapter._in_thread`): a burst cost a request, and
a wait of the one consumer, per message. Real discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.fakes.discord import _user
from tests.discord_client import fake_discord
from tests.platforms import test_discord_unheld_thread as unheld_thread
from tests.platforms.test_discord_chat_lost import GUILD, MARKER, THREADED, USER
from tests.platforms.test_discord_unheld_thread import GET_CHANNEL, NEW, key, unheld

fake = fake_discord()
started = unheld_thread.started


async def test_a_burst_in_an_unknown_thread_asks_discord_once(fake, started):
    got, _ = started
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
    release = fake.hold(GET_CHANNEL)
    unheld(fake, NEW, "first")
    await fake.wait_for(lambda: fake.calls_to(GET_CHANNEL))
    for text in ("second", "third"):  # discord.py still holds no such thread
        data = fake._message_payload(str(NEW), str(USER), None, f"<@{fake.bot_id}> {text}", guild=str(GUILD))
        data["mentions"] = [_user(fake.bot_id, fake.bot_name, bot=True)]
        fake._dispatch("MESSAGE_CREATE", data)
    fake.push_dm(MARKER, "said after them")
    release.set()
    await fake.wait_for(lambda: len(got) == 5)
    assert [m.text for m in got[1:]] == ["first", "second", "third", "said after them"]
    assert {key(m) for m in got[1:4]} == {(str(THREADED), str(NEW))}
    assert len(fake.calls_to(GET_CHANNEL)) == 1
