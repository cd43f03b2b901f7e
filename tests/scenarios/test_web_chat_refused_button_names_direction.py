"""Direction controls in a refused message's start, as its Edit and Dismiss buttons quote it, in a real headless
chromium against the adapter alone. The quote is an isolate (U+2068 ... U+2069), but one the excerpt closed itself (a
stray U+2069) ended it early: a right-to-left override after that ran on over the rest of the name, and an isolate the
excerpt opened and never closed took the name's closing quote into it. The excerpt holds none of them, as the gateway's
own quotes hold none (`gateway.excerpt`), and they take no room of its 40 characters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.scenarios.test_web_chat_accessibility import ax_nodes
from tests.scenarios.test_web_chat_screen_reader import served  # noqa: F401
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize(("text", "excerpt"), [
    ("invoice\u2069\u202egpj.exe", "invoicegpj.exe"),  # closes the quote's isolate, then overrides what follows
    ("\u2067\u05e9\u05dc\u05d5\u05dd friends", "\u05e9\u05dc\u05d5\u05dd friends"),  # opened, never closed
    ("".join(c + "x" for c in CONTROLS) + "a" * 30, "x" * 12 + "a" * 28 + "…"),  # 40 shown characters, not 40 of all
    ("\u200f \u202e \u2066 ok", "ok"),  # what a control stood between is spaces at an end, trimmed
])
async def test_a_refused_messages_button_names_quote_no_direction_control(
        served, page: Any, text: str, excerpt: str) -> None:  # noqa: F811
    _, _, base = served

    async def refuse(route: Any) -> None:
        await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "no"}))

    await page.route("**/chat/api/messages", refuse)
    await open_chat(page, f"{base}/chat?chat=c1")
    await type_message(page, text)
    await page.locator("[data-kind=user].failed").wait_for()
    names = [n["name"]["value"] for n in await ax_nodes(page)
             if n["role"]["value"] == "button" and n["name"]["value"].startswith(("Edit ", "Dismiss "))]
    assert names == [f"{word} the message \u201c\u2068{excerpt}\u2069\u201d" for word in ("Edit", "Dismiss")]
    await page.locator(".failed .actions button.edit").click()
    assert await page.input_value("#input") == text  # the message itself keeps them: Edit puts it back as typed
