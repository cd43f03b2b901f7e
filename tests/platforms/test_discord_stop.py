"""A stop of `DiscordAdapter` keeps to the time the gateway gives it (`stop_within`): neither discord.py's
reconnect backoff, which closing the client does not cut short, nor a sink slow to take the events queued,
nor a half-open gateway connection, nor a catch-up whose read Discord does not answer holds it longer. What
it did not hand over is not lost: a message is read back at the next start, a command is told it was not
taken. That stop ends intake only: the adapter sends until `close`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import LAST_CALLS_FLOOR, CommandSpec, Inbound, NetworkError, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads, long_backoff

USER = 42
GRACE = 1.0
SLACK = 1.0
"""Room for a loaded 2-core machine, well short of what the stop took before (5 s and more)."""
MARGIN = 0.7
"""Room for a loaded 2-core machine past the grace and the last calls' floor."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
    await join_heartbeat_threads()


async def test_a_stop_while_discord_py_waits_to_reconnect_keeps_to_its_grace(
        fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    waiting, adapter = long_backoff(monkeypatch), adapter_for(fake)
    await adapter.start(lambda inbound: asyncio.sleep(0))
    await fake.close()  # the gateway goes away: every reconnect fails, and discord.py backs off
    await asyncio.wait_for(waiting.wait(), 10)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await adapter.stop_within(GRACE)
    assert loop.time() - began < GRACE + SLACK
    await adapter.close()


class SlowSink:
    """The gateway's intake, taking each event only once released: events queue behind the first."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.handed: list[Inbound] = []
        self.taken: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.handed.append(inbound)
        await self.release.wait()
        self.taken.append(inbound)


async def test_a_stop_with_events_queued_behind_a_slow_sink_keeps_to_its_grace(fake: FakeDiscord) -> None:
    adapter, sink = adapter_for(fake), SlowSink()
    await adapter.start(sink)
    channel = fake.dm_channel(USER)
    for text in ("one", "two", "three"):
        fake.push_dm(USER, text)
    await fake.wait_for(lambda: sink.handed and adapter._queue.qsize() == 2)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await adapter.stop_within(GRACE)
    assert loop.time() - began < GRACE + SLACK
    await adapter.close()
    assert sink.taken == []
    # Nothing lost: none was seen, so the next start's catch-up reads them all back from the channel.
    seen = adapter._last_seen.last_seen.get(int(channel))
    assert seen is None or seen < min(int(m.id) for m in fake.messages[channel])


HISTORY = "GET /channels/{channel_id}/messages"
UNTHINK = "DELETE /webhooks/{application_id}/{token}/messages/{message_id}"
"""The first call of a "Not taken": its "thinking…" deleted, the word then goes to the user alone."""


async def test_a_stop_whose_answers_to_commands_not_taken_discord_does_not_take_keeps_to_its_grace(
        fake: FakeDiscord) -> None:
    # A command held behind the catch-up at the stop is answered "Not taken"; those answers had 3 s
    # of their own, past the grace, when Discord was slow to take them.
    adapter = adapter_for(fake)
    adapter.bind_last_seen({fake.dm_channel(USER): "1"}, lambda channel, message: None, lambda channel: None)
    fake.hold(HISTORY)  # the catch-up's read, unanswered: live events wait behind it
    fake.hold(UNTHINK)
    await adapter.start(lambda inbound: asyncio.sleep(0), [CommandSpec("new", "Start a new session")])
    await fake.wait_for(lambda: fake.calls_to(HISTORY))
    command = fake.push_interaction("new", USER)
    await fake.wait_for(lambda: fake.interactions[command]["responses"] == [5])  # "thinking…"
    loop = asyncio.get_running_loop()
    began = loop.time()
    await adapter.stop_within(GRACE)
    assert loop.time() - began < GRACE + SLACK
    await adapter.close()
    assert fake.calls_to(UNTHINK)  # tried, within the grace: Discord shows the interaction failed


async def test_a_stop_in_the_middle_of_a_catch_up_keeps_to_its_grace_and_the_next_start_reads_what_it_had_not(
        fake: FakeDiscord) -> None:
    # The stop cancels the catch-up and waits for it to end, with no bound of its own: a catch-up must
    # give in at once, in a read Discord does not answer as in a message's record (the gateway's sink
    # is cancellable), and leave neither that channel nor that message recorded as seen.
    seen: dict[str, str] = {}
    taken: list[str] = []
    recording: list[str] = []

    async def sink(inbound: Inbound) -> None:
        if inbound.text == "second missed" and not recording:
            recording.append(inbound.text)
            await asyncio.Event().wait()  # still recording it at the stop
        taken.append(inbound.text)

    adapter = adapter_for(fake)
    adapter.bind_last_seen({}, seen.__setitem__, seen.get)
    await adapter.start(sink)
    fake.push_dm(USER, "one")
    fake.push_dm(USER + 1, "one too")
    await fake.wait_for(lambda: len(seen) == 2)
    await adapter.stop()
    slow, other = fake.dm_channel(USER), fake.dm_channel(USER + 1)
    before = dict(seen)
    fake.push_dm(USER, "missed")
    first = fake.push_dm(USER + 1, "first missed")
    fake.push_dm(USER + 1, "second missed")
    held = f"/channels/{slow}/messages"
    release = fake.hold(f"GET {held}")
    adapter = adapter_for(fake)
    adapter.bind_last_seen(dict(seen), seen.__setitem__, seen.get)
    await adapter.start(sink)
    await fake.wait_for(lambda: recording and any(c.path == held for c in fake.calls_to(HISTORY)))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await adapter.stop_within(GRACE)
    assert loop.time() - began < GRACE + SLACK
    await adapter.close()
    assert taken == ["one", "one too", "first missed"]
    assert seen == {slow: before[slow], other: first}  # not the message whose record the stop cut short
    release.set()

    again = adapter_for(fake)
    again.bind_last_seen(dict(seen), seen.__setitem__, seen.get)
    await again.start(sink)
    try:
        await fake.wait_for(lambda: len(taken) == 5)
    finally:
        await again.stop()
    assert sorted(taken[3:]) == ["missed", "second missed"]


async def test_a_stop_on_a_half_open_gateway_connection_keeps_to_its_grace(fake: FakeDiscord) -> None:
    # discord.py's own close waits up to 30 s for Discord to answer its close frame, which a connection
    # whose peer is gone (no answer, no FIN) never does. The stop does not: it ends the connection's reader
    # first, whose cut-short read makes aiohttp drop the connection at the close, and the close is held to
    # the last calls' floor in any case (the REST client stays open, for the replies still to send).
    seen: dict[str, str] = {}
    taken: list[str] = []

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound.text)

    adapter = adapter_for(fake)
    adapter.bind_last_seen({}, seen.__setitem__, seen.get)
    await adapter.start(sink)
    fake.push_dm(USER, "before")
    await fake.wait_for(lambda: taken)
    fake.stall(answer_close=False)
    fake.push_dm(USER, "into the void")  # dispatched into the dead connection: never heard
    loop = asyncio.get_running_loop()
    began = loop.time()
    await adapter.stop_within(GRACE)
    assert loop.time() - began < GRACE + LAST_CALLS_FLOOR + MARGIN
    await adapter.close()
    await join_heartbeat_threads()

    # Nothing lost: the channel was seen no further than "before", so the next start's catch-up reads
    # what came after it from the channel's history and hands it over.
    assert taken == ["before"]
    again = adapter_for(fake)
    again.bind_last_seen(dict(seen), seen.__setitem__, seen.get)
    await again.start(sink)
    try:
        await fake.wait_for(lambda: taken == ["before", "into the void"])
    finally:
        await again.stop()


async def test_a_stop_before_discord_py_has_dispatched_ready_leaves_no_failing_task_behind(fake: FakeDiscord) -> None:
    # discord.py dispatches "ready" only once no guild has come for `guild_ready_timeout` seconds (2 by
    # default) after READY, in a task its close does not end: a stop in between (Ctrl-C right after the
    # start) left it to dispatch on the closed client, and the loop logged its AttributeError at exit.
    def slow_ready(**options):
        return fake.client_factory(**{**options, "guild_ready_timeout": 1.0})

    adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=slow_ready, ready_timeout=5.0)
    await adapter.start(lambda inbound: asyncio.sleep(0))
    dispatching = adapter._client._connection._ready_task
    assert dispatching is not None and not dispatching.done()
    await adapter.stop_within(GRACE)
    await adapter.close()
    await asyncio.wait({dispatching}, timeout=5.0)
    assert dispatching.done() and dispatching.exception() is None


async def test_messages_a_stop_leaves_queued_in_a_channel_never_seen_are_read_back_at_the_next_start(
        fake: FakeDiscord) -> None:
    # A first DM has no last message seen to catch up after: a stop that left it (and those behind it)
    # unrecorded, in the sink past the drain or still queued, must record its channel just before it,
    # or the next start's catch-up never looks there and the messages are lost.
    seen: dict[str, str] = {}
    adapter, sink = adapter_for(fake), SlowSink()
    adapter.bind_last_seen({}, seen.__setitem__, seen.get)
    await adapter.start(sink)
    for text in ("one", "two", "three"):
        fake.push_dm(USER, text)
    await fake.wait_for(lambda: sink.handed and adapter._queue.qsize() == 2)
    await adapter.stop_within(GRACE)
    await adapter.close()
    assert sink.taken == []

    taken: list[str] = []

    async def take(inbound: Inbound) -> None:
        taken.append(inbound.text)

    again = adapter_for(fake)
    again.bind_last_seen(dict(seen), seen.__setitem__, seen.get)
    await again.start(take)
    try:
        await fake.wait_for(lambda: len(taken) == 3)
    finally:
        await again.stop()
    assert taken == ["one", "two", "three"]


async def test_after_its_stop_the_adapter_still_sends_until_it_is_closed(fake: FakeDiscord) -> None:
    # The stop closed discord.py's client, REST and all, with the gateway connection: the reply of a turn
    # ending within the gateway's grace was refused ("not connected") and held until the next start.
    taken: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink)
    dm = fake.dm_channel(USER)
    try:
        await adapter.stop_within(GRACE)
        await fake.wait_for(lambda: not fake.live_connections)  # intake ended: no event comes in
        await adapter.typing(dm, None)
        await adapter.send(Outbound(dm, None, "the reply"))
    finally:
        await adapter.close()
    with pytest.raises(NetworkError, match="not connected"):
        await adapter.send(Outbound(dm, None, "after the close"))
    assert [m.content for m in fake.bot_messages(dm)] == ["the reply"]
    assert taken == []



async def test_a_command_whose_handler_a_stop_overtakes_is_not_left_in_the_queue(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # discord.py calls a command's handler from a task of its own. Should it start only once the stop had
    # taken the last of the queue (discord.py pausing before it), its command went into a queue nobody reads
    # any more: neither handed over nor told it was not taken. Held here until then.
    taken: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound)

    adapter = adapter_for(fake)
    called, go = asyncio.Event(), asyncio.Event()
    on_command = adapter._on_command

    async def overtaken(*args: Any) -> None:
        called.set()
        await go.wait()
        await on_command(*args)

    adapter._on_command = overtaken  # type: ignore[method-assign]
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        fake.push_interaction("agents", USER)
        await asyncio.wait_for(called.wait(), 5)
        await adapter.stop_within(GRACE)
        go.set()
        await fake.wait_for(lambda: "was not recorded before the gateway stopped" in caplog.text)
    finally:
        go.set()
        await adapter.close()
    assert taken == [] and "/agents from user 42" in caplog.text
