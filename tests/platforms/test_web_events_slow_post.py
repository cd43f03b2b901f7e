"""A POST the gateway is slow to take (a /stop waiting for the chat's subagents to stop, a store waiting on a
lock) holds the chat's live events back for `ORDER_HOLD_SECONDS` at most, not for as long as it takes: every
page of the chat froze meanwhile (no typing, no replies from another turn). Its own ``user`` event still comes
once the gateway has it, after them. Over loopback HTTP, the adapter alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import Accepted, Inbound, Outbound
from platforms.web import WebChatAdapter
from tests.web_client import EventStream, post_message, serve

HOLD = 0.05


class SlowIntake:
    """Takes each message only once `release` is set; `taking` is set when one is waiting."""

    def __init__(self) -> None:
        self.taking = asyncio.Event()
        self.release = asyncio.Event()

    async def take(self, inbound: Inbound) -> Accepted:
        self.taking.set()
        await self.release.wait()
        return Accepted(None, f"web|{inbound.chat_id}|")


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, SlowIntake, str]]:
    intake = SlowIntake()
    adapter = WebChatAdapter(files_dir=tmp_path / "files", order_hold=HOLD)
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    yield adapter, intake, base
    intake.release.set()
    await adapter.stop()
    await runner.cleanup()


async def test_a_slow_post_holds_the_chats_events_back_briefly_not_until_it_is_taken(served, http) -> None:
    adapter, intake, base = served
    async with EventStream(http, base, "c1") as other_page:
        assert (await other_page.next())[0] == "history"
        posting = asyncio.ensure_future(post_message(http, base, "c1", "/stop", key="key-slow-1"))
        await asyncio.wait_for(intake.taking.wait(), 5)
        await adapter.typing("c1", None)
        await adapter.send(Outbound(chat_id="c1", thread_id=None, text="another turn's reply",
                                    kind="reply", idempotency_key="k-reply"))
        # While the POST is still waiting for the gateway.
        assert await asyncio.wait_for(other_page.next(), 5) == ("typing", {})
        kind, data = await asyncio.wait_for(other_page.next(), 5)
        assert (kind, data["id"]) == ("message", "k-reply")
        assert not posting.done()
        intake.release.set()
        assert (await posting)[0] == 202
        kind, data = await asyncio.wait_for(other_page.next(), 5)
        assert (kind, data["id"], data["text"]) == ("user", "user:key-slow-1", "/stop")
        # Nothing is held behind a place that is gone.
        await adapter.idle("c1", None)
        assert await asyncio.wait_for(other_page.next(), 5) == ("idle", {})


async def test_a_quick_post_still_shows_before_what_the_chat_published_meanwhile(served, http) -> None:
    adapter, intake, base = served
    async with EventStream(http, base, "c1") as other_page:
        assert (await other_page.next())[0] == "history"
        posting = asyncio.ensure_future(post_message(http, base, "c1", "/agents", key="key-quick-1"))
        await asyncio.wait_for(intake.taking.wait(), 5)
        await adapter.send(Outbound(chat_id="c1", thread_id=None, text="its answer",
                                    kind="command", idempotency_key="k-answer"))
        intake.release.set()
        assert (await posting)[0] == 202
        assert (await other_page.next())[0:1] == ("user",)
        kind, data = await other_page.next()
        assert (kind, data["id"]) == ("message", "k-answer")
