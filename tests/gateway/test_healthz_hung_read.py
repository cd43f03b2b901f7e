"""/healthz with the backlog's read hung (a hung disk, the reads' one thread held): it answers, its status by its own
rules, the backlog `null` with why, instead of waiting for that read until the health check gives up and counts the
gateway down (a restart, for a backlog that is no fault in itself)."""

from __future__ import annotations

import asyncio
import threading

import aiohttp

from gateway import backlog
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.observing import served


async def healthz(base: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http, http.get(f"{base}/healthz") as response:
        return response.status, await response.json()


async def test_healthz_answers_while_the_backlogs_read_hangs(tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(backlog, "READ_WAIT", 0.05)
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    release = threading.Event()
    hung = backlog._READER.submit(release.wait)  # the reads' thread held, as by a read of a hung disk
    try:
        async with served(gateway) as server:
            async with asyncio.timeout(2):
                status, body = await healthz(server.url)
            assert (status, body["status"]) == (200, "ok")
            assert body["backlog"]["catching_up"] is None
            assert "SlowRead: the state database is still being read" in body["backlog"]["reason"]
            release.set()
            async with asyncio.timeout(2):
                while (body := (await healthz(server.url))[1])["backlog"]["reason"] is not None:
                    await asyncio.sleep(0.01)
            assert body["backlog"]["catching_up"] is False
    finally:
        release.set()
        await asyncio.wrap_future(hung)
