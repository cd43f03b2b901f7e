"""A web chat POST whose page hangs up before its body is whole, as a phone losing its network does mid-send."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.web import WebChatAdapter
from tests.platforms.cut_short import Handled, cut_short
from tests.web_client import Intake


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[Intake, Handled, str]]:
    intake, handled = Intake(), Handled()
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path / "files")
    app = web.Application(middlewares=[handled.middleware])
    app.router.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    await adapter.start(intake.take)
    try:
        yield intake, handled, f"http://{host}:{port}/chat/api/messages"
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_a_page_hanging_up_mid_body_is_no_error_in_the_log_and_nothing_is_taken(
        served, caplog: pytest.LogCaptureFixture) -> None:
    intake, handled, url = served
    await cut_short(url, {"Content-Type": "application/json"}, handled)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert intake.texts == []
