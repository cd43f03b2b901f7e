"""The outbox's counts that /metrics and the console show are read on the backlog's thread and a connection of its
own: read on the event loop, they held every chat's turns 20-40 ms at 100,000 parts pending, at each scrape and at each
of the console's refreshes (up to ten a second). They still show each change at the next read, and a read that hangs
leaves its gauges (its section) out instead of hanging the scrape until Prometheus gives up on it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import aiohttp

from gateway import backlog
from gateway.store import NewMessage
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.observing import samples, served
from tests.gateway.test_console import state


async def scrape(base: str):
    async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics") as response:
        assert response.status == 200, await response.text()
        return samples(await response.text())


async def pending_and_failed(gateway) -> None:
    """One part pending and one failed, of a platform not served here (nothing sends them), committed."""
    outbox = gateway.store.outbox
    outbox.add_messages([NewMessage("p:0", "irc", "c1", None, "waits"),
                         NewMessage("f:0", "irc", "c1", None, "gave up")])
    outbox.mark_failed(outbox.message("f:0").id, "Forbidden: the bot was blocked")
    await gateway.store.durable()


async def test_a_scrape_and_a_console_refresh_count_the_outbox_off_the_event_loop(tmp_path, gateways):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    await pending_and_failed(gateway)
    statements: list[str] = []
    async with served(gateway) as server:
        gateway.store.db._conn.set_trace_callback(statements.append)
        try:
            gauges = await scrape(server.url)
            shown = (await state(server.url))["outbox"]
        finally:
            gateway.store.db._conn.set_trace_callback(None)
    assert (gauges("switchboard_outbox_messages", status="pending"),
            gauges("switchboard_outbox_messages", status="failed")) == (1, 1)
    assert (shown["pending"], shown["failed"]) == (1, 1)
    # Not on the store's connection, which only the event loop's thread uses.
    assert [sql for sql in statements if "COUNT(*) FROM gateway_outbox" in sql] == []


async def test_the_counts_change_at_the_next_read_after_a_commit_of_the_gateway_or_of_another_process(
        tmp_path, gateways):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    await pending_and_failed(gateway)
    async with served(gateway) as server:
        assert (await state(server.url))["outbox"]["pending"] == 1
        gateway.store.outbox.add_messages([NewMessage("q:0", "irc", "c1", None, "waits too")])
        await gateway.store.durable()
        assert (await state(server.url))["outbox"]["pending"] == 2  # not a read kept from before
        with sqlite3.connect(gateway.store.db.path) as other:  # an sqlite3 shell, another gateway command
            other.execute("UPDATE gateway_outbox SET status='failed' WHERE key='q:0'")
        gauges = await scrape(server.url)
    assert (gauges("switchboard_outbox_messages", status="pending"),
            gauges("switchboard_outbox_messages", status="failed")) == (1, 2)


async def test_a_read_that_hangs_leaves_its_gauges_out_and_the_scrape_answers(tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(backlog, "READ_WAIT", 0.05)
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    await pending_and_failed(gateway)
    release = threading.Event()
    hung = backlog._READER.submit(release.wait)  # the reads' thread held, as by a read of a hung disk
    try:
        async with served(gateway) as server:
            async with asyncio.timeout(2):
                gauges = await scrape(server.url)
                shown = await state(server.url)
            assert "switchboard_outbox_messages" not in gauges.names  # no made-up 0
            assert "switchboard_catching_up" not in gauges.names  # the backlog's read waits behind it too
            assert gauges("switchboard_storage_up") == 1  # slow, not refused
            assert gauges("switchboard_sessions") == 0 and "switchboard_sessions" in gauges.names
            assert shown["outbox"]["pending"] is None
            assert shown["unread"]["outbox"].startswith("SlowRead: the state database is still being read")
            release.set()
            async with asyncio.timeout(2):
                while "switchboard_outbox_messages" not in (gauges := await scrape(server.url)).names:
                    await asyncio.sleep(0.01)
            assert gauges("switchboard_outbox_messages", status="pending") == 1
    finally:
        release.set()
        await asyncio.wrap_future(hung)


async def test_the_gauges_take_the_scrapes_read_though_the_store_committed_since(tmp_path, gateways):
    # While the gateway works it commits at each loop turn: a scrape's gauges, collected after its read, would
    # otherwise find the database changed and count again on the event loop, at each scrape of a busy gateway.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    await pending_and_failed(gateway)
    await gateway.metrics.backlog.refresh()  # what the scrape does first, off the event loop
    gateway.store.outbox.add_messages([NewMessage("q:0", "irc", "c1", None, "waits too")])
    await gateway.store.durable()
    statements: list[str] = []
    gateway.store.db._conn.set_trace_callback(statements.append)
    try:
        gauges = samples(gateway.metrics.exposition().decode())
    finally:
        gateway.store.db._conn.set_trace_callback(None)
    assert gauges("switchboard_outbox_messages", status="pending") == 1  # as read a moment ago
    assert [sql for sql in statements if "COUNT(*) FROM gateway_outbox" in sql] == []
