"""A file download that goes silent midway is given up after `STALLED` seconds without a byte, a
`NetworkError` the gateway tries again, not waited out for the whole time the file's size is given; on Discord and Slack, as on Telegram, a
large file that keeps coming is given that time, not a fixed 120 s (`platforms.telegram_files`,
`platforms.discord_files`, `platforms.slack_files`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiohttp import web

from platforms import discord_files, slack_files, telegram_files
from platforms.base import Attachment, NetworkError
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

QUIET = 0.3
"""`STALLED` here: seconds without a byte before a download is given up."""
LARGE = b"L" * 1_000_000
"""Given 20 s more than the request timeout by its size (`telegram_files.SLOWEST_DOWNLOAD`)."""


class FileHost:
    """A CDN on loopback serving `LARGE` at ``url``: its length and first 500 bytes at once, the rest once
    ``released`` is set (never, for a connection gone silent)."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.url = ""

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream",
                                               "Content-Length": str(len(LARGE))})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):  # the download gave up meanwhile
            await response.write(LARGE[:500])
            await self.released.wait()
            await response.write(LARGE[500:])
        return response


@pytest.fixture
async def host() -> AsyncIterator[FileHost]:
    served = FileHost()
    app = web.Application()
    app.router.add_get("/large.bin", served._serve)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    served.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/large.bin"  # type: ignore[union-attr]
    try:
        yield served
    finally:
        served.released.set()
        await runner.cleanup()


async def _download(platform: str, url: str) -> bytes:
    """`LARGE` from ``url`` as ``platform``'s adapter downloads an attachment (its size not known ahead)."""
    attachment = Attachment("document", "large.bin", None, None, url if platform == "discord" else "F1")
    if platform == "discord":
        return await discord_files.download(attachment, 10 * len(LARGE))

    async def info(file_id: str) -> dict:
        return {"file": {"id": file_id, "size": len(LARGE), "url_private_download": url,
                         "mimetype": "application/octet-stream"}}

    async with aiohttp.ClientSession() as session:
        return await slack_files.download(info, session, "xoxb-test", attachment, 10 * len(LARGE))


MODULES = {"discord": discord_files, "slack": slack_files}


@pytest.mark.parametrize("platform", MODULES)
async def test_a_download_that_goes_silent_is_given_up_without_waiting_out_its_timeout(
        platform: str, host: FileHost, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MODULES[platform], "STALLED", QUIET)
    # It was waited out for the whole 120 s at each of the gateway's four tries, the chat's turn held.
    with pytest.raises(NetworkError, match="large.bin"):
        await asyncio.wait_for(_download(platform, host.url), 5)


@pytest.mark.parametrize("platform", MODULES)
async def test_a_large_download_that_keeps_coming_is_given_time_by_its_size(
        platform: str, host: FileHost, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fixed 120 s for any file cut a large one off over a slow link, at every try.
    monkeypatch.setattr(MODULES[platform], "TIMEOUT", QUIET)  # LARGE's size gives it 20 s more
    downloading = asyncio.ensure_future(_download(platform, host.url))
    done, _ = await asyncio.wait({downloading}, timeout=QUIET * 2)
    assert not done, downloading.exception()
    host.released.set()
    assert await downloading == LARGE


@pytest.fixture
async def telegram() -> AsyncIterator[tuple[FakeTelegram, TelegramAdapter]]:
    async with FakeTelegram() as fake:
        session = AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url), timeout=QUIET)
        adapter = TelegramAdapter(fake.token, bot=Bot(fake.token, session=session))
        await adapter.start(Sink())
        try:
            yield fake, adapter
        finally:
            fake.release_downloads()
            await adapter.stop()


async def test_a_telegram_download_that_goes_silent_is_given_up_without_waiting_out_its_size(
        telegram: tuple[FakeTelegram, TelegramAdapter], monkeypatch: pytest.MonkeyPatch) -> None:
    fake, adapter = telegram
    monkeypatch.setattr(telegram_files, "STALLED", QUIET)
    large = fake.add_file(LARGE)
    fake.hold_downloads(after=500)  # the first bytes come, then nothing: a connection gone silent
    # It was waited out for its size's 20 s at each of the gateway's four tries, the chat's turn held.
    with pytest.raises(NetworkError, match="large.bin"):
        await asyncio.wait_for(adapter.download(Attachment("document", "large.bin", None, None, large["file_id"])),
                               5)

