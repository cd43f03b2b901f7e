"""The operator console's buttons as a screen reader lists them, in a real headless chromium: each named for what it
acts on, not "Stop, Stop, Stop" for every subagent of every chat."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_each_button_is_named_for_what_it_acts_on_and_begins_with_what_it_shows(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', ?, ?, NULL, 3, 'database or disk is full', ?, ?)",
        [(f"ev-{text}", json.dumps({"chat_id": "c9", "text": text}), now, now) for text in ("figs", "plums")])
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-names-1")
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#work .child[data-state=RUNNING] >> text=pears")
    await page.wait_for_selector("#dead tr >> text=plums")
    buttons = page.get_by_role("button")
    for shown in ("Stop", "Retry", "Dismiss"):
        assert await buttons.filter(has_text=shown).count() > 0
        assert await page.get_by_role("button", name=shown, exact=True).count() == 0, shown  # and no more
    assert await page.get_by_role("button", name=re.compile(r"^Stop the turn in web · c1$")).count() == 1
    for goal in ("apples", "pears"):
        assert await page.get_by_role("button", name=re.compile(rf"^Stop the subagent .*\[stall\] {goal}")).count() == 1
    for action in ("Retry", "Dismiss"):
        for text in ("figs", "plums"):
            name = re.compile(rf"^{action} the event from web · c9 .*{text}")
            assert await page.get_by_role("button", name=name).count() == 1
