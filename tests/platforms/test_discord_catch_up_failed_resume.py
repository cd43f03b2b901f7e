"""A connection lost while the process runs, whose RESUME Discord refuses (the session gone): discord.py
IDENTIFYs afresh, and nothing said meanwhile is sent again. The catch-up at that later READY reads it back,
as the first READY's does (`platforms.discord_catch_up`). The real discord.py client against `FakeDiscord`."""

from __future__ import annotations

from collections import Counter

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Inbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, USER = 500, 600, 42
HISTORY = "GET /channels/{channel_id}/messages"

fake = fake_discord()


class Sink:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.events: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)

    async def has(self, event_id: str) -> None:
        await self.fake.wait_for(lambda: any(e.event_id == event_id for e in self.events))


def identifies(fake: FakeDiscord) -> int:
    return sum(op == 2 for op, _ in fake.gateway_ops)


async def lose_the_session(fake: FakeDiscord, texts: list[str]) -> list[str]:
    """The connection drops with its session gone, ``texts`` are said meanwhile (a DM each, and a mention in
    the channel after the first); returns their event ids once a new session has begun."""
    sessions = identifies(fake)
    assert fake._session is not None
    fake._session.valid = False  # Discord forgot it: the RESUME that follows is refused (op 9), a new IDENTIFY
    fake.drop_socket()
    said = [fake.push_dm(USER, texts[0]),
            fake.push_guild_message(GUILD, CHANNEL, USER, f"{texts[0]} here too", mention_bot=True),
            *(fake.push_dm(USER, text) for text in texts[1:])]
    await fake.wait_for(lambda: identifies(fake) == sessions + 1)
    return said


async def test_each_later_session_after_a_refused_resume_hands_over_what_was_said_meanwhile_once_in_order(
        fake: FakeDiscord) -> None:
    sink = Sink(fake)
    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        await sink.has(fake.push_dm(USER, "one"))
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True))
        first = await lose_the_session(fake, ["two", "three"])
        for event_id in first:
            await sink.has(event_id)
        live = fake.push_dm(USER, "four")
        await sink.has(live)
        second = await lose_the_session(fake, ["five", "six"])  # and again: not only the first reconnect
        for event_id in second:
            await sink.has(event_id)
        last = fake.push_dm(USER, "seven")
        await sink.has(last)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 6, 2, 6, 2]  # resumes refused, new sessions
    missed = {*first, *second}
    assert all(n == 1 for e, n in Counter(e.event_id for e in sink.events).items() if e in missed)
    # A message that came live after a catch-up began may be read back too: the inbox drops the second.
    heard = list(dict.fromkeys((e.event_id, e.text) for e in sink.events))
    assert [text for _, text in heard if text != "hi" and "here too" not in text] == [
        "one", "two", "three", "four", "five", "six", "seven"]
    assert [text for _, text in heard if text == "hi" or "here too" in text] == ["hi", "two here too", "five here too"]
    assert len(fake.calls_to(HISTORY)) == 4  # at each new session, the DM and the channel
