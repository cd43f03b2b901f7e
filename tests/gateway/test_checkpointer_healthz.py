"""A WAL checkpointer that ended by itself shows in /healthz too, as a degraded part (still 200), not only in
/metrics: a monitor watching /healthz alone saw `ok` while every chat stalled, or the log grew."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import aiohttp
import pytest

from gateway.server import Server
from gateway.store.checkpointer import ENDED_REASON, UNCHECKED_REASON
from gateway.testing import RecordingAdapter, make_config

OK = {"status": "ok", "reason": None, "since": None}


@pytest.fixture
async def served(tmp_path, gateways):
    servers = []

    async def start():
        gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
        server = Server(gateway, "127.0.0.1", 0)
        await server.start()
        servers.append(server)
        return gateway, server

    yield start
    for server in servers:
        await server.stop()


async def healthz(server: Server) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as client, client.get(f"{server.url}/healthz") as response:
        return response.status, await response.json()


async def end_checkpointer(gateway) -> None:
    task = gateway._checkpointer._task
    task.cancel()  # ended other than by its stop (the worst a bug can do: it survives every exception)
    await asyncio.wait([task])


async def test_an_ended_checkpointer_shows_in_healthz_without_a_503_until_a_new_one_starts(served):
    gateway, server = await served()
    status, body = await healthz(server)
    assert (status, body["status"], body["wal_checkpointer"]) == (200, "ok", OK)
    before = time.time()
    await end_checkpointer(gateway)
    status, body = await healthz(server)
    assert (status, body["status"], body["down"], body["storage"]) == (200, "ok", [], OK)  # every field kept
    shown = body["wal_checkpointer"]
    assert (shown["status"], shown["reason"]) == ("ended", ENDED_REASON)
    assert before <= shown["since"] <= time.time()
    await gateway._checkpointer.stop()
    gateway._checkpointer.start()
    assert (await healthz(server))[1]["wal_checkpointer"] == OK


async def test_a_log_nothing_checkpoints_any_more_is_told_apart(served):
    gateway, server = await served()
    db = gateway.store.db

    def refused(enabled: bool) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    db.automatic_checkpoints = refused
    try:
        await end_checkpointer(gateway)
    finally:
        del db.automatic_checkpoints
    status, body = await healthz(server)
    assert (status, body["wal_checkpointer"]["status"]) == (200, "ended")
    assert body["wal_checkpointer"]["reason"] == UNCHECKED_REASON
