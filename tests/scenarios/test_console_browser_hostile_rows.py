"""What strangers wrote in the store's rows (an outbox message and its error, a chat and thread id, a delegation's
id and reason, a dead letter of 5 MB), in the operator console in a real headless chromium: shown as text, none of it
markup, and a huge letter cut to its one-line preview (tests/gateway/test_console_hostile_text.py covers goals, logged
warnings and another site's page)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.console.snapshot import ERROR, PREVIEW
from tests.gateway.test_console_hostile_text import EVIL, WATCH
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

HUGE = 5_000_000


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_rows_strangers_wrote_show_as_text_and_a_huge_letter_as_its_preview(chat, page) -> None:
    web = await chat()
    db, now = web.gateway.store.db, time.time()
    db.write_many("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
                  " created_at, last_error, attempts) VALUES (?, 'web', ?, 'reply', 'send', ?, 0, 0, ?, ?, ?, 1)",
                  [(f"k-{status}", "c" + EVIL, EVIL, status, now, "err " + EVIL) for status in ("pending", "failed")])
    db.write_many("INSERT INTO gateway_sessions (key, session_id, generation, mode, created_at, updated_at)"
                  " VALUES (?, 's-evil', 1, 'inline', ?, ?)", [(f"web|c{EVIL}|t{EVIL}", now, now)])
    db.write_many("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                  " dispatched_at, tasks, status, reason, settled_at) VALUES (?, ?, 's', 't', ?, '[]', 'suppressed',"
                  " ?, ?)", [("d" + EVIL, f"web|c{EVIL}|", now, "r" + EVIL, now)])
    db.write_many("INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error,"
                  " received_at, dead_at) VALUES ('web', 'ev-huge', ?, NULL, 3, ?, ?, ?)",
                  [(json.dumps({"chat_id": "c9", "text": "y" * HUGE}), "E" * HUGE, now, now)])
    await web.gateway.store.durable()
    async with aiohttp.ClientSession() as http, http.get(f"{web.base}/console/api/state") as response:
        assert len(await response.read()) < 20_000  # each refresh, to every page: not the 10 MB of the letter
    await page.add_init_script(WATCH)
    await page.goto(f"{web.base}/console")
    for rows in ("#failed", "#pending", "#sessions", "#delegations", "#dead"):
        await page.wait_for_selector(f"{rows} tr")
    shown = await page.evaluate("""() => {
      const cells = (rows) => [...document.querySelectorAll(rows + " td")].map((td) => td.textContent);
      return { failed: cells("#failed"), pending: cells("#pending"), sessions: cells("#sessions"),
               delegations: cells("#delegations"), dead: cells("#dead"),
               markup: document.querySelectorAll("main img, main svg, main script, main a, main iframe").length,
               pwned: window.pwned ?? null, violations: window.__violations };
    }""")
    for rows in ("failed", "pending"):
        where, _, _, _, error, text, _ = shown[rows]
        assert [where, error, text] == ["web · c" + EVIL, "err " + EVIL, EVIL], rows
    assert shown["sessions"][1] == f"c{EVIL} / t{EVIL}"
    assert shown["delegations"][0] == "d" + EVIL and shown["delegations"][4] == "suppressed r" + EVIL
    where, event, _, _, error, text, _ = shown["dead"]
    assert (where, event, len(error), len(text)) == ("web · c9", "ev-huge", ERROR, PREVIEW)
    assert (shown["markup"], shown["pwned"], shown["violations"]) == (0, None, [])
