"""Another process holding the state database's write lock (an `sqlite3` shell left after BEGIN IMMEDIATE) shows
in /healthz and /metrics, not only in the log: every message was refused while both said all was well. Once the
lock is let go of, both clear at their next read, with no message needed to find it."""

from __future__ import annotations

import logging
import sqlite3
import time

import aiohttp
import pytest

from gateway.server import Server
from gateway.store import write_lock
from gateway.testing import RecordingAdapter, make_config
from lifecycle import SqliteDatabase

BUSY_TIMEOUT = 0.2
GAUGE = "switchboard_state_db_write_lock_held"
OK = {"status": "ok", "reason": None, "since": None}


@pytest.fixture
async def served(tmp_path, gateways):
    servers = []

    async def start():
        chat = RecordingAdapter()
        gateway = await gateways(make_config(tmp_path), [chat])
        db = gateway.store.db
        db.busy_timeout = BUSY_TIMEOUT  # the store's 5 s, shortened
        db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        server = Server(gateway, "127.0.0.1", 0)
        await server.start()
        servers.append(server)
        return gateway, chat, server

    yield start
    for server in servers:
        await server.stop()


async def scrape(server: Server) -> tuple[int, dict, str]:
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{server.url}/healthz") as response:
            status, body = response.status, await response.json()
        async with client.get(f"{server.url}/metrics") as response:
            assert response.status == 200
            gauge = next((line for line in (await response.text()).splitlines() if line.startswith(GAUGE)), None)
    return status, body, gauge


async def test_a_held_write_lock_is_a_503_and_a_gauge_of_1_until_it_is_let_go_of(served, caplog):
    caplog.set_level(logging.INFO, logger="lifecycle.database")
    gateway, chat, server = await served()
    status, body, gauge = await scrape(server)
    assert (status, body["status"], body["write_lock"], gauge) == (200, "ok", OK, f"{GAUGE} 0.0")
    other = sqlite3.connect(gateway.store.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        before = time.time()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await chat.say("hello", chat="c1", event_id="e1")
        status, body, gauge = await scrape(server)
        assert (status, body["status"], gauge) == (503, "down", f"{GAUGE} 1.0")
        assert (body["down"], body["storage"], body["wal_checkpointer"]) == ([], OK, OK)  # every other field kept
        shown = body["write_lock"]
        assert shown["status"] == "held"
        assert shown["reason"].startswith("state database write lock held by another process: switchboard.db"
                                          " (the gateway store and the lifecycle journal); nothing is recorded")
        assert str(gateway.store.db.path.parent) not in shown["reason"]
        assert before <= shown["since"] <= time.time()
        assert (await scrape(server))[:2] == (status, body)  # a read that finds it still held changes nothing
    finally:
        other.execute("ROLLBACK")
        other.close()
    status, body, gauge = await scrape(server)  # no message since: the read itself finds the lock free
    assert (status, body["status"], body["write_lock"], gauge) == (200, "ok", OK, f"{GAUGE} 0.0")
    assert [r.levelname for r in caplog.records if "write lock" in r.getMessage()] == ["ERROR", "INFO"]
    assert not (await chat.say("hello", chat="c1", event_id="e1")).duplicate  # its platform sends it again
    await chat.wait_for(lambda: len(chat.texts("reply")) == 1)


async def test_each_database_held_is_named_and_the_first_since(tmp_path):
    store = SqliteDatabase(tmp_path / "store.db", busy_timeout=BUSY_TIMEOUT)
    journal = SqliteDatabase(tmp_path / "journal.db", busy_timeout=BUSY_TIMEOUT)
    databases = {"the gateway store": store, "the lifecycle journal": journal}
    others = []
    try:
        for db in (store, journal):
            db.write("CREATE TABLE t (k)")
            await db.durable()
            other = sqlite3.connect(db.path, isolation_level=None)
            others.append(other)
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                db.write("INSERT INTO t VALUES (1)")
        shown = write_lock.health(databases)
        assert shown["reason"].startswith("state database write lock held by another process: store.db (the gateway"
                                          " store); journal.db (the lifecycle journal); ")
        assert shown["since"] == store.write_lock_held_since
        others[0].execute("ROLLBACK")
        shown = write_lock.health(databases)
        assert shown["reason"].startswith("state database write lock held by another process: journal.db (the"
                                          " lifecycle journal); ")
        assert shown["since"] == journal.write_lock_held_since
        others[1].execute("ROLLBACK")
        assert write_lock.health(databases) == OK
    finally:
        for other in others:
            other.close()
        store.close()
        journal.close()
