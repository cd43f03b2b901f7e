"""The state database full while the gateway runs, end to end through the real SDKs against the
loopback fakes: ``PRAGMA max_page_count`` on the gateway's live connection makes SQLite refuse
writes with SQLITE_FULL exactly as a full disk does, and raising it again is the room an operator
frees. Nothing a user sent may be lost for it, and everything resumes without a restart."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import ModelRequest
from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from lifecycle import SqliteDatabase
from lifecycle._database import RECOVERY_SECONDS
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.webhook_receiver import signed_post
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.gateway.observing import samples
from tests.web_client import get_history, post_message, web_chats

USER = 42
SECRET = "s3cret-for-tests"
LONG = "x" * 3990  # past a page: its inbox row needs a page the full disk cannot give


def echo(request: ModelRequest) -> dict:
    return {"text": f"echo: {request.messages[-1]['content'][:12]}"}


async def disk_full(db: SqliteDatabase) -> None:
    await db.durable()
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")


class Ahead:
    """The system clock, ``seconds`` ahead: the time the gateway would otherwise have to wait."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return time.time() + self.seconds

    def monotonic(self) -> float:
        return time.monotonic() + self.seconds

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def room_again(db: SqliteDatabase) -> None:
    db.read("PRAGMA max_page_count=1073741823")


@pytest.fixture
async def discord_gateway(tmp_path) -> AsyncIterator[tuple[FakeDiscord, Callable[[], Awaitable[Gateway]]]]:
    async with FakeDiscord() as fake:
        started: list[Gateway] = []

        async def start() -> Gateway:
            config = make_config(tmp_path, platforms={"discord": {"allow_all": True}})
            started.append(await start_gateway(config, [adapter_for(fake)], script={"parent": echo}))
            return started[-1]

        try:
            yield fake, start
        finally:
            for gateway in started:
                await gateway.stop(grace=0)
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_discord_message_the_full_disk_kept_out_of_the_inbox_is_answered_once_there_is_room(
        discord_gateway, caplog):
    # Discord sends a message once, over the gateway connection: an event the inbox could not record
    # is handed over again until it is, not dropped (Discord never sends it again).
    fake, start = discord_gateway
    gateway = await start()
    dm = fake.dm_channel(USER)
    await disk_full(gateway.store.db)
    fake.push_dm(USER, "first " + LONG)
    await fake.wait_for(lambda: any(r.name == "platforms.discord" and r.levelno >= logging.WARNING
                                    for r in caplog.records))
    assert fake.bot_messages(dm) == []
    room_again(gateway.store.db)
    await fake.wait_for(lambda: fake.bot_messages(dm), timeout=10)
    fake.push_dm(USER, "second")
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 2)
    assert [m.content for m in fake.bot_messages(dm)] == ["echo: first xxxxxx", "echo: second"]


async def storage_up(http: aiohttp.ClientSession, base: str) -> float:
    async with http.get(f"{base}/metrics") as answer:
        return samples(await answer.text())("switchboard_storage_up")


async def test_healthz_the_console_and_metrics_say_the_state_database_cannot_be_written_until_it_can(
        tmp_path, caplog):
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start()
        db = web.gateway.store.db
        assert await storage_up(http, web.base) == 1
        assert (await post_message(http, web.base, "c1", "hello", key="first-key"))[0] == 202
        await web.settled()
        await disk_full(db)
        for _ in range(3):  # a page posting again and again, as it does
            assert (await post_message(http, web.base, "c1", "later " + LONG, key="later-key"))[0] == 500
        async with http.get(f"{web.base}/healthz") as answer:
            assert answer.status == 503
            health = await answer.json()
        assert health["status"] == "down" and health["down"] == []  # no platform is down: the database is
        assert health["storage"]["status"] == "down"
        assert health["storage"]["reason"] == f"{db.path.name} cannot be written: database or disk is full"
        async with http.get(f"{web.base}/console/api/state") as answer:
            assert answer.status == 200
            state = await answer.json()
        assert state["storage"] == health["storage"]
        assert await storage_up(http, web.base) == 0
        said = [r.getMessage() for r in caplog.records if r.name == "lifecycle.database" and r.levelno == logging.ERROR
                and "cannot be written" in r.getMessage()]
        assert len(said) == 1 and str(db.path) in said[0]  # once, naming the file, not once per message

        room_again(db)
        assert (await post_message(http, web.base, "c1", "later " + LONG, key="later-key"))[0] == 202
        await web.settled()
        async with http.get(f"{web.base}/healthz") as answer:  # one write through is no recovery yet
            assert answer.status == 503
        db.clock = Ahead(RECOVERY_SECONDS)  # writes have gone through that long, none refused
        async with http.get(f"{web.base}/healthz") as answer:
            assert answer.status == 200
            assert (await answer.json())["storage"] == {"status": "ok", "reason": None, "since": None}
        assert await storage_up(http, web.base) == 1
        assert [m["text"][:8] for m in await get_history(http, web.base)] == [
            "hello", "[demo] I", "later xx", "[demo] I"]


async def test_messages_the_full_disk_refuses_are_one_warning_per_adapter_not_a_traceback_each(tmp_path, caplog):
    # The database's own error line says why; a busy gateway would otherwise log a traceback per message.
    platforms = {"web": {"enabled": True}, "webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}}
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(platforms=platforms)
        await disk_full(web.gateway.store.db)
        for n in range(3):
            assert (await post_message(http, web.base, "c1", f"{n} " + LONG, key=f"later-key-{n}"))[0] == 500
            answer = await signed_post(f"{web.base}/webhooks/hook", SECRET, {"text": f"{n} " + LONG, "chat_id": "42"})
            assert answer.status == 500
        for adapter in ("platforms.web", "platforms.webhook"):
            [said] = [r for r in caplog.records if r.name == adapter]
            assert said.levelno == logging.WARNING and said.exc_info is None, adapter
            assert "could not record event" in said.getMessage() and "database or disk is full" in said.getMessage()
            assert LONG not in said.getMessage() and SECRET not in said.getMessage()
        room_again(web.gateway.store.db)
        assert (await post_message(http, web.base, "c1", "0 " + LONG, key="later-key-0"))[0] == 202
        await web.settled()
