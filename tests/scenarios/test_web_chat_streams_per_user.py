"""A page opened past its user's cap on event streams (`platforms.web_events.STREAMS_PER_USER`) says why it is not
connected, in a real headless chromium, and connects by itself once one of the user's tabs is closed. The streams
open meanwhile are left alone: ending the oldest for it instead had that page reconnect and end the next, round and
round, for as long as the user kept more tabs than that open."""

from __future__ import annotations

import contextlib

import aiohttp
import pytest

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from platforms.web_events import STREAMS_PER_USER
from tests.polling import until
from tests.web_client import EventStream, Intake, open_chat, serve

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


async def test_a_page_past_the_cap_says_why_and_connects_once_a_tab_is_closed(tmp_path, page) -> None:
    intake = Intake()
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    try:
        await open_chat(page, f"{base}/chat?chat=c1")
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
                contextlib.AsyncExitStack() as opened:
            scripted = []
            for _ in range(STREAMS_PER_USER - 1):
                scripted.append(stream := await opened.enter_async_context(EventStream(http, base, "c1")))
                await stream.until("history")
            late = await page.context.new_page()
            await late.clock.install()  # the page's own timers: its retry, 10 s later, without the test waiting
            await late.goto(f"{base}/chat?chat=c1")
            await late.wait_for_selector("body[data-state=refused]")
            assert await late.text_content("#status") == (
                f"not connected: too many event streams open for this user ({STREAMS_PER_USER}): close some of the"
                " chat's tabs or windows")
            assert await page.get_attribute("body", "data-state") == "connected"  # the first tab: left alone

            await page.close()
            assert runner.server is not None
            await until(lambda: any(c.transport is None for c in runner.server.connections), timeout=5)
            await late.clock.fast_forward(10_000)
            await late.wait_for_selector("body[data-state=connected]")
            await adapter.send(Outbound("c1", None, "once connected", kind="reply", idempotency_key="m1"))
            await late.wait_for_selector("[data-text='once connected']")
            for stream in scripted:  # none of the others was ended to make room
                assert (await stream.until("message"))["text"] == "once connected"
    finally:
        await adapter.stop()
        await runner.cleanup()
