"""The web chat when the gateway fails on a message before recording it. A fault the message trips (which
would fail alike at every try) is a final 422 with `NOT_HANDLED_MESSAGE`: the page shows it as not sent,
puts its text back in the box and sends what was typed after it. Answered 500 ("retry with the same key")
it was posted again for ever, every later message waiting behind it, across reloads too. A refusal of the
store (a full disk) stays a 500, posted again until there is room: nothing is lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from platforms.base import Accepted, Inbound
from platforms.not_recorded import NOT_HANDLED_MESSAGE
from tests.sqlite_errors import full_disk
from tests.web_client import EventStream, Intake, chat_alone, open_chat, post_message, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


class Failing(Intake):
    """The gateway, failing on the texts in `bugs` (a fault they trip) and, while `full` is set, on every
    message for want of room."""

    def __init__(self) -> None:
        super().__init__()
        self.bugs: set[str] = set()
        self.full = False

    async def take(self, inbound: Inbound) -> Accepted:
        if inbound.text in self.bugs:
            raise KeyError("a fault this message trips")
        if self.full:
            raise full_disk()
        return await super().take(inbound)


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Failing, str]]:
    intake = Failing()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_message_the_gateway_fails_on_is_a_final_422_saying_so_and_shown_to_no_page(served, caplog) -> None:
    intake, base = served
    intake.bugs.add("odd")
    async with aiohttp.ClientSession() as http, EventStream(http, base, "c1") as other_tab:
        assert (await other_tab.next())[0] == "history"
        status, body = await post_message(http, base, "c1", "odd", key="key-00000001")
        assert (status, body) == (422, {"error": NOT_HANDLED_MESSAGE})
        assert 400 <= status < 500  # final to the page (chat.js) and to any client: no retry
        status, _ = await post_message(http, base, "c1", "next", key="key-00000002")
        assert status == 202
        shown = await other_tab.until("user")
        assert shown["text"] == "next"  # nothing of "odd" came before it
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None  # the traceback, for the operator


async def test_a_store_that_cannot_record_the_message_is_still_a_500_to_retry(served) -> None:
    intake, base = served
    intake.full = True
    async with aiohttp.ClientSession() as http:
        status, body = await post_message(http, base, "c1", "hello", key="key-00000001")
        assert (status, body) == (500, {"error": "internal error; retry with the same key"})
        intake.full = False
        status, _ = await post_message(http, base, "c1", "hello", key="key-00000001")  # the page's retry
        assert status == 202
    assert intake.texts == ["hello"]


async def test_the_page_shows_it_not_sent_with_its_text_in_the_box_and_sends_what_came_after(served, page) -> None:
    intake, base = served
    intake.bugs.add("odd")
    await open_chat(page, f"{base}/chat?chat=c1")
    typed = asyncio.Event()

    async def after_both_are_typed(route) -> None:
        await typed.wait()
        await route.continue_()

    await page.route("**/chat/api/messages", after_both_are_typed)
    await type_message(page, "odd")
    await type_message(page, "next")  # typed while "odd" is on its way: it waited behind it for ever
    typed.set()
    refused = await page.wait_for_selector("[data-kind=user].failed", timeout=5_000)
    assert await refused.eval_on_selector(".text", "e => e.innerText") == "odd"
    assert await refused.eval_on_selector(".reason", "e => e.innerText") == "Not sent: " + NOT_HANDLED_MESSAGE
    await page.wait_for_selector("[data-role=user].pending", state="detached", timeout=5_000)
    assert intake.texts == ["next"]
    assert await page.input_value("#input") == "odd"  # to send again, perhaps in other words
    await page.reload()  # nothing left to post again; the refused message stays, its only copy
    await page.wait_for_selector("body[data-state=connected]")
    # Nothing waits to be sent: none stored (an empty list is kept as no key at all).
    assert await page.evaluate("Object.keys(sessionStorage).filter((k) => k.startsWith('switchboard.pending.'))") == []
    assert await page.locator("[data-kind=user].failed .text").inner_text() == "odd"
