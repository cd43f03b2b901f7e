"""A webhook POST whose caller hangs up before its body is whole (a caller's timeout, its host going down)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import Inbound
from platforms.webhook import WebhookAdapter
from platforms.webhook_signing import signed_headers
from tests.platforms.cut_short import Handled, cut_short

SECRET = "alerts-secret-0123456789"


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[list[Inbound], Handled, str]]:
    taken: list[Inbound] = []
    handled = Handled()

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound)

    adapter = WebhookAdapter({"alerts": (SECRET, None)}, files_dir=tmp_path / "files")
    app = web.Application(middlewares=[handled.middleware])
    app.router.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    await adapter.start(sink)
    try:
        yield taken, handled, f"http://{host}:{port}/webhooks/alerts"
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_a_caller_hanging_up_mid_body_is_no_error_in_the_log_and_nothing_is_taken(
        served, caplog: pytest.LogCaptureFixture) -> None:
    taken, handled, url = served
    headers = {**signed_headers(SECRET, b'{"text": "disk full"}', now=time.time()), "Content-Type": "application/json"}
    await cut_short(url, headers, handled)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert taken == []
