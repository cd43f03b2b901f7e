"""The web chat page keeping a long queue in a tab's storage with no room for a pasted log near its head: what fits
is the longest run of the oldest messages, found in a few writes, not one write per message queued at each save.
A real headless chromium against a `WebChatAdapter`."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.scenarios.test_web_chat_storage_full import FILL, NOTE
from tests.web_client import Intake, chat_alone, open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# The page's own key (live.js scoped()), under the name its gateway gives it.
PENDING = "'switchboard.pending.c1@' + document.querySelector('meta[name=switchboard-scope]').content"
COUNT = """() => {
  const key = """ + PENDING + """;
  window.writes = 0;
  const setItem = Storage.prototype.setItem;
  Storage.prototype.setItem = function (name, value) {
    if (name === key) window.writes += 1;
    return setItem.call(this, name, value);
  };
}"""


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_long_queue_behind_a_paste_that_does_not_fit_keeps_what_fits_in_a_few_writes(served, page) -> None:
    intake, base = served
    held = asyncio.Event()

    async def hold(route) -> None:  # the gateway is away: nothing is confirmed, everything queues
        held.set()

    await open_chat(page, f"{base}/chat?chat=c1")
    await page.route("**/chat/api/messages", hold)
    await page.evaluate(FILL, "sessionStorage")
    # Room for a few short messages, not for a pasted log.
    await page.evaluate("() => { const f = sessionStorage.getItem('filler');"
                        " sessionStorage.setItem('filler', f.slice(0, f.length - 3000)); }")
    typed = ["m0", "m1", "m2", "log " + "x" * 10_000] + [f"later {i}" for i in range(40)]
    for text in typed:
        await type_message(page, text)
    await held.wait()
    await page.evaluate(COUNT)
    await type_message(page, "the last")
    await page.locator("[data-role=user]", has_text="the last").wait_for()
    kept = await page.evaluate(f"JSON.parse(sessionStorage.getItem({PENDING})).map((m) => m.text)")
    assert kept == typed[:3]  # the oldest that fit, none after the one that does not
    writes = await page.evaluate("() => window.writes")
    assert writes <= 1 + math.ceil(math.log2(len(typed) + 1)), writes  # not one per message queued
    assert await page.locator(NOTE).count() == 1
    assert intake.texts == []
