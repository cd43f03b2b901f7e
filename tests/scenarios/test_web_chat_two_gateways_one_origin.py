"""Two gateways behind one reverse proxy, under two prefixes of one origin (``/a/chat``, ``/b/chat``), in a real
headless chromium: each page keeps its own token, conversation and draft in the origin's storage. Under the same keys,
signing in to one signed the other out (its token sent to the other, refused, dropped), and what was typed in one
showed in the other's box. Keys from before they were kept apart are taken over, once: an upgrade signs nobody out."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.prefix_proxy import PrefixProxy
from tests.web_client import WebChat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKENS = {"a": "token-of-a-0123456789abcdef", "b": "token-of-b-0123456789abcdef"}


@contextlib.asynccontextmanager
async def two_gateways(tmp_path) -> AsyncIterator[PrefixProxy]:
    """Gateways ``a`` and ``b``, each with its own token, under ``/a`` and ``/b`` of one proxy."""
    chats = {name: WebChat(tmp_path / name, platforms={"web": {"enabled": True, "token": token}})
             for name, token in TOKENS.items()}
    try:
        for chat in chats.values():
            await chat.start()
        async with PrefixProxy(chats["a"].base, "/a").also("/b", chats["b"].base) as proxy:
            yield proxy
    finally:
        for chat in chats.values():
            await chat.stop()


async def opened(page: Any, url: str) -> str:
    """Open ``url``; the state the page settles in: "connected", or "login" when it asks for a token."""
    await page.goto(url)
    await page.wait_for_selector("body[data-state=connected], body[data-state=login]")
    return await page.evaluate("document.body.dataset.state")


async def test_each_gateway_keeps_its_own_token_and_draft_in_one_tab(page, tmp_path) -> None:
    async with two_gateways(tmp_path) as proxy:
        assert await opened(page, f"{proxy.origin}/a/chat#token={TOKENS['a']}") == "connected"
        await page.fill("#input", "for a only")  # typed, not sent
        assert await opened(page, f"{proxy.origin}/b/chat#token={TOKENS['b']}") == "connected"
        assert await page.input_value("#input") == ""
        await type_message(page, "hello b")
        await page.wait_for_selector("[data-kind=reply]")
        # Back to a in the same tab, without its link: still signed in, its draft where it was left.
        assert await opened(page, f"{proxy.origin}/a/chat") == "connected"
        assert await page.input_value("#input") == "for a only"
        assert await page.locator("[data-kind=user]").count() == 0  # b's conversation is b's
        assert await opened(page, f"{proxy.origin}/b/chat") == "connected"
        assert await page.locator("[data-kind=user] .text").all_inner_texts() == ["hello b"]
        assert proxy.strays == []


async def test_what_a_page_kept_before_the_upgrade_is_taken_over_once(page, tmp_path) -> None:
    async with two_gateways(tmp_path) as proxy:
        await page.goto(f"{proxy.origin}/a/chat/static/chat.css")  # somewhere on the origin, to set its storage
        await page.evaluate("""(token) => {
            sessionStorage.setItem("switchboard.token", token);
            localStorage.setItem("switchboard.chat", "oldchat");
            sessionStorage.setItem("switchboard.draft.oldchat", "half typed");
        }""", TOKENS["a"])
        async with page.expect_request("**/a/chat/api/events?chat=oldchat*"):
            assert await opened(page, f"{proxy.origin}/a/chat") == "connected"  # not signed out by the upgrade
        assert await page.input_value("#input") == "half typed"
        # The token and the draft were one page's, now a's alone; both gateways kept their chats under the one id.
        async with page.expect_request("**/b/chat/api/events?chat=oldchat*"):
            assert await opened(page, f"{proxy.origin}/b/chat") == "login"
        assert await page.input_value("#input") == ""
        assert await page.evaluate("sessionStorage.getItem('switchboard.token')") is None
