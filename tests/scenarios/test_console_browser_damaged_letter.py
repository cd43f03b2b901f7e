"""A dead letter that no longer reads back (a hand edit, a damaged write), in the operator console in a real headless
chromium: named by its id, as ``switchboard inbox dead`` lists it, not as an event from a chat it cannot name."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_letter_that_does_not_read_back_is_named_by_its_id(chat, page) -> None:
    web = await chat()
    now = time.time()
    db = web.gateway.store.db
    db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', ?, ?, NULL, 3, 'boom', ?, ?)",
        [("ev-figs", json.dumps({"chat_id": "c9", "text": "figs"}), now, now), ("ev-torn", '{"chat_id": "c9", "te',
                                                                              now, now)])
    [[torn]] = db.read("SELECT id FROM gateway_dead_letters WHERE event_id='ev-torn'")
    await page.goto(f"{web.base}/console")
    row = page.locator(f"#dead tr[data-letter-id='{torn}']")
    await row.wait_for()
    assert await row.locator("td").first.text_content() == ""  # no chat to name: not " · "
    for action in ("Retry", "Dismiss"):
        name = re.compile(rf"^{action} dead letter {torn} \(could not be read back")
        assert await row.get_by_role("button", name=name).count() == 1, action
    assert await page.get_by_role("button", name=re.compile(r"^Dismiss the event from web · c9 .*figs")).count() == 1
    asked: list[str] = []

    async def cancel(dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", cancel)
    await row.get_by_role("button", name=re.compile("^Dismiss")).click()
    await row.locator("button:enabled >> text=Dismiss").wait_for()
    assert asked == [f"Forget dead letter {torn} for good? It is never handled."]
