"""A slash command the gateway recorded but could not commit yet, as a stop ends its hand-over.

The store keeps the writes of a commit SQLite refused (a full disk, a lock) and commits them once it
can (`lifecycle.SqliteDatabase`), and the next start handles what was recorded: such a command may
still be answered. Told "Not taken: send it again", its user was told no, then answered (twice, had
they sent it again). One the store refused to record at all is "Not taken" still. A real store on a
temporary directory; the real Slack and Discord SDKs against the loopback fakes.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config
from lifecycle import SqliteDatabase
from platforms.base import Adapter, CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.not_recorded import MAY_BE_TAKEN, NOT_TAKEN, NotYetDurable, storage_refusal
from platforms.slack import SlackAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.polling import until

USER = 42
COMMANDS = [CommandSpec("agents", "List running subagents")]
EVERYONE = {"discord": {"allow_all": True}, "slack": {"allow_all": True}}


class CommitRefused:
    """A participant in the commit that would make the next event's record durable: that commit meets a
    full disk (SQLite rolls the whole batch back, the event's row with it, which the store keeps to write
    again), and another connection then holds the write lock, so writing the row again is refused as well
    (SQLITE_BUSY): the commit fails with the row recorded, not durable. `release` lets it through."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self.other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
        # A refused lock fails at once: the loop is not held for the store's 5 s.
        db.busy_timeout = 0.0
        db.read("PRAGMA busy_timeout=0")
        self.fired = False

    def arm(self, sink: Callable[[Inbound], Awaitable[object]]) -> Callable[[Inbound], Awaitable[object]]:
        """``sink``, whose first call's record is refused its commit so."""

        async def armed(inbound: Inbound) -> object:
            if not self.fired:
                self.db.request(self)  # joins the batch the call's record opens
            return await sink(inbound)

        return armed

    def flush(self) -> None:
        if self.fired:
            return
        self.fired = True
        self.db.write("CREATE TABLE IF NOT EXISTS test_filler (b BLOB)")  # in this batch: it fits
        (pages,) = self.db.read_one("PRAGMA page_count")
        self.db.read(f"PRAGMA max_page_count={pages}")
        try:
            self.db.write("INSERT INTO test_filler VALUES (?)", (b"x" * 50_000,))
        except sqlite3.OperationalError:
            self.other.execute("BEGIN IMMEDIATE")
            raise
        raise AssertionError("the write fitted")

    def committed(self, error: BaseException | None) -> None:
        pass

    async def release(self) -> None:
        self.other.execute("ROLLBACK")
        self.other.close()
        await self.db.durable()  # the kept batch, written again
        self.db.read("PRAGMA max_page_count=1073741823")


class LockedOut:
    """Another connection holds the write lock from the start: the store cannot record anything."""

    def __init__(self, db: SqliteDatabase) -> None:
        db.busy_timeout = 0.0
        db.read("PRAGMA busy_timeout=0")
        self.other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
        self.other.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.other.execute("ROLLBACK")
        self.other.close()


def recorded(path: Path, event_id: str) -> bool:
    """Whether the inbox holds the event durably, as the next start would read it."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM gateway_inbox WHERE event_id=?", (event_id,)).fetchone() == (1,)
    finally:
        conn.close()


def recorded_commands(path: Path, platform: str) -> int:
    conn = sqlite3.connect(path)
    try:
        (count,) = conn.execute("SELECT count(*) FROM gateway_inbox WHERE platform=? AND event_id LIKE 'command:%'",
                                (platform,)).fetchone()
        return count
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def gateway_on(tmp_path: Path, adapter: Adapter,
                     wrap: Callable[[Gateway], Callable[[Inbound], Awaitable[object]]] | None = None,
                     ) -> AsyncIterator[Gateway]:
    """A started gateway on ``adapter``, whose sink is ``wrap(gateway)`` (`Gateway.handle` wrapped)."""
    gateway = Gateway(AgentHost(make_config(tmp_path, platforms=EVERYONE)), [adapter])
    if wrap is not None:
        gateway.handle = wrap(gateway)  # type: ignore[method-assign]  (the sink `start` hands each adapter)
    try:
        await gateway.start()
        await gateway.store.durable()
        yield gateway
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
    assert fake.errors == []


def command(event_id: str) -> Inbound:
    return Inbound(platform="discord", chat_id=str(USER), thread_id=None, user_id=str(USER), user_name="u",
                   text="/agents", event_id=event_id, is_command=True)


async def test_handle_raises_not_yet_durable_for_a_record_whose_commit_was_refused_and_commits_it_later(
        tmp_path: Path, fake: FakeDiscord) -> None:
    async with gateway_on(tmp_path, adapter_for(fake)) as gateway:
        refused = CommitRefused(gateway.store.db)
        with pytest.raises(NotYetDurable) as raised:
            await refused.arm(gateway.handle)(command("interaction:1"))
        # Still a storage refusal, with SQLite's own code: Telegram, webhooks and the web chat hand it over again.
        assert storage_refusal(raised.value) and raised.value.sqlite_errorcode == sqlite3.SQLITE_BUSY
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
        assert not recorded(gateway.store.path, "interaction:1")
        await refused.release()
        assert recorded(gateway.store.path, "interaction:1")  # the next start would answer it
        assert (await gateway.handle(command("interaction:1"))).duplicate  # handed over again: durable now


async def test_handle_raises_sqlites_own_error_for_an_event_it_could_not_record(
        tmp_path: Path, fake: FakeDiscord) -> None:
    async with gateway_on(tmp_path, adapter_for(fake)) as gateway:
        locked = LockedOut(gateway.store.db)
        try:
            with pytest.raises(sqlite3.OperationalError) as raised:
                await gateway.handle(command("interaction:2"))
            assert not isinstance(raised.value, NotYetDurable) and storage_refusal(raised.value)
        finally:
            locked.release()
        await gateway.store.durable()
        assert not recorded(gateway.store.path, "interaction:2")


def discord_answer(fake: FakeDiscord, interaction: str) -> list[str]:
    """What shows in place of the interaction's "thinking…"."""
    original = fake.interactions[interaction]["original"]
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER)) if m.id == original]


def discord_told_alone(fake: FakeDiscord, interaction: str) -> list[str]:
    """What the interaction's user alone was told (flag 64), its "thinking…", which the channel saw, deleted."""
    assert discord_answer(fake, interaction) == []
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER))
            if m.interaction_id == interaction and m.flags & 64]


async def test_a_discord_command_recorded_but_not_committed_as_the_stop_comes_may_still_be_answered(
        tmp_path: Path, fake: FakeDiscord) -> None:
    adapter = adapter_for(fake)
    refused: list[CommitRefused] = []

    def wrap(gateway: Gateway) -> Callable[[Inbound], Awaitable[object]]:
        refused.append(CommitRefused(gateway.store.db))
        return refused[0].arm(gateway.handle)

    async with gateway_on(tmp_path, adapter, wrap) as gateway:
        interaction = fake.push_interaction("agents", USER)
        await until(lambda: refused[0].fired)
        await adapter.stop_within(0.3)  # its last try is refused too: the lock is still held
        assert discord_answer(fake, interaction) == [MAY_BE_TAKEN.format(command="/agents")]
        await refused[0].release()
        assert recorded(gateway.store.path, interaction)  # the next start answers it


async def test_a_discord_command_the_store_did_not_record_is_still_not_taken(
        tmp_path: Path, fake: FakeDiscord) -> None:
    adapter = adapter_for(fake)
    tries: list[Inbound] = []

    def wrap(gateway: Gateway) -> Callable[[Inbound], Awaitable[object]]:
        handle = gateway.handle

        async def counted(inbound: Inbound) -> object:
            tries.append(inbound)
            return await handle(inbound)

        return counted

    async with gateway_on(tmp_path, adapter, wrap) as gateway:
        locked = LockedOut(gateway.store.db)
        try:
            interaction = fake.push_interaction("agents", USER)
            await until(lambda: tries)
            await adapter.stop_within(0.3)
            assert discord_told_alone(fake, interaction) == [NOT_TAKEN.format(command="/agents")]
        finally:
            locked.release()
        assert not recorded(gateway.store.path, interaction)


async def test_a_slack_command_recorded_but_not_committed_as_the_stop_comes_may_still_be_answered(
        tmp_path: Path) -> None:
    refused: list[CommitRefused] = []

    def wrap(gateway: Gateway) -> Callable[[Inbound], Awaitable[object]]:
        refused.append(CommitRefused(gateway.store.db))
        return refused[0].arm(gateway.handle)

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=10.0)
        async with gateway_on(tmp_path, adapter, wrap) as gateway:
            await fake.push_slash_command("/agents", "U1", fake.dm_channel("U1"))
            await until(lambda: refused[0].fired)
            await adapter.stop_within(0)  # within the 0.5 s before it is handed over again
            assert [e["text"] for e in fake.ephemeral] == [MAY_BE_TAKEN.format(command="/agents")]
            await refused[0].release()
            assert recorded_commands(gateway.store.path, "slack") == 1  # the next start answers it


async def test_a_slack_command_recorded_but_not_committed_and_refused_again_as_the_stop_comes_may_still_be_answered(
        tmp_path: Path) -> None:
    # The stop lets the hand-over finish: its next try, refused too (the lock is still held), raises.
    refused: list[CommitRefused] = []

    def wrap(gateway: Gateway) -> Callable[[Inbound], Awaitable[object]]:
        refused.append(CommitRefused(gateway.store.db))
        return refused[0].arm(gateway.handle)

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=10.0)
        async with gateway_on(tmp_path, adapter, wrap) as gateway:
            await fake.push_slash_command("/agents", "U1", fake.dm_channel("U1"))
            await until(lambda: refused[0].fired)
            await adapter.stop_within(5.0)  # ends once the try 0.5 s after the first is refused
            assert [e["text"] for e in fake.ephemeral] == [MAY_BE_TAKEN.format(command="/agents")]
            await refused[0].release()
            assert recorded_commands(gateway.store.path, "slack") == 1
