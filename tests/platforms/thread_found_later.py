"""Two messages of a thread the bot was not asked in, the first handed over before Discord named its thread
(`DiscordAdapter._in_thread`: keyed (thread, no thread)), the second after (keyed (parent, thread)): what an edit or a
deletion of such a message must find under either key. Shared by the edit and deletion tests."""

from __future__ import annotations

from platforms.base import Inbound
from tests.platforms.test_discord_chat_lost import GUILD, THREAD, THREADED, USER
from tests.platforms.test_discord_unheld_thread import GET_CHANNEL, NEW, key, unheld


async def handed_over_before_and_after_the_thread_was_known(fake, sink) -> tuple[list[Inbound], str, str]:
    """The two messages as handed over, and the ids of the first and the second."""
    fake.push_guild_message(GUILD, THREADED, USER, "in a thread", mention_bot=True, thread_id=THREAD)
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
    await fake.wait_for(lambda: len(sink.inbound) == 1)
    release = fake.hold(GET_CHANNEL)
    try:
        first = unheld(fake, NEW, "first")
        await fake.wait_for(lambda: len(sink.inbound) == 2, timeout=2.0)  # past the look-up's bound
    finally:
        release.set()
    second = unheld(fake, NEW, "second")  # its look-up answered: the thread is known from now on
    await fake.wait_for(lambda: len(sink.inbound) == 3)
    assert [key(m) for m in sink.inbound[1:]] == [(str(NEW), None), (str(THREADED), str(NEW))]
    return sink.inbound[1:], first, second
