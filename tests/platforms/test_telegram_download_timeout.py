"""A file the Telegram adapter downloads is given time by its size (`platforms.telegram_files`), not a
fixed minute for any file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from platforms.base import Attachment, NetworkError
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

REQUEST_TIMEOUT = 0.2
"""The bot's request timeout here (aiogram's default is 60 s): what a download of no size is given."""
LARGE = b"L" * 1_000_000
"""Given 20 s more than the request timeout (`telegram_files.SLOWEST_DOWNLOAD`)."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url), timeout=REQUEST_TIMEOUT)
    adapter = TelegramAdapter(fake.token, bot=Bot(fake.token, session=session))
    await adapter.start(Sink())
    try:
        yield adapter
    finally:
        fake.release_downloads()
        await adapter.stop()


async def test_the_time_a_download_is_given_grows_with_the_files_size(fake: FakeTelegram,
                                                                      adapter: TelegramAdapter) -> None:
    # A fixed 60 s for every download cut a large voice note or document off midway over a slow
    # link, and each try again the same way; a small file Telegram stops sending waited as long.
    small, large = fake.add_file(b"s" * 1000, "voice", ".oga"), fake.add_file(LARGE)
    fake.hold_downloads(after=500)  # a slow link: the first bytes come, the rest is still on its way
    downloading = asyncio.ensure_future(adapter.download(Attachment("document", "large.bin", None, None,
                                                                    large["file_id"])))
    await fake.wait_for(lambda: fake.downloads)
    # The small file is given up after about the request timeout ...
    with pytest.raises(NetworkError, match="small.oga"):
        await asyncio.wait_for(adapter.download(Attachment("voice", "small.oga", None, None, small["file_id"])), 5)
    # ... while the large one, well past it, is still coming ...
    done, _ = await asyncio.wait({downloading}, timeout=REQUEST_TIMEOUT * 2)
    assert not done, downloading.exception()
    fake.release_downloads()
    assert await downloading == LARGE  # ... and arrives whole
    assert len(fake.calls_to("getFile")) == 2
