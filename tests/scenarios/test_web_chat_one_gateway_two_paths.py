"""One gateway a proxy publishes at two paths of one origin (``/a/chat`` and ``/b/chat``, or an old path a user
bookmarked), in a real headless chromium: one conversation, whichever path the page is opened at. Scoped by the page's
address, each path kept a token, a conversation and a draft of its own: signed in at one, the page asked again at the
other, and what was typed or refused at one did not show at the other. The gateway now names itself in the page, and
its storage is scoped by that name; what a tab kept under the page's address is taken over once."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.prefix_proxy import PrefixProxy
from tests.web_client import WebChat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "token-of-the-one-0123456789abcdef"


@contextlib.asynccontextmanager
async def two_paths(tmp_path) -> AsyncIterator[PrefixProxy]:
    """One gateway, under ``/a`` and ``/b`` of one proxy."""
    chat = WebChat(tmp_path, platforms={"web": {"enabled": True, "token": TOKEN}})
    await chat.start()
    try:
        async with PrefixProxy(chat.base, "/a").also("/b", chat.base) as proxy:
            yield proxy
    finally:
        await chat.stop()


async def opened(page: Any, url: str) -> str:
    """Open ``url``; the state the page settles in: "connected", or "login" when it asks for a token."""
    await page.goto(url)
    await page.wait_for_selector("body[data-state=connected], body[data-state=login]")
    return await page.evaluate("document.body.dataset.state")


async def refuse(route: Any) -> None:
    await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "no"}))


async def test_one_gateway_at_two_paths_is_one_conversation(page, tmp_path) -> None:
    async with two_paths(tmp_path) as proxy:
        assert await opened(page, f"{proxy.origin}/a/chat#token={TOKEN}") == "connected"
        await type_message(page, "hello from a")
        await page.wait_for_selector("[data-kind=reply]")
        await page.route("**/chat/api/messages", refuse)
        await type_message(page, "refused at a")
        await page.locator("[data-kind=user].failed").wait_for()
        await page.fill("#input", "half typed at a")
        # The other path, the same tab, no link: signed in, the same conversation, draft and refused message.
        assert await opened(page, f"{proxy.origin}/b/chat") == "connected"
        assert await page.input_value("#input") == "half typed at a"
        assert await page.locator("[data-kind=user] .text").all_inner_texts() == ["hello from a", "refused at a"]
        assert await page.locator("[data-kind=user].failed").count() == 1
        assert proxy.strays == []


async def test_what_a_tab_kept_under_the_pages_address_is_taken_over_once(page, tmp_path) -> None:
    async with two_paths(tmp_path) as proxy:
        await page.goto(f"{proxy.origin}/a/chat/static/chat.css")  # somewhere on the origin, to set its storage
        await page.evaluate("""(token) => {
            sessionStorage.setItem("switchboard.token@/a/chat/", token);
            localStorage.setItem("switchboard.chat@/a/chat/", "oldchat");
            sessionStorage.setItem("switchboard.draft.oldchat@/a/chat/", "half typed");
            sessionStorage.setItem("switchboard.token@/c/chat/", "another gateway's");
        }""", TOKEN)
        async with page.expect_request("**/a/chat/api/events?chat=oldchat*"):
            assert await opened(page, f"{proxy.origin}/a/chat") == "connected"  # not signed out by the upgrade
        assert await page.input_value("#input") == "half typed"
        kept = await page.evaluate("[Object.keys(sessionStorage).sort(), Object.keys(localStorage).sort()]")
        assert [[k for k in keys if "/a/chat/" in k] for keys in kept] == [[], ["switchboard.chat@/a/chat/"]]
        assert "switchboard.token@/c/chat/" in kept[0]  # what may be another gateway's is left alone
        # The page's own keys, now the gateway's: its other path finds them.
        async with page.expect_request("**/b/chat/api/events?chat=oldchat*"):
            assert await opened(page, f"{proxy.origin}/b/chat") == "connected"
        assert await page.input_value("#input") == "half typed"
