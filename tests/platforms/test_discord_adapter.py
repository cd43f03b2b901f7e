"""The Discord adapter, driving the real discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from platforms import discord_urls
from platforms.base import (
    Adapter,
    BadRequest,
    CommandSpec,
    DeliveryError,
    Forbidden,
    Inbound,
    MessageTooLong,
    NotFound,
    Outbound,
    OutboundFile,
    RateLimited,
)
from platforms.discord import DiscordAdapter, DiscordStartError
from platforms.fakes.discord import FLAG_LOADING, FakeDiscord, Pings, Upload
from platforms.not_recorded import MAY_BE_TAKEN
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

import discord  # noqa: E402  (after platforms.discord_urls, which imports it without the audioop warning)

COMMANDS = [CommandSpec("stop", "Stop the current turn"), CommandSpec("new", "Start a new session"),
            CommandSpec("agents", "List running subagents")]
SEND = "POST /channels/{channel_id}/messages"
CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
EPHEMERAL = 64
"""A message flag: the interaction's user alone sees it."""
GUILD, CHANNEL, USER = 500, 600, 42


class Sink:
    """Records every Inbound, with how many interaction callbacks the fake had seen by then."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.events: list[Inbound] = []
        self.callbacks_seen: list[int] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)
        self.callbacks_seen.append(len(self.fake.calls_to(CALLBACK)))

    async def wait(self, count: int) -> list[Inbound]:
        await self.fake.wait_for(lambda: len(self.events) >= count)
        return self.events


Running = tuple[DiscordAdapter, Sink]


fake = fake_discord()


@pytest.fixture
async def running(fake: FakeDiscord) -> AsyncIterator[Running]:
    adapter, sink = adapter_for(fake), Sink(fake)
    await adapter.start(sink, COMMANDS)
    try:
        yield adapter, sink
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


def test_adapter_surface() -> None:
    adapter = DiscordAdapter("token")
    assert isinstance(adapter, Adapter)
    assert (adapter.name, adapter.text_limit, adapter.typing_interval) == ("discord", 2000, 8.0)
    assert adapter.measure("héllo") == 5
    assert adapter.tier.interim_assistant_messages and adapter.tier.long_running_notifications
    assert adapter.tier.messaging
    assert adapter.web_routes() == ()


async def test_dm_becomes_inbound(fake: FakeDiscord, running: Running) -> None:
    _, sink = running
    message_id = fake.push_dm(USER, "hello there", name="ada")
    [inbound] = await sink.wait(1)
    assert inbound == Inbound(platform="discord", chat_id=fake.dm_channel(USER), thread_id=None,
                              user_id=str(USER), user_name="ada", text="hello there", event_id=message_id,
                              is_private=True, sent_at=inbound.sent_at, message_id=message_id)
    assert inbound.sent_at is not None and abs(inbound.sent_at - time.time()) < 60  # read from the snowflake


async def test_own_messages_are_ignored(fake: FakeDiscord, running: Running) -> None:
    adapter, sink = running
    channel = fake.dm_channel(USER)
    await adapter.send(Outbound(chat_id=channel, thread_id=None, text="from the bot"))
    fake.push_dm(USER, "from the user")
    events = await sink.wait(1)
    assert [e.text for e in events] == ["from the user"]


async def test_a_start_does_not_warn_of_voice_support_the_gateway_never_uses(fake: FakeDiscord, monkeypatch, caplog) -> None:
    # discord.py warns once per process that PyNaCl and davey are missing; set again here, as in a
    # fresh process, since an earlier test's client has already spent the warnings.
    monkeypatch.setattr(discord.VoiceClient, "warn_nacl", True)
    monkeypatch.setattr(discord.VoiceClient, "warn_dave", True, raising=False)
    caplog.set_level(logging.WARNING, logger="discord")
    adapter = adapter_for(fake)
    await adapter.start(Sink(fake), COMMANDS)
    try:
        assert [r.getMessage() for r in caplog.records if "voice" in r.getMessage()] == []
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


class FailsOnOdd(Sink):
    """A gateway that a bug makes refuse one message, whatever the try."""

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text == "odd":
            raise ValueError("a bug one odd message trips")
        await super().__call__(inbound)


async def test_a_message_the_gateway_refuses_for_its_own_sake_is_dropped_not_retried_forever(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # Handing it over again would fail alike at every try, and every later message would wait behind it.
    adapter, sink = adapter_for(fake), FailsOnOdd(fake)
    await adapter.start(sink, COMMANDS)
    try:
        odd = fake.push_dm(USER, "odd")
        fake.push_dm(USER, "next")
        [after] = await sink.wait(1)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert after.text == "next"
    [refused] = [r for r in caplog.records if r.name == "platforms.discord" and r.levelno >= logging.WARNING]
    assert refused.getMessage() == f"discord: the gateway refused event {odd}" and refused.exc_info is not None


class FullDisk(Sink):
    """A gateway whose state database cannot be written: SQLite's own refusal, at every try."""

    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(fake)
        self.tries = 0
        self._db = sqlite3.connect(":memory:", isolation_level=None)
        self._db.execute("CREATE TABLE inbox (text)")
        self._db.execute("PRAGMA max_page_count=2")

    async def __call__(self, inbound: Inbound) -> None:
        self.tries += 1
        self._db.execute("INSERT INTO inbox VALUES (?)", ("x" * 50_000,))


async def test_a_stop_does_not_wait_on_a_message_the_full_database_keeps_refusing(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # The stop's grace is the gateway's to share (turns, the outbox's flush); handing the message
    # over again until the drain's own 5 s ran out spent them, past a grace under 5 s.
    adapter, sink = adapter_for(fake), FullDisk(fake)
    await adapter.start(sink, COMMANDS)
    try:
        message = fake.push_dm(USER, "hello")
        await fake.wait_for(lambda: sink.tries >= 1)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await adapter.stop()
        assert loop.time() - began < 2.0
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    lost = [r.getMessage() for r in caplog.records if r.name == "platforms.discord" and r.levelno >= logging.WARNING]
    assert lost[-1].startswith(f"discord: event {message} was not recorded (OperationalError: database or disk is full)"
                               " and the gateway stops: a message is looked for again at the next start, a command is answered"
                               " to send it again")


class FullFor(FullDisk):
    """A gateway whose full database refuses one message's record, until ``full`` is turned off, and
    takes the rest: room comes and goes as other writers free and take it."""

    def __init__(self, fake: FakeDiscord, text: str) -> None:
        super().__init__(fake)
        self.text, self.full = text, True

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text == self.text and self.full:
            await super().__call__(inbound)
        self.events.append(inbound)


async def test_a_message_after_one_a_stop_left_unrecorded_waits_behind_it_for_the_next_start(
        fake: FakeDiscord) -> None:
    # Recorded at the stop's drain, the later message moved its channel's last seen past the one given
    # up: the next start's catch-up looked only after it, and the first message was lost.
    seen: dict[str, str] = {}
    adapter, sink = adapter_for(fake), FullFor(fake, "first")
    adapter.bind_last_seen({}, seen.__setitem__, seen.get)
    await adapter.start(sink, COMMANDS)
    try:
        fake.push_dm(USER, "hello")
        await sink.wait(1)
        first = fake.push_dm(USER, "first")
        fake.push_dm(USER, "second")
        await fake.wait_for(lambda: sink.tries >= 1)
    finally:
        await adapter.stop()
    assert [e.text for e in sink.events] == ["hello"]
    assert int(seen[str(fake.dm_channel(USER))]) < int(first)
    sink.full = False
    again = adapter_for(fake)
    again.bind_last_seen(dict(seen), seen.__setitem__, seen.get)
    await again.start(sink, COMMANDS)
    try:
        await sink.wait(3)
    finally:
        await again.stop()
        await join_heartbeat_threads()
    assert [e.text for e in sink.events] == ["hello", "first", "second"]


async def test_a_command_a_stop_leaves_unrecorded_is_answered_to_send_it_again(fake: FakeDiscord) -> None:
    # Discord sends an interaction once and keeps it in no history: the next start cannot find it,
    # and the user was left with "thinking…" until Discord gave up on it.
    adapter, sink = adapter_for(fake), FullDisk(fake)
    await adapter.start(sink, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER, args="fresh start")
        await fake.wait_for(lambda: sink.tries >= 1)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    # Its "thinking…", which the channel saw, deleted: the word is for the user alone.
    [answer] = fake.bot_messages(fake.dm_channel(USER))
    assert answer.id != fake.interactions[interaction]["original"] and answer.interaction_id == interaction
    assert answer.content == "⚠️ Not taken: the bot is restarting. Send `/new` again in a minute."
    assert answer.flags & EPHEMERAL
    assert fake.interactions[interaction]["responses"] == [5]  # deferred, then that answer as a follow-up


async def test_a_command_held_behind_a_catch_up_at_a_stop_is_answered_to_send_it_again(fake: FakeDiscord) -> None:
    # Live events wait for the catch-up; a stop drops them, and only messages are read back later.
    adapter, sink = adapter_for(fake), Sink(fake)
    reading = fake.hold("GET /channels/{channel_id}/messages")
    adapter.bind_last_seen({fake.dm_channel(USER): "1"}, lambda channel, message: None, lambda channel: None)
    await adapter.start(sink, COMMANDS)
    try:
        await fake.wait_for(lambda: fake.calls_to("GET /channels/{channel_id}/messages"))
        interaction = fake.push_interaction("stop", USER)
        await fake.wait_for(lambda: fake.interactions[interaction]["responses"] == [5])
    finally:
        await adapter.stop()
        reading.set()
        await join_heartbeat_threads()
    assert not sink.events
    [answer] = fake.bot_messages(fake.dm_channel(USER))
    assert answer.content == "⚠️ Not taken: the bot is restarting. Send `/stop` again in a minute."


class Stuck(Sink):
    """A gateway that never finishes taking a command (a store blocked past the stop's drain)."""

    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(fake)
        self.tries = 0

    async def __call__(self, inbound: Inbound) -> None:
        self.tries += 1
        await asyncio.Event().wait()


async def test_a_command_still_being_taken_past_the_stops_drain_is_answered_in_place(
        fake: FakeDiscord) -> None:
    # The drain gives up after 5 s and cancels the consumer mid-hand-over: the command it held was
    # left in no queue, so nothing was said for it. The gateway may have recorded it (its sink records
    # first, then routes): told it may come after the restart (`test_discord_command_cut_off`).
    adapter, sink = adapter_for(fake), Stuck(fake)
    await adapter.start(sink, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: sink.tries >= 1)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    [answer] = fake.bot_messages(fake.dm_channel(USER))
    assert answer.id == fake.interactions[interaction]["original"]
    assert answer.content == MAY_BE_TAKEN.format(command="/new")


async def test_a_stop_is_not_held_by_a_command_discord_never_acknowledges(fake: FakeDiscord) -> None:
    # The stop waits for commands being acknowledged with no timeout of its own: it gives up the hanging
    # "thinking…" call as it begins (not by closing discord.py's HTTP session, which stays open for the
    # replies still to send), and the command goes on with its interaction, which Discord may have taken
    # (`test_discord_ack_cut_short`: its answer then replaces "thinking…", else it goes to the channel).
    adapter, sink = adapter_for(fake), Sink(fake)
    await adapter.start(sink, COMMANDS)
    callback = fake.hold(CALLBACK)
    try:
        fake.push_interaction("new", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        loop = asyncio.get_running_loop()
        began = loop.time()
        await asyncio.wait_for(adapter.stop(), 10.0)
        assert loop.time() - began < 3.0
    finally:
        callback.set()
        await adapter.stop()
        await join_heartbeat_threads()
    [command] = sink.events
    assert command.text == "/new" and command.reply_token is not None


async def test_guild_messages_need_a_mention_or_a_reply(fake: FakeDiscord, running: Running) -> None:
    adapter, sink = running
    fake.push_guild_message(GUILD, CHANNEL, USER, "just chatting")
    mention = fake.push_guild_message(GUILD, CHANNEL, USER, "what's up?", mention_bot=True)
    [first] = await sink.wait(1)
    assert (first.event_id, first.text, first.chat_id, first.thread_id) == (mention, "what's up?", str(CHANNEL), None)
    assert not first.is_private

    fake.push_guild_message(GUILD, CHANNEL + 1, USER, "!stop")  # a channel the bot never spoke in
    await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="all fine"))
    fake.push_guild_message(GUILD, CHANNEL, USER, "chatting again")
    reply = fake.push_guild_message(GUILD, CHANNEL, USER, "are you sure?", reply_to_bot=True)
    stop = fake.push_guild_message(GUILD, CHANNEL, USER, "!stop")
    events = await sink.wait(3)
    assert [(e.event_id, e.text) for e in events[1:]] == [(reply, "are you sure?"), (stop, "!stop")]


async def test_a_mention_of_the_bots_own_role_is_a_mention_of_the_bot(fake: FakeDiscord, running: Running) -> None:
    """Discord's picker offers the bot's role (same name) beside the bot: picking it addresses
    the bot all the same. Another role, even one the bot could hold, does not."""
    _, sink = running
    helpers = fake.add_role(GUILD, "helpers")
    fake.push_guild_message(GUILD, CHANNEL, USER, "anyone around?", mention_roles=[helpers])
    own = fake.push_guild_message(GUILD, CHANNEL, USER, "what's up?", mention_roles=[fake.bot_role(GUILD)])
    [inbound] = await sink.wait(1)
    assert (inbound.event_id, inbound.text, inbound.chat_id) == (own, "what's up?", str(CHANNEL))


async def test_each_thread_is_its_own_session(fake: FakeDiscord, running: Running) -> None:
    adapter, sink = running
    fake.push_guild_message(GUILD, CHANNEL, USER, "in A", mention_bot=True, thread_id=701)
    fake.push_guild_message(GUILD, CHANNEL, USER, "in B", mention_bot=True, thread_id=702)
    a, b = await sink.wait(2)
    assert (a.chat_id, a.thread_id, b.chat_id, b.thread_id) == (str(CHANNEL), "701", str(CHANNEL), "702")

    await adapter.send(Outbound(chat_id=a.chat_id, thread_id=a.thread_id, text="answer in A"))
    assert [m.content for m in fake.bot_messages(701)] == ["answer in A"]
    assert fake.bot_messages(CHANNEL) == []

    # Without a mention: heard in a thread the bot posted in or owns, not elsewhere.
    fake.push_guild_message(GUILD, CHANNEL, USER, "unrelated thread", thread_id=703)
    fake.push_guild_message(GUILD, CHANNEL, USER, "follow-up in A", thread_id=701)
    fake.push_guild_message(GUILD, CHANNEL, USER, "in the bot's thread", thread_id=704, thread_owner=fake.bot_id)
    events = await sink.wait(4)
    assert [(e.thread_id, e.text) for e in events[2:]] == [("701", "follow-up in A"), ("704", "in the bot's thread")]

    await adapter.typing(a.chat_id, a.thread_id)
    assert fake.calls_to("POST /channels/{channel_id}/typing")[-1].path == "/channels/701/typing"


async def test_the_threads_it_hears_unmentioned_are_the_latest_ten_thousand_it_posted_in(fake: FakeDiscord) -> None:
    # A bot in busy servers posts in more threads every day: all of them were kept, for good.
    adapter, sink = adapter_for(fake), Sink(fake)
    adapter.remember_threads([(str(CHANNEL), str(100_000 + i)) for i in range(10_000)])  # the stored ones
    await adapter.start(sink, COMMANDS)
    try:
        for thread in range(701, 706):
            fake.push_guild_message(GUILD, CHANNEL, USER, f"in {thread}", mention_bot=True, thread_id=thread)
        for inbound in await sink.wait(5):
            await adapter.send(Outbound(chat_id=inbound.chat_id, thread_id=inbound.thread_id, text="answer"))
        fake.push_guild_message(GUILD, CHANNEL, USER, "in the least recent one", thread_id=100_000)
        fake.push_guild_message(GUILD, CHANNEL, USER, "in the sixth least recent", thread_id=100_005)
        fake.push_guild_message(GUILD, CHANNEL, USER, "in the latest", thread_id=705)
        events = await sink.wait(7)
        assert [(e.thread_id, e.text) for e in events[5:]] == [("100005", "in the sixth least recent"),
                                                                ("705", "in the latest")]
        assert len(adapter._posted_in) == 10_000  # type: ignore[attr-defined]
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_a_forwarded_message_is_heard_as_what_it_forwards(
    fake: FakeDiscord, running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    # Discord sends a forward as an empty message holding a snapshot of the one forwarded.
    adapter, sink = running
    fake.push_dm(USER, "deploy failed: exit 137", forwarded=True, files=[Upload("log.txt", b"oom", "text/plain")])
    fake.push_guild_message(GUILD, CHANNEL, USER, "look at this", mention_bot=True, thread_id=701)
    await sink.wait(2)
    await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id="701", text="Send it here.", idempotency_key="k"))
    fake.push_guild_message(GUILD, CHANNEL, USER, "the second error", thread_id=701, forwarded=True)
    dm, _, in_thread = await sink.wait(3)
    assert (dm.text, [(a.name, a.size) for a in dm.attachments]) == ("deploy failed: exit 137", [("log.txt", 3)])
    assert await adapter.download(dm.attachments[0]) == b"oom"
    assert (in_thread.text, in_thread.chat_id, in_thread.thread_id) == ("the second error", str(CHANNEL), "701")
    assert (dm.forwarded, in_thread.forwarded, _.forwarded) == (True, True, False)  # never read as a command
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no word of a missing intent


async def test_slash_command_is_deferred_then_answered(fake: FakeDiscord, running: Running) -> None:
    adapter, sink = running
    assert {c["name"] for c in fake.commands[None]} == {"stop", "new", "agents"}
    interaction_id = fake.push_interaction("stop", USER, args="now")
    [command] = await sink.wait(1)
    assert command.is_command and command.is_private
    assert (command.text, command.event_id, command.chat_id) == ("/stop now", interaction_id, fake.dm_channel(USER))
    assert sink.callbacks_seen == [1]  # acknowledged before the gateway saw the command
    assert fake.interactions[interaction_id]["responses"] == [5]

    first = await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="Stopped.",
                                        kind="command", reply_token=command.reply_token))
    second = await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="Also: 2 agents stopped.",
                                         kind="command", reply_token=command.reply_token))
    original, followup = fake.bot_messages(command.chat_id)
    assert (original.id, original.content, original.flags) == (first.message_id, "Stopped.", 0)
    assert (followup.id, followup.content) == (second.message_id, "Also: 2 agents stopped.")

    await adapter.edit(command.chat_id, None, second.message_id, "Also: 3 agents stopped.")
    assert followup.content == "Also: 3 agents stopped."


async def test_expired_interaction_answers_in_the_channel(fake: FakeDiscord, running: Running) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="Started a new session.",
                                       kind="command", reply_token=f"{fake.application_id}:expired-token"))
    assert [(m.id, m.content) for m in fake.bot_messages(channel)] == [(sent.message_id, "Started a new session.")]


class Clock:
    """A monotonic clock the test moves by hand (the fake's interaction deadlines read it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_an_answer_after_the_15_minute_token_lifetime_goes_to_the_channel() -> None:
    clock = Clock()
    async with FakeDiscord(clock=clock) as fake:
        adapter, sink = adapter_for(fake), Sink(fake)
        await adapter.start(sink, COMMANDS)
        try:
            fake.push_interaction("agents", USER)
            [command] = await sink.wait(1)
            clock.now += 15 * 60 + 1  # Discord now answers the token with 401 Invalid Webhook Token
            sent = await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="No subagents.",
                                               kind="command", reply_token=command.reply_token))
            [thinking, answer] = fake.bot_messages(command.chat_id)
            assert thinking.flags & FLAG_LOADING and thinking.interaction_id is not None
            assert (answer.id, answer.content, answer.interaction_id) == (sent.message_id, "No subagents.", None)
            assert fake.calls_to(ANSWER)[-1].status == 401
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_split_answer_resumed_after_a_restart_follows_up_instead_of_overwriting(fake: FakeDiscord) -> None:
    before, sink = adapter_for(fake), Sink(fake)
    await before.start(sink, COMMANDS)
    try:
        fake.push_interaction("agents", USER)
        fake.push_interaction("stop", USER)
        answered, unanswered = await sink.wait(2)
        await before.send(Outbound(chat_id=answered.chat_id, thread_id=None, text="Part one.", kind="command",
                                   reply_token=answered.reply_token))
    finally:
        await before.stop()
    after = adapter_for(fake)  # a new process: only the outbox's rows say what was sent
    await after.start(Sink(fake), COMMANDS)
    try:
        await after.send(Outbound(chat_id=answered.chat_id, thread_id=None, text="Part two.", kind="command",
                                  reply_token=answered.reply_token))
        await after.send(Outbound(chat_id=unanswered.chat_id, thread_id=None, text="Stopped.", kind="command",
                                  reply_token=unanswered.reply_token))
    finally:
        await after.stop()
        await join_heartbeat_threads()
    assert [(m.content, m.flags & FLAG_LOADING) for m in fake.bot_messages(answered.chat_id)] == [
        ("Part one.", 0), ("Stopped.", 0), ("Part two.", 0)]


async def test_commands_register_per_guild(fake: FakeDiscord) -> None:
    adapter, sink = adapter_for(fake, command_guilds=(GUILD, GUILD + 1)), Sink(fake)
    await adapter.start(sink, COMMANDS)
    try:
        routes = [c.path for c in fake.calls if c.method == "PUT"]
        app = fake.application_id
        assert routes == [f"/applications/{app}/guilds/{g}/commands" for g in (GUILD, GUILD + 1)]
        assert None not in fake.commands
        fake.push_interaction("new", USER, CHANNEL, guild=GUILD)
        [command] = await sink.wait(1)
        assert (command.text, command.chat_id, command.is_private) == ("/new", str(CHANNEL), False)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_silent_notice_is_edited_in_place(fake: FakeDiscord, running: Running) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="Still working (1 min)",
                                       kind="notice", silent=True))
    await adapter.edit(channel, None, sent.message_id, "Still working (2 min)")
    [notice] = fake.bot_messages(channel)
    assert (notice.id, notice.flags & 4096, notice.content) == (sent.message_id, 4096, "Still working (2 min)")
    assert notice.edits == ["Still working (1 min)"]


async def test_the_fake_enforces_2000_characters(fake: FakeDiscord, running: Running) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="x" * 2000))
    with pytest.raises(MessageTooLong) as too_long:
        await adapter.send(Outbound(chat_id=channel, thread_id=None, text="x" * 2001))
    assert too_long.value.chat_id == channel
    with pytest.raises(MessageTooLong):
        await adapter.edit(channel, None, sent.message_id, "y" * 2001)
    assert fake.calls_to(SEND)[-1].status == 400


async def test_what_the_model_writes_pings_nobody(fake: FakeDiscord, running: Running, tmp_path: Path) -> None:
    # Text copied from a user or a web page the model read: a mention in it must not notify anyone,
    # whichever way the bot posts it (reply, progress edit, file caption, command answer and follow-up).
    adapter, sink = running
    helpers = fake.add_role(GUILD, "helpers")
    loud = f"<@{USER}> <@!43> <@&{helpers}> @everyone @here"
    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True)
    await sink.wait(1)
    chat = str(CHANNEL)
    reply = await adapter.send(Outbound(chat_id=chat, thread_id=None, text=loud, idempotency_key="t1/0"))
    notice = await adapter.send(Outbound(chat_id=chat, thread_id=None, text="Working…", kind="notice", silent=True,
                                         idempotency_key="t1/notice"))
    await adapter.edit(chat, None, notice.message_id, loud)
    path = tmp_path / "report.txt"
    path.write_text("report")
    await adapter.send_file(Outbound(chat_id=chat, thread_id=None, text=loud, kind="file", idempotency_key="t1/1"),
                            OutboundFile(str(path), "report.txt", path.stat().st_size))
    fake.push_interaction("agents", USER, CHANNEL, GUILD)
    [_, command] = await sink.wait(2)
    answer = Outbound(chat_id=chat, thread_id=None, text=loud, kind="command", reply_token=command.reply_token)
    await adapter.send(answer)
    follow_up = await adapter.send(answer)
    await adapter.edit(chat, None, follow_up.message_id, loud + " again")
    posted = fake.bot_messages(CHANNEL)
    assert len(posted) == 5 and reply.message_id == posted[0].id
    assert all("@everyone" in m.content for m in posted)
    assert [m.pings for m in posted] == [Pings()] * 5


async def test_429_is_retried_once_and_sends_one_message(fake: FakeDiscord, running: Running) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    fake.fail_next(SEND, 429, retry_after=0.05)
    sent = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="hello", idempotency_key="turn-1:0"))
    first, retry = fake.calls_to(SEND)
    assert (first.status, retry.status) == (429, 200)
    assert first.body["nonce"] == retry.body["nonce"] and retry.body["enforce_nonce"] is True
    assert [m.id for m in fake.bot_messages(channel)] == [sent.message_id]

    # The gateway's own retry of the same part (same idempotency key) does not double it either.
    again = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="hello", idempotency_key="turn-1:0"))
    assert again == sent and len(fake.bot_messages(channel)) == 1


@pytest.mark.parametrize("route", [ANSWER, FOLLOW_UP])
async def test_a_long_429_on_a_command_answer_fails_fast_as_rate_limited(
    fake: FakeDiscord, running: Running, route: str
) -> None:
    """discord.py's webhook adapter would sleep out any wait; the adapter's cap (30 s) holds
    for answers to slash commands too, so the outbox, not a sleeping call, waits and retries."""
    adapter, sink = running
    fake.push_interaction("agents", USER)
    [command] = await sink.wait(1)

    def answer(text: str) -> Outbound:
        return Outbound(chat_id=command.chat_id, thread_id=None, text=text, kind="command",
                        reply_token=command.reply_token)

    if route == FOLLOW_UP:
        await adapter.send(answer("Part one."))
    fake.fail_next(route, 429, retry_after=3600)
    with pytest.raises(RateLimited) as limited:
        await asyncio.wait_for(adapter.send(answer("Part two.")), 5)
    assert limited.value.retry_after == 3600 and limited.value.method.startswith(route.split("/{token}")[0])
    assert [c.status for c in fake.calls_to(route)][-1:] == [429]

    fake.fail_next(route, 429, retry_after=0.05)  # within the cap: discord.py waits it out itself
    sent = await asyncio.wait_for(adapter.send(answer("Part two.")), 5)
    assert [c.status for c in fake.calls_to(route)][-3:] == [429, 429, 200]
    assert fake.bot_messages(command.chat_id)[-1].id == sent.message_id


@pytest.mark.parametrize("retry_after", [3600, 5])
async def test_a_command_whose_thinking_response_is_rate_limited_is_answered_in_the_channel_at_once(
    fake: FakeDiscord, running: Running, caplog: pytest.LogCaptureFixture, retry_after: float
) -> None:
    """discord.py would sleep out the 429 on the interaction callback, however long, before the
    gateway even heard of the command; and past Discord's 3 seconds the interaction is gone anyway.
    So the command is handed over at once, its token known to be unusable: its answer goes to the channel."""
    adapter, sink = running
    fake.fail_next(CALLBACK, 429, retry_after=retry_after)
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        fake.push_interaction("agents", USER)
        [command] = await asyncio.wait_for(sink.wait(1), 2)
    assert command.text == "/agents" and command.reply_token is not None
    assert [c.status for c in fake.calls_to(CALLBACK)] == [429]
    assert any("could not acknowledge /agents" in r.getMessage() and "answering in the channel" in r.getMessage()
               for r in caplog.records)
    sent = await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="No subagents.", kind="command",
                                       reply_token=command.reply_token))
    assert [(m.id, m.content) for m in fake.bot_messages(command.chat_id)] == [(sent.message_id, "No subagents.")]
    assert [c.route for c in fake.calls if c.route.startswith(("GET /webhooks", "POST /webhooks"))] == []


async def test_a_thinking_response_discord_refuses_is_one_warning_not_two(
    fake: FakeDiscord, running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    # The refusal was warned of as it was translated, then again as the command went to the channel instead.
    adapter, sink = running
    fake.fail_next(CALLBACK, 404)
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        fake.push_interaction("agents", USER)
        [command] = await asyncio.wait_for(sink.wait(1), 2)
        await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="No subagents.", kind="command",
                                    reply_token=command.reply_token))
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "could not acknowledge /agents" in warning and "NotFound" in warning, warning
    # Refused, not "Discord may have taken it": nothing is asked of, or sent through, the interaction.
    assert [c.route for c in fake.calls if c.route.startswith(("GET /webhooks", "POST /webhooks"))] == []


async def test_a_short_429_on_the_thinking_response_is_waited_out_within_discords_window(
    fake: FakeDiscord, running: Running
) -> None:
    _, sink = running
    fake.fail_next(CALLBACK, 429, retry_after=0.05)
    interaction_id = fake.push_interaction("agents", USER)
    [command] = await sink.wait(1)
    assert [c.status for c in fake.calls_to(CALLBACK)] == [429, 200] and command.reply_token is not None
    assert fake.interactions[interaction_id]["responses"] == [5]


async def test_resume_replay_delivers_the_same_message_id_again(
    fake: FakeDiscord, running: Running
) -> None:
    _, sink = running
    message_id = fake.push_dm(USER, "only once, please")
    await sink.wait(1)
    fake.replay_on_resume([message_id])
    fake.request_reconnect()
    events = await sink.wait(2)
    assert [e.event_id for e in events] == [message_id, message_id]  # the gateway inbox drops the repeat
    assert [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 6]


@pytest.mark.parametrize("disconnect", ["reconnect", "invalid_session", "drop"])
async def test_a_reconnect_leaves_one_live_connection(
    fake: FakeDiscord, running: Running, disconnect: str
) -> None:
    _, sink = running
    {"reconnect": fake.request_reconnect, "invalid_session": fake.invalidate_session,
     "drop": fake.drop_socket}[disconnect]()
    await fake.wait_for(lambda: fake.connections_opened == 2 and fake.live_connections == 1)
    expected = [2, 2] if disconnect == "invalid_session" else [2, 6]  # fresh IDENTIFY or RESUME
    await fake.wait_for(lambda: [op for op, _ in fake.gateway_ops if op in (2, 6)] == expected)
    fake.push_dm(USER, "still there?")
    [inbound] = await sink.wait(1)
    assert inbound.text == "still there?" and fake.live_connections == 1


async def test_a_half_open_connection_is_resumed_and_the_events_sent_into_it_arrive(fake: FakeDiscord) -> None:
    """No heartbeat ACK and nothing else: discord.py gives up after ``heartbeat_timeout`` of
    silence, reconnects and RESUMEs, and the messages dispatched into the dead socket arrive."""
    adapter = DiscordAdapter(fake.token, api_base=fake.api_base, ready_timeout=5.0,
                             client_factory=lambda **kw: fake.client_factory(heartbeat_timeout=1.0, **kw))
    sink = Sink(fake)
    await adapter.start(sink)
    try:
        fake.stall()
        fake.push_dm(USER, "into the void")
        await fake.wait_for(lambda: fake.connections_opened == 2 and fake.live_connections == 1)
        fake.push_dm(USER, "after")
        events = await sink.wait(2)
        assert [e.text for e in events] == ["into the void", "after"]
        assert [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 6]
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_errors_are_translated_and_logged(
    fake: FakeDiscord, running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    caplog.set_level(logging.DEBUG, logger="platforms.discord")

    fake.fail_next(SEND, 403, code=50013, message="Missing Permissions")
    with pytest.raises(Forbidden) as forbidden:
        await adapter.send(Outbound(chat_id=channel, thread_id=None, text="hi"))
    assert (forbidden.value.method, forbidden.value.chat_id) == (SEND, channel)

    with pytest.raises(NotFound):
        await adapter.send(Outbound(chat_id="999", thread_id=None, text="hi"))
    with pytest.raises(NotFound):
        await adapter.typing("999", None)
    with pytest.raises(NotFound):
        await adapter.edit(channel, None, "12345", "gone")

    fake.fail_next(SEND, 400, code=50035, message="Invalid Form Body",
                   errors={"embeds": {"_errors": [{"code": "BASE_TYPE_BAD", "message": "Bad embed."}]}})
    with pytest.raises(BadRequest) as bad:
        await adapter.send(Outbound(chat_id=channel, thread_id=None, text="hi"))
    assert not isinstance(bad.value, MessageTooLong)

    # A part's refusal is the outbox's to warn of, as it fails the part; typing's is warned of here.
    [refused] = [r for r in caplog.records if SEND in r.getMessage() and "Forbidden" in r.getMessage()]
    assert channel in refused.getMessage() and refused.levelno == logging.DEBUG
    [gone] = [r for r in caplog.records if "typing" in r.getMessage() and "999" in r.getMessage()]
    assert "NotFound" in gone.getMessage() and gone.levelno == logging.WARNING
    await adapter.send(Outbound(chat_id=channel, thread_id=None, text="still working"))  # nothing crashed
    assert fake.bot_messages(channel)[-1].content == "still working"


async def test_typing_refused_all_turn_long_is_one_warning(
    fake: FakeDiscord, running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    # A deleted channel refuses every typing refresh (each ~6 s, for the whole turn): one warning per
    # refresh buried the log. The first is logged; the others are counted (platforms.repeated_warnings).
    adapter, _ = running
    caplog.set_level(logging.WARNING, logger="platforms.discord")
    for _ in range(5):
        with pytest.raises(NotFound):
            await adapter.typing("999", None)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "typing" in warned[0] and "999" in warned[0] and "NotFound" in warned[0]
    with pytest.raises(NotFound):
        await adapter.send(Outbound(chat_id="999", thread_id=None, text="hi"))  # the outbox warns of a reply's
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


async def test_missing_message_content_intent_fails_start_clearly(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeDiscord(message_content_intent=False) as fake:
        adapter = adapter_for(fake)
        with pytest.raises(DiscordStartError, match="Message Content"):
            await adapter.start(Sink(fake), COMMANDS)
        await join_heartbeat_threads()
        assert fake.live_connections == 0
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and r.name == "platforms.discord"]
    assert errors and all("Developer Portal" in e and "Message Content Intent" in e for e in errors)


async def test_stripped_message_content_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeDiscord(strip_message_content=True) as fake:
        adapter, sink = adapter_for(fake), Sink(fake)
        await adapter.start(sink, COMMANDS)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "a reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "another reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "mentions still carry text", mention_bot=True)
            [inbound] = await sink.wait(1)
            assert inbound.text == "mentions still carry text"
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
    hints = [r for r in caplog.records if "without content" in r.getMessage()]
    assert len(hints) == 1 and "Developer Portal" in hints[0].getMessage()


async def test_bad_token_fails_start(fake: FakeDiscord) -> None:
    adapter = DiscordAdapter("wrong", api_base=fake.api_base, client_factory=fake.client_factory)
    with pytest.raises(DiscordStartError, match="token"):
        await adapter.start(Sink(fake))
    assert fake.live_connections == 0
    await adapter.stop()  # idempotent after a failed start


async def test_unreachable_api_fails_start() -> None:
    async with FakeDiscord() as fake:
        api_base = fake.api_base
    adapter = DiscordAdapter("token", api_base=api_base)
    with pytest.raises(DiscordStartError, match="cannot log in"):
        await adapter.start(Sink(fake))


async def test_stop_is_idempotent_and_restarts_cleanly(fake: FakeDiscord) -> None:
    adapter, sink = adapter_for(fake), Sink(fake)
    await adapter.start(sink, COMMANDS)
    await adapter.stop()
    await adapter.stop()
    await fake.wait_for(lambda: fake.live_connections == 0)
    await adapter.start(sink, COMMANDS)
    try:
        fake.push_dm(USER, "back again")
        assert (await sink.wait(1))[0].text == "back again"
        assert fake.live_connections == 1
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    with pytest.raises(DeliveryError, match="not connected"):
        await adapter.send(Outbound(chat_id="1", thread_id=None, text="nobody home"))


# ---- platforms/discord_urls.py --------------------------------------------------------------------


def test_url_self_check_passes_on_the_installed_discord_py() -> None:
    discord_urls.check()


async def test_url_self_check_names_the_version_when_internals_move(
    fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate an upgrade in which webhooks stopped sharing discord.http.Route.
    monkeypatch.setattr(discord.webhook.async_, "Route", type("Route", (), {}))
    with pytest.raises(discord_urls.DiscordInternalsChanged, match=discord.__version__):
        discord_urls.check()
    with pytest.raises(discord_urls.DiscordInternalsChanged):
        await adapter_for(fake).start(Sink(fake))
    assert fake.calls == []


def test_url_override_is_process_wide_and_restored() -> None:
    before = (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    first = discord_urls.claim("http://127.0.0.1:1/api/v10/")
    try:
        assert discord.http.Route("GET", "/users/@me").url == "http://127.0.0.1:1/api/v10/users/@me"
        with pytest.raises(RuntimeError, match="one REST base per process"):
            discord_urls.claim("http://127.0.0.1:2/api/v10")
        second = discord_urls.claim("http://127.0.0.1:1/api/v10")
        first.set_gateway("ws://127.0.0.1:1/gateway")
        with pytest.raises(RuntimeError):
            second.set_gateway("ws://127.0.0.1:3/gateway")
        second.release()
    finally:
        first.release()
        first.release()
    assert (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY) == before


async def test_a_part_that_renders_to_nothing_is_sent_as_written(fake: FakeDiscord, running: Running) -> None:
    # An empty link rendered as empty content, which Discord refuses (50006 "Cannot send an empty message").
    adapter, _ = running
    channel = fake.dm_channel(USER)
    await adapter.send(Outbound(chat_id=channel, thread_id=None, text="[]()"))
    assert [m.content for m in fake.bot_messages(int(channel))] == ["[\\]\\()"]
