"""Edges of the web chat's storage keys of its own, its redirect to a trailing slash and its refused messages' button
names, in a real headless chromium.

- An address of the gateway's own ``/chat`` written percent-encoded (``/ch%61t``, as a link may be) is still
  ``/chat``: the page went on to ``/ch%61t/`` and kept its token and conversation under keys of that spelling, a new
  conversation and a sign-in where the same page had been.
- A proxy that takes a trailing slash off (``/talk/`` answered by a redirect to ``/talk``) sent the page back to where
  it went on from, and the page on again, for ever: a tab loaded it 15 times a second.
- A tab's storage without room for a second copy of what it kept before the upgrade (a refused paste of megabytes):
  the copy was refused, and the refused message, its text's only copy, no longer showed.
- A refused message's button names cut its start after 40 code points, between those of one character (an emoji of
  several, a flag).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from tests.prefix_proxy import PrefixProxy
from tests.scenarios.test_web_chat_accessibility import ax_nodes
from tests.web_client import open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "web-token-0123456789abcdef"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


def loads(page: Any) -> list[str]:
    """The addresses the page's main frame loads, as it goes."""
    seen: list[str] = []
    page.on("framenavigated", lambda frame: seen.append(frame.url) if frame == page.main_frame else None)
    return seen


@pytest.mark.parametrize("path", ["/ch%61t", "/%63hat"])
async def test_the_gateways_own_chat_percent_encoded_stays_where_it_is_with_its_storage(chat, page, path) -> None:
    web = await chat(platforms={"web": {"enabled": True, "token": TOKEN}})
    await open_chat(page, f"{web.base}/chat?chat=c1#token={TOKEN}")
    seen = loads(page)
    await open_chat(page, f"{web.base}{path}?chat=c1")  # the same tab: signed in already
    assert [url.removeprefix(web.base) for url in seen] == [f"{path}?chat=c1"]
    assert await page.evaluate("Object.keys(sessionStorage)") == [f"switchboard.token@{await scope(page)}"]


class SlashTakenOff(PrefixProxy):
    """``/talk`` to the gateway's ``/chat``, and ``/talk/`` answered with a redirect to ``/talk``, as a proxy
    (or the app behind it) set to take trailing slashes off does."""

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/talk/":
            raise web.HTTPMovedPermanently("/talk" + ("?" + request.query_string if request.query_string else ""))
        return await super()._forward(request)


async def test_a_proxy_that_takes_the_slash_off_again_does_not_send_the_page_round_for_ever(chat, page) -> None:
    web = await chat()
    async with SlashTakenOff(web.base, "/talk", to="/chat") as proxy:
        seen = loads(page)
        await page.goto(f"{proxy.origin}/talk?chat=c1", wait_until="commit")
        await page.wait_for_timeout(1500)
        # On once, sent back once, and there it stays (its files at the proxy's root, as without the redirect).
        assert [url.removeprefix(proxy.origin) for url in seen] == ["/talk?chat=c1"] * 2
        assert [line for line in proxy.passed if line.startswith("GET /talk")] == ["GET /talk?chat=c1"] * 2


async def scope(page: Any) -> str:
    """What the page's gateway names its storage by (platforms/web_pages.py, SCOPE_META)."""
    return await page.evaluate("document.querySelector('meta[name=switchboard-scope]').content")


# Kept before the keys were the page's own, or under the page's address, before they were its gateway's.
@pytest.mark.parametrize("old", ["switchboard.refused.c1", "switchboard.refused.c1@/chat/"])
async def test_what_the_tab_kept_is_taken_over_where_its_storage_has_no_room_for_a_second_copy(
        chat, page, old) -> None:
    web = await chat()
    big = "y" * 3_000_000  # over half of what the tab's storage holds (5 Mi characters)
    await page.goto(f"{web.base}/chat/static/chat.css")
    await page.evaluate("""([old, big]) => sessionStorage.setItem(old,
        JSON.stringify([{ key: "k0abcdef", text: big, failed: "Not sent: too large" }]))""", [old, big])
    await open_chat(page, f"{web.base}/chat?chat=c1")
    assert await page.locator("[data-kind=user].failed").count() == 1  # still there, the text's only copy
    assert await page.evaluate("Object.keys(sessionStorage).sort()") == [f"switchboard.refused.c1@{await scope(page)}"]

    async def refuse(route: Any) -> None:
        await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "no"}))

    await page.route("**/chat/api/messages", refuse)
    await type_message(page, "small")  # refused too: kept beside the first, never in its place
    await page.locator("[data-kind=user].failed", has_text="small").wait_for()
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.locator("[data-kind=user].failed").count() == 2


FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # one emoji of five code points


@pytest.mark.parametrize(("text", "excerpt"), [
    ("a" * 38 + f" {FAMILY} family", "a" * 38 + f" {FAMILY}…"),
    ("b" * 39 + "\U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EA", "b" * 39 + "\U0001F1EB\U0001F1F7…"),
    ("c" * 39 + "e\u0301tude", "c" * 39 + "e\u0301…"),
])
async def test_a_refused_messages_button_names_cut_its_start_between_whole_characters(
        chat, page, text, excerpt) -> None:
    web = await chat()

    async def refuse(route: Any) -> None:
        await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "no"}))

    await page.route("**/chat/api/messages", refuse)
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, text)
    await page.locator("[data-kind=user].failed").wait_for()
    names = [n["name"]["value"] for n in await ax_nodes(page)
             if n["role"]["value"] == "button" and n["name"]["value"].startswith(("Edit ", "Dismiss "))]
    assert names == [f"{word} the message \u201c\u2068{excerpt}\u2069\u201d" for word in ("Edit", "Dismiss")]
