"""/metrics while a group of its live gauges cannot be read: the last values read, and how old they are."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading

import aiohttp

from agent.testing import FakeClock
from gateway import backlog
from gateway.live_reads import LiveReads
from gateway.testing import make_config, settled
from platforms.base import Forbidden
from tests.gateway.observing import FailingAdapter, samples, served

GROUPS = {"outbox", "subagents", "sessions", "platforms", "backlog"}


async def scrape(base: str):
    async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics") as response:
        assert response.status == 200, await response.text()
        return samples(await response.text())


def refuse_reads(db) -> None:
    """Every read of the store's own connection raises, as while a full disk keeps it from writing again what SQLite
    rolled back; the backlog's reads, on a connection of their own, go on."""

    def refused(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    db.read = db.read_one = refused


async def test_a_group_whose_read_fails_keeps_its_last_values_and_says_how_old_they_are(tmp_path, gateways,
                                                                                         caplog) -> None:
    clock = FakeClock(autojump=False)
    chat = FailingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]}, clock=clock)
    chat.fail_next(Forbidden("the bot was blocked"))
    await chat.say("hello")
    await settled(gateway)
    db = gateway.store.db
    async with served(gateway) as server:
        well = await scrape(server.url)
        clock.advance(20)
        with caplog.at_level(logging.INFO, logger="gateway.metrics"):
            refuse_reads(db)
            try:
                sick = await scrape(server.url)
                clock.advance(15)
                sicker = await scrape(server.url)
            finally:
                del db.read, db.read_one
            again = await scrape(server.url)

    assert well("switchboard_outbox_messages", status="failed") == 1
    # The series Prometheus has stay, at what was last read: no gap, no made-up 0.
    assert sick.labels("switchboard_outbox_messages", "status") == {"pending", "failed", "dead"}
    assert {g: well("switchboard_live_read_up", group=g) for g in GROUPS} == dict.fromkeys(GROUPS, 1)
    assert {g: well("switchboard_live_read_age_seconds", group=g) for g in GROUPS} == dict.fromkeys(GROUPS, 0)
    for page in (sick, sicker):
        assert page.labels("switchboard_outbox_messages", "status") == {"pending", "failed", "dead"}
        assert page("switchboard_outbox_messages", status="failed") == 1
        assert page("switchboard_live_read_up", group="outbox") == 0
        assert page("switchboard_live_read_up", group="backlog") == 1  # read on a connection of its own
        assert page("switchboard_storage_up") == 0  # SQLite refused it
    assert sick("switchboard_live_read_age_seconds", group="outbox") == 20
    assert sicker("switchboard_live_read_age_seconds", group="outbox") == 35
    assert sicker("switchboard_live_read_age_seconds", group="sessions") == 0
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "gateway.metrics"]
    assert logged == [
        ("WARNING", "/metrics: reading the outbox failed, so its last read is shown until it can be read: "
                    "OperationalError: disk I/O error"),
        ("INFO", "/metrics: the outbox read again"),
    ]
    assert again("switchboard_live_read_up", group="outbox") == 1
    assert again("switchboard_live_read_age_seconds", group="outbox") == 0
    assert again("switchboard_storage_up") == 1


async def test_a_read_still_under_way_keeps_the_last_values_with_storage_up(tmp_path, gateways, monkeypatch) -> None:
    monkeypatch.setattr(backlog, "READ_WAIT", 0.05)
    clock = FakeClock(autojump=False)
    chat = FailingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock)
    async with served(gateway) as server:
        well = await scrape(server.url)
        clock.advance(5)  # the backlog's read is no longer reused
        release = threading.Event()
        hung = backlog._READER.submit(release.wait)  # the reads' thread held, as by a read of a hung disk
        try:
            slow = await scrape(server.url)
        finally:
            release.set()
            await asyncio.wrap_future(hung)
    assert well("switchboard_catching_up") == 0 and "switchboard_catching_up" in well.names
    assert "switchboard_catching_up" in slow.names and "switchboard_inbox_waiting" in slow.names
    assert slow("switchboard_live_read_up", group="backlog") == 0
    assert slow("switchboard_live_read_age_seconds", group="backlog") == 5
    assert slow("switchboard_storage_up") == 1  # slow, not refused


async def test_a_group_never_read_is_left_out_and_has_no_age(tmp_path, gateways, caplog) -> None:
    chat = FailingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    refuse_reads(gateway.store.db)
    try:
        with caplog.at_level(logging.WARNING, logger="gateway.metrics"):
            page = samples(gateway.metrics.exposition().decode())
    finally:
        del gateway.store.db.read, gateway.store.db.read_one
    # Nothing read yet, nothing to show (the backlog too: without a scrape's refresh, it reads on the store's own).
    assert {"switchboard_outbox_messages", "switchboard_inbox_waiting"}.isdisjoint(page.names)
    assert page("switchboard_live_read_up", group="outbox") == 0
    assert page.labels("switchboard_live_read_age_seconds", "group") == GROUPS - {"outbox", "backlog"}
    assert "reading the outbox failed, so it is left out until it can be read" in caplog.text


def test_only_a_page_that_keeps_last_reads_gives_them_and_a_default_before_the_first() -> None:
    now = [100.0]
    kept, plain = LiveReads(logging.getLogger("t"), "p", keep_last=True, clock=lambda: now[0]), \
        LiveReads(logging.getLogger("t"), "p", clock=lambda: now[0])

    def fails() -> int:
        raise TimeoutError("slow")

    assert kept.read("g", fails, -1) == -1
    assert kept.read("g", lambda: 7, -1) == 7
    now[0] = 130.0
    assert kept.read("g", fails, -1) == 7
    assert kept.read_at == {"g": 100.0} and "g" in kept.failing
    assert plain.read("g", lambda: 7, -1) == 7
    assert plain.read("g", fails, -1) == -1  # the console and /healthz say it is unread instead
