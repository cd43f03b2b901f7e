"""`webhook_adapter`: a webhook-mode TelegramAdapter mounted on a loopback aiohttp server, as the
gateway mounts it, registered with a FakeTelegram."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink


@contextlib.asynccontextmanager
async def webhook_adapter(fake: FakeTelegram, sink: Sink | None = None,
                          **kw: Any) -> AsyncIterator[tuple[TelegramAdapter, Sink]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook",
                              webhook_url=f"http://127.0.0.1:{sock.getsockname()[1]}/telegram", **kw)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    sink = sink or Sink()
    try:
        await adapter.start(sink)
        yield adapter, sink
    finally:
        await adapter.stop()
        await runner.cleanup()
