"""``GET /chat/api/history?before=``: the messages before one a page shows, for a reader scrolled up to its oldest,
``history_limit`` at a time, with ``"more": true`` while older ones may be kept; and the ``more`` of the history a page
opens or reconnects with. Over loopback HTTP, the adapter alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from platforms.web import RESUME_LIMIT, WebChatAdapter
from tests.platforms.test_web_events_resume import first_history, ids
from tests.web_client import Intake, replies, serve

LIMIT = 3


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    intake.messages = replies(f"reply {n}" for n in range(10))  # m0 … m9
    adapter = WebChatAdapter(history_reader=intake.history, history_limit=LIMIT, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    yield intake, base
    await adapter.stop()
    await runner.cleanup()


async def history(http: aiohttp.ClientSession, base: str, **params: str) -> tuple[int, Any]:
    async with http.get(f"{base}/chat/api/history", params={"chat": "c1", **params}) as response:
        return response.status, await response.json()


async def test_the_messages_before_one_come_a_history_at_a_time_until_the_first(served, http) -> None:
    _, base = served
    assert await history(http, base) == (200, {"messages": replies(f"reply {n}" for n in range(10))[7:], "more": True})
    status, older = await history(http, base, before="m7")
    assert (status, ids(older), older["more"]) == (200, ["m4", "m5", "m6"], True)
    status, older = await history(http, base, before="m1")
    assert (status, ids(older), "more" in older) == (200, ["m0"], False)  # the first: nothing more to ask for
    assert await history(http, base, before="m0") == (200, {"messages": []})


async def test_before_a_message_the_gateway_no_longer_has_is_404(served, http) -> None:
    intake, base = served
    del intake.messages[:5]  # older than the store keeps
    assert await history(http, base, before="m2") == (404, {"error": "no such message among the chat's last 2,000"
                                                                       " messages"})


async def test_the_history_a_page_opens_or_reconnects_with_says_whether_older_ones_are_kept(served, http) -> None:
    intake, base = served
    _, opened = await first_history(http, base)
    assert (ids(opened), opened["more"]) == (["m7", "m8", "m9"], True)
    _, resumed = await first_history(http, base, after="m2")  # reaches back to m2: m0 and m1 are older
    assert (ids(resumed)[0], resumed["more"]) == ("m2", True)
    _, resumed = await first_history(http, base, after="m0")
    assert (ids(resumed)[0], "more" in resumed) == ("m0", False)
    del intake.messages[:8]
    _, opened = await first_history(http, base)
    assert "more" not in opened  # fewer than the history's limit: all there is


async def test_a_history_limit_past_what_before_reaches_promises_no_older_ones(tmp_path, http) -> None:
    # history_limit may be up to 10,000, `before` finds its message among the last 2,000 only: a page opened with
    # more said "more", and every scroll up to its oldest was a 404, "Older messages could not be loaded".
    intake = Intake()
    intake.messages = replies(f"reply {n}" for n in range(RESUME_LIMIT + 10))
    adapter = WebChatAdapter(history_reader=intake.history, history_limit=RESUME_LIMIT + 5,
                             files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    try:
        status, opened = await history(http, base)
        assert (status, len(opened["messages"]), "more" in opened) == (200, RESUME_LIMIT + 5, False)
        _, streamed = await first_history(http, base)
        assert "more" not in streamed
    finally:
        await adapter.stop()
        await runner.cleanup()
