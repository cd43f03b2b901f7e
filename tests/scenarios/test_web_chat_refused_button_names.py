"""The Edit and Dismiss buttons of the messages the gateway refused, as a screen reader lists them, in a real headless
chromium against the adapter alone: each button's name says which message it acts on, after the word it shows.
Named by their words alone, a list of the page's buttons read "Edit, Dismiss, Edit, Dismiss", nothing telling
which message each would put back in the box or throw away."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.scenarios.test_web_chat_accessibility import ax_nodes
from tests.scenarios.test_web_chat_screen_reader import served  # noqa: F401
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

LONG = "please summarise   the\nthree reports from last week and compare them with the quarter before"
EXCERPT = "please summarise the three reports from…"
WORDS = ("Edit", "Dismiss")


def quoted(text: str) -> str:
    return f"\u201c\u2068{text}\u2069\u201d"


async def test_each_refused_messages_buttons_name_the_message_they_act_on(served, page: Any) -> None:  # noqa: F811
    _, _, base = served

    async def refuse(route: Any) -> None:  # the gateway's final answer to every message
        await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "no"}))

    await page.route("**/chat/api/messages", refuse)
    await open_chat(page, f"{base}/chat?chat=c1")
    for text in ("hi 👋", LONG):
        await type_message(page, text)
        await page.locator("[data-kind=user].failed", has_text=text.split()[0]).wait_for()
        await page.fill("#input", "")  # the refusal put it back in the box
    buttons = [n["name"]["value"] for n in await ax_nodes(page)
               if n["role"]["value"] == "button" and n["name"]["value"].startswith(("Edit", "Dismiss"))]
    # The word the button shows first (WCAG 2.5.3, "label in name": a voice user says "click Edit"), then which
    # message: its start, its spaces and lines as one, cut short with an ellipsis, quoted as the console quotes one.
    assert buttons == [f"{word} the message {quoted(text)}" for text in ("hi 👋", EXCERPT) for word in WORDS]
    assert await page.locator(".failed .actions button").all_inner_texts() == list(WORDS) * 2
    await page.reload()  # kept through a reload, named alike
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.get_by_role("button", name=f"Dismiss the message {quoted('hi 👋')}", exact=True).count() == 1
    await page.get_by_role("button", name=f"Edit the message {quoted(EXCERPT)}", exact=True).click()
    assert await page.input_value("#input") == LONG
