"""The operator console while the state database refuses reads: it shows what it can and says what it could not read."""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

import aiohttp

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import served


def refuse_reads(db) -> None:
    """Every read of the store raises, as they do while a full disk keeps it from writing again
    what SQLite rolled back (`SqliteDatabase.read`)."""

    def refused(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    db.read = db.read_one = refused


def allow_reads(db) -> None:
    del db.read, db.read_one


async def get(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(f"{url}/console/api/state") as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def first_event(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(f"{url}/console/api/events") as response:
        assert response.status == 200, await response.text()
        lines: list[str] = []
        while not (lines and lines[-1] == ""):
            lines.append((await response.content.readline()).decode().rstrip("\n"))
        assert lines[0] == "event: state"
        return json.loads(lines[1].removeprefix("data: "))


async def test_the_state_shows_what_it_can_and_names_what_it_could_not_read(tmp_path, gateways, caplog) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    await chat.say("hello", chat="c7")
    await settled(gateway)
    db = gateway.store.db
    caplog.set_level(logging.INFO, logger="gateway.console")
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        healthy = await get(http, server.url)
        refuse_reads(db)
        try:
            sick = await get(http, server.url)
            streamed = await first_event(http, server.url)  # the page's own way in: its first event
        finally:
            allow_reads(db)
        well = await get(http, server.url)

    assert healthy["unread"] == {} and healthy["sessions"][0]["chat_id"] == "c7"
    assert set(sick["unread"]) == {"sessions", "delegations", "outbox"}
    assert sick["unread"]["outbox"] == "OperationalError: disk I/O error"
    assert sick["sessions"] == [] and sick["delegations"] == []
    # Unknown, not zero: "0 failed" would tell the operator nothing is stuck.
    assert sick["outbox"] == {"pending": None, "failed": None, "dead": None, "pending_messages": [],
                              "failed_messages": [], "dead_letters": []}
    assert sick["platforms"] == healthy["platforms"] and sick["storage"] == healthy["storage"]
    assert streamed["unread"] == sick["unread"]
    warned = [e["message"] for e in sick["errors"] if e["logger"] == "gateway.console"]
    assert warned == ["console: reading outbox failed, so it is left out until it can be read: "
                      "OperationalError: disk I/O error",
                      "console: reading delegations failed, so it is left out until it can be read: "
                      "OperationalError: disk I/O error",
                      "console: reading sessions failed, so it is left out until it can be read: "
                      "OperationalError: disk I/O error"]  # newest first; once, though read twice
    assert well["unread"] == {} and well["sessions"] == healthy["sessions"] and well["outbox"] == healthy["outbox"]
    read_again = [r.getMessage() for r in caplog.records if r.name == "gateway.console" and r.levelname == "INFO"]
    assert read_again == ["console: sessions read again", "console: delegations read again",
                          "console: outbox read again"]
