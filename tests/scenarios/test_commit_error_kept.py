"""A commit SQLite refuses with a code that is no full disk or lock (a corrupt page, SQLITE_CORRUPT) while the
store keeps the batch, to write it again and commit it once SQLite takes it (`lifecycle.SqliteDatabase`).

The event was recorded and handed on: it is answered. Told final ("could not handle", the web chat's and the
webhook's 422), its sender heard no, then an answer (twice, had they sent it again). It is `NotYetDurable`
instead, a retry (500) whose redelivery is a duplicate, and the message is answered once. Only a commit that
broke a constraint drops its batch, and is raised as it is. A real gateway on a temporary directory, over HTTP.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Any

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from lifecycle import SqliteDatabase
from platforms.fakes.telegram import FakeTelegram
from platforms.fakes.webhook_receiver import signed_post
from platforms.not_recorded import NotYetDurable, storage_refusal
from tests.polling import until
from tests.web_client import get_history, post_message, web_chats

SECRET = "s3cret-for-tests"


def corrupt() -> sqlite3.DatabaseError:
    """SQLite's error for a malformed page, as the sqlite3 module raises it (primary code SQLITE_CORRUPT)."""
    exc = sqlite3.DatabaseError("database disk image is malformed")
    exc.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
    exc.sqlite_errorname = "SQLITE_CORRUPT"  # type: ignore[attr-defined]
    return exc


class CorruptAtCommit:
    """The store's connection, whose COMMIT of the next batch that records an inbox event is refused once with
    SQLITE_CORRUPT, the transaction left open: the store rolls it back and keeps its writes (a code it does not
    drop a batch for), to write them again and commit them on its own a moment later."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.real = db._conn
        db._conn = self  # type: ignore[assignment]  (no seam for the connection: it is the file's own)
        self.armed = False
        self.recording = False
        self.fired = 0

    def execute(self, sql: str, *args: Any) -> Any:
        if self.armed and sql.startswith("INSERT OR IGNORE INTO gateway_inbox ("):
            self.recording = True
        if self.recording and sql == "COMMIT":
            self.armed = self.recording = False
            self.fired += 1
            raise corrupt()
        return self.real.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_refused_commit_is_a_storage_refusal_whatever_its_code() -> None:
    assert not storage_refusal(corrupt())  # before the record: a fault, final
    assert storage_refusal(NotYetDurable.of(corrupt()))  # recorded, kept: may still be answered


async def test_the_web_chat_answers_500_and_the_message_is_answered_once(tmp_path) -> None:
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start()
        failing = CorruptAtCommit(web.gateway.store.db)
        failing.armed = True
        status, body = await post_message(http, web.base, "c1", "hello", key="key-00000001")
        assert failing.fired == 1
        assert (status, body) == (500, {"error": "internal error; retry with the same key"})
        await until(lambda: not web.gateway.store.db.rolled_back)  # the kept batch, committed on its own
        status, body = await post_message(http, web.base, "c1", "hello", key="key-00000001")  # the page's retry
        assert status == 202 and body["duplicate"] is True
        await web.settled()
        assert [m["text"][:8] for m in await get_history(http, web.base)] == ["hello", "[demo] I"]


async def test_the_webhook_answers_500_and_its_retry_is_a_duplicate(tmp_path) -> None:
    platforms = {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}}
    async with web_chats(tmp_path) as start:
        web = await start(platforms=platforms)
        failing = CorruptAtCommit(web.gateway.store.db)
        failing.armed = True
        sent, now = {"text": "hello", "chat_id": "42"}, str(int(time.time()))  # the same request again
        answer = await signed_post(f"{web.base}/webhooks/hook", SECRET, sent, timestamp=now)
        assert failing.fired == 1
        assert answer.status == 500
        await until(lambda: not web.gateway.store.db.rolled_back)
        again = await signed_post(f"{web.base}/webhooks/hook", SECRET, sent, timestamp=now)
        assert again.status == 202 and again.json()["duplicate"] is True


async def test_telegram_hands_the_update_over_again_and_it_is_answered_once(telegram_gateways, caplog) -> None:
    # Dropped as "refused" (a fault), its turn ran all the same: the answer came to an update the adapter had
    # given up on, and one a stop cut off was never handed over again after the restart.
    async with FakeTelegram() as fake:
        gateway = await telegram_gateways(fake, ScriptedModel({"parent": [[{"text": "the answer"}]]}))
        failing = CorruptAtCommit(gateway.store.db)
        failing.armed = True
        with caplog.at_level(logging.WARNING, logger="platforms.telegram"):
            fake.push_message(42, "hello")
            await fake.wait_for(lambda: [m["text"] for m in fake.messages["42"]] == ["the answer"])
            await until(lambda: any("handing it over again" in r.getMessage() for r in caplog.records))
            await fake.wait_for(lambda: not fake.pending)  # handed over again, a duplicate now: confirmed
            await settled(gateway)
        assert failing.fired == 1
        assert [m["text"] for m in fake.messages["42"]] == ["the answer"]
        assert not [r for r in caplog.records if r.name.startswith("platforms") and r.levelno >= logging.ERROR]


async def test_the_store_tells_a_commit_that_dropped_its_batch_from_one_that_kept_it(tmp_path) -> None:
    db = SqliteDatabase(tmp_path / "state.db")
    try:
        db.write("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        db.write("CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
        await db.durable()
        db.read("PRAGMA foreign_keys=ON")  # outside a transaction, or SQLite ignores it
        db.write("INSERT INTO child VALUES (1)")
        with pytest.raises(sqlite3.IntegrityError) as raised:
            await db.durable()
        assert raised.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_CONSTRAINT and db.dropped(raised.value)
        db.write("INSERT INTO parent VALUES (1)")
        failing = CorruptAtCommit(db)
        failing.armed = failing.recording = True
        with pytest.raises(sqlite3.DatabaseError) as raised:
            await db.durable()
        assert not db.dropped(raised.value) and db.rolled_back  # kept, to be written again
        await db.durable()
        assert db.read("SELECT * FROM parent") == [(1,)] and db.read("SELECT * FROM child") == []
    finally:
        db.close()
