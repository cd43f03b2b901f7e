"""A file the Telegram adapter uploads is given time by its size, not only aiogram's request timeout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from platforms.base import Outbound, OutboundFile
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

REQUEST_TIMEOUT = 0.2
"""The bot's request timeout here (aiogram's default is 60 s): what a call of no size is given."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.mark.parametrize(("name", "data"), [("report.bin", b"\x00" * 1_000_000),
                                            ("chart.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 1_000_000)])
async def test_an_upload_slower_than_the_request_timeout_is_not_cut_off(fake: FakeTelegram, tmp_path: Path,
                                                                        name: str, data: bytes) -> None:
    # aiogram bounds a call by its request timeout whole, upload included (60 s by default): a large
    # file over a slow uplink was cut off midway, tried again by the outbox, and cut off again.
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url), timeout=REQUEST_TIMEOUT)
    adapter = TelegramAdapter(fake.token, bot=Bot(fake.token, session=session))
    await adapter.start(Sink())
    path = tmp_path / name
    path.write_bytes(data)
    method = "sendPhoto" if name.endswith(".png") else "sendDocument"
    fake.hold(method)  # Telegram still taking the file in
    try:
        sending = asyncio.ensure_future(adapter.send_file(Outbound(chat_id="42", thread_id=None, text="here"),
                                                          OutboundFile(str(path), name, len(data))))
        await fake.wait_for(lambda: fake.calls_to(method))
        # Past the request timeout (several times over), the upload is still going on ...
        done, _ = await asyncio.wait({sending}, timeout=REQUEST_TIMEOUT * 3)
        assert not done, sending.exception()
        fake.release(method)
        await sending  # ... and arrives, once
        assert len(fake.calls_to(method)) == 1 and len(fake.messages["42"]) == 1
    finally:
        fake.release(method)
        await adapter.stop()
