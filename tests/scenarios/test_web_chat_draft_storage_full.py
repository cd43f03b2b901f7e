"""The web chat page's draft (`sessionStorage`, per chat) is kept where the tab's storage has room for it: a
refused message put back in the box, with no room left for it as a draft too, must not stop the page's sending.
A real headless chromium against a `WebChatAdapter`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platforms.web import MAX_BODY
from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

QUOTA = 5 * 1024 * 1024
"""Characters (UTF-16 units, keys included) a tab's sessionStorage holds per origin in Chromium: 10 MiB."""
BIG = MAX_BODY + 50_000
"""A paste the gateway refuses for its size (413), which the page keeps in red and puts back in the box."""
KEPT = QUOTA - BIG - 500_000
"""Another chat's refused messages, kept in this tab: room is left for the big one once, not twice."""


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_refused_message_the_storage_has_no_room_to_keep_as_a_draft_too_does_not_stop_the_sending(
        served, page) -> None:
    intake, base = served
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate("""([kept, big]) => {
        sessionStorage.setItem("switchboard.refused.c0", JSON.stringify([{ key: "k0", text: "y".repeat(kept) }]));
        const input = document.getElementById("input");
        input.value = "x".repeat(big);  // pasted: filled and sent without typing each character
        input.dispatchEvent(new Event("input"));
        input.form.requestSubmit();
    }""", [KEPT, BIG])
    await page.wait_for_selector("[data-role=user].failed")
    assert await page.evaluate("document.getElementById('input').value.length") == BIG  # to shorten, not lost
    await page.evaluate("""() => {
        const input = document.getElementById("input");
        input.value = "sent next";
        input.dispatchEvent(new Event("input"));
        input.form.requestSubmit();
    }""")
    await page.wait_for_selector("[data-role=user]:not(.pending):not(.failed)")
    assert intake.texts == ["sent next"]
    assert errors == []
