"""What the gateway has still to work off shows in /healthz and /metrics: after a start with messages left waiting
(replayed from the inbox) or parts left unsent, both said `ok` and nothing more while chats waited for minutes.
Catching up is no 503. The reads go through the indexes of the waiting rows and are not made per request."""

from __future__ import annotations

import asyncio
import sqlite3

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.backlog import FRESH_SECONDS, READ_SHARE, GatewayBacklog
from gateway.server import Server
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.store import test_waiting_counts_indexed as waiting_counts_indexed
from tests.gateway.store.conftest import event, msg

GAUGES = ("switchboard_inbox_waiting", "switchboard_inbox_oldest_seconds", "switchboard_outbox_oldest_seconds",
          "switchboard_catching_up")


async def scrape(server: Server) -> tuple[int, dict, dict[str, float]]:
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{server.url}/healthz") as response:
            status, body = response.status, await response.json()
        async with client.get(f"{server.url}/metrics") as response:
            lines = (await response.text()).splitlines()
    gauges = {name: float(value) for name, value in (line.split(" ") for line in lines if line.startswith(GAUGES))}
    return status, body, gauges


async def test_a_start_with_messages_left_waiting_is_catching_up_until_they_are_answered(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=(model := ScriptedModel({"parent": [[{"wait": "go"}]]})),
                             clock=clock)
    await chat.say("still there?")
    await model.reached("go")
    await gateway.stop(grace=0)  # its message is answered after the next start
    clock.advance(300)
    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": lambda request: {"wait": "go", "text": "here"}})
    gateway2 = await gateways(config, [chat2], model=model2, clock=clock)
    server = Server(gateway2, "127.0.0.1", 0)
    await server.start()
    try:
        await model2.reached("go")
        status, body, gauges = await scrape(server)
        assert (status, body["status"], body["down"]) == (200, "ok", [])
        assert body["backlog"] == {"catching_up": True, "inbox_waiting": 1, "inbox_oldest_seconds": 300.0,
                                   "outbox_pending": 0, "outbox_oldest_seconds": None, "reason": None}
        assert gauges == {"switchboard_inbox_waiting": 1.0, "switchboard_inbox_oldest_seconds": 300.0,
                          "switchboard_outbox_oldest_seconds": 0.0, "switchboard_catching_up": 1.0}

        clock.advance(FRESH_SECONDS)
        await chat2.say("and now?", chat="c2")  # received after the start: waiting, but nothing to catch up on
        body = (await scrape(server))[1]
        assert (body["backlog"]["catching_up"], body["backlog"]["inbox_waiting"]) == (True, 2)

        model2.release("go")
        await chat2.wait_for(lambda: chat2.texts("reply") == ["here", "here"])
        await settled(gateway2)
        clock.advance(FRESH_SECONDS)
        status, body, gauges = await scrape(server)
        assert (status, body["status"]) == (200, "ok")
        assert body["backlog"] == {"catching_up": False, "inbox_waiting": 0, "inbox_oldest_seconds": None,
                                   "outbox_pending": 0, "outbox_oldest_seconds": None, "reason": None}
        assert gauges["switchboard_catching_up"] == 0.0 and gauges["switchboard_inbox_waiting"] == 0.0
    finally:
        await server.stop()


def test_parts_left_unsent_at_the_start_are_caught_up_on_and_those_of_a_platform_not_served_left_out(tmp_path):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        left, _ = store.outbox.add_messages([msg("old:0"), msg("gone:0", platform="irc")])
        store.inbox.accept(event("e-gone", platform="irc"), "t-gone")  # kept for a start that serves irc
        clock.now += 60
        backlog = GatewayBacklog(store, ["telegram"], clock)
        clock.now += 30
        read = backlog.now()
        assert (read.catching_up, read.outbox_pending, read.outbox_oldest_seconds) == (True, 1, 90.0)
        assert (read.inbox_waiting, read.inbox_oldest_seconds) == (0, None)

        store.outbox.add_messages([msg("new:0")])
        store.outbox.mark_sent(left, "m1")
        clock.now += FRESH_SECONDS
        read = backlog.now()
        assert (read.catching_up, read.outbox_pending, read.outbox_oldest_seconds) == (False, 1, FRESH_SECONDS)
    finally:
        store.close()


def test_a_read_is_reused_for_a_moment_and_longer_the_longer_it_took(tmp_path):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        backlog = GatewayBacklog(store, ["telegram"], clock)
        assert backlog.now().outbox_pending == 0
        store.outbox.add_messages([msg("a:0")])
        clock.now += FRESH_SECONDS / 2
        assert backlog.now().outbox_pending == 0  # a monitor polling often costs one read
        clock.now += FRESH_SECONDS / 2
        assert backlog.now().outbox_pending == 1

        # A read that took long (a backlog of 100,000 rows) is reused for long enough to keep to its share.
        slow = SlowRows(store, clock, took=0.1)
        backlog = GatewayBacklog(slow, ["telegram"], clock)
        backlog.now()
        store.outbox.add_messages([msg("b:0")])
        clock.now += 0.1 / READ_SHARE - 0.2  # the read itself took 0.1 of it
        assert backlog.now().outbox_pending == 1
        clock.now += 0.2
        assert backlog.now().outbox_pending == 2
    finally:
        store.close()


class SlowRows:
    """A store whose outbox count takes ``took`` seconds on ``clock``."""

    def __init__(self, store: GatewayStore, clock: FakeClock, took: float) -> None:
        self.db, self.inbox, self._store, self._clock, self._took = store.db, store.inbox, store, clock, took
        self.outbox = self

    def last_id(self) -> int:
        return self._store.outbox.last_id()

    def pending_by_platform(self) -> dict[str, int]:
        self._clock.now += self._took
        return self._store.outbox.pending_by_platform()

    def first_pending(self, platforms: tuple[str, ...]) -> tuple[int, float] | None:
        return self._store.outbox.first_pending(platforms)


def test_the_reads_go_through_the_indexes_of_the_rows_waiting(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    try:
        store.outbox.add_messages([msg("a:0"), msg("b:0", platform="slack")])
        store.inbox.accept(event("e1"), "t-1")
        backlog = GatewayBacklog(store, ["telegram", "slack"], store._clock)
        statements: list[str] = []
        store.db._conn.set_trace_callback(statements.append)
        try:
            backlog.now()
        finally:
            store.db._conn.set_trace_callback(None)
        reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(reads) == 4
        plans = {sql: " | ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {sql}")) for sql in reads}
        waiting = ("INDEX gateway_inbox_open_platform", "INDEX gateway_outbox_unsent")
        assert {sql: plan for sql, plan in plans.items() if not any(index in plan for index in waiting)} == {}
        counts = [sql for sql in reads if "COUNT(*)" in sql]
        assert len(counts) == 2 and not any(rows_read(store, sql) for sql in counts)  # index entries, no rows
        assert not any("TEMP B-TREE" in plan or "SCAN" in plan for sql, plan in plans.items() if sql not in counts)
    finally:
        store.close()


async def test_healthz_and_metrics_read_the_backlog_off_the_event_loop(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "go"}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    try:
        await chat.say("still there?")
        await model.reached("go")
        statements: list[str] = []
        gateway.store.db._conn.set_trace_callback(statements.append)
        try:
            status, body, gauges = await scrape(server)
        finally:
            gateway.store.db._conn.set_trace_callback(None)
        assert (status, body["backlog"]["inbox_waiting"], gauges["switchboard_inbox_waiting"]) == (200, 1, 1.0)
        # Read on a connection of a worker thread's own: no chat waits for the counts.
        assert [sql for sql in statements if "gateway_inbox" in sql] == []
        model.release("go")
        await chat.wait_for(lambda: chat.texts("reply"))
    finally:
        await server.stop()


async def test_callers_at_the_same_time_share_one_read_and_a_failed_one_is_made_again(tmp_path):
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        store.outbox.add_messages([msg("a:0")])
        await store.durable()  # what a connection of its own reads: what is committed
        backlog = GatewayBacklog(store, ["telegram"], clock)
        first, second = await asyncio.gather(backlog.read(), backlog.read())
        assert first is second and first.outbox_pending == 1
        assert await backlog.read() is first  # fresh yet
        await backlog.refresh()
        assert backlog.now() is first

        clock.advance(FRESH_SECONDS)
        store.close()
        (tmp_path / "state.db").unlink()  # a connection of its own finds no database
        results = await asyncio.gather(backlog.read(), backlog.read(), return_exceptions=True)
        assert [type(result) for result in results] == [sqlite3.OperationalError] * 2
        await backlog.refresh()  # never raises: the read is left to `now` to make again, and raise
        with pytest.raises(sqlite3.ProgrammingError):
            backlog.now()
        assert not (tmp_path / "state.db").exists()
    finally:
        store.close()


def rows_read(store: GatewayStore, sql: str) -> list[str]:
    """The steps of ``sql``'s program that read a table's row, not an index entry (see
    tests/gateway/store/test_waiting_counts_indexed.py)."""
    return waiting_counts_indexed.rows_read(store, sql)
