"""The web chat page published by a reverse proxy under another name, without a trailing slash (``/talk`` to the
gateway's ``/chat``, as nginx's ``location /talk { proxy_pass http://gateway/chat; }`` does), in a real headless
chromium. Its files are linked relative to its address: at ``/talk``, ``chat/static/chat.js`` resolved against the
proxy's root (``/chat/static/chat.js``), where nothing answers, or another gateway published there does, whose page
then showed in its place. The page goes on to ``/talk/`` instead, where every link resolves under ``/talk/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import STATIC_DIR
from tests.prefix_proxy import PrefixProxy
from tests.web_client import WebChat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "web-token-0123456789abcdef"
FILES = {path.name for path in STATIC_DIR.iterdir()}


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


@pytest.mark.parametrize(("address", "lands"), [
    ("/talk?chat=c1", "/talk/?chat=c1"), ("/talk/?chat=c1", "/talk/?chat=c1"),
    ("/talk/static/index.html?chat=c1", "/talk/static/index.html?chat=c1")])
async def test_the_chat_works_under_a_name_a_proxy_gives_it(chat, page, address, lands) -> None:
    web = await chat(platforms={"web": {"enabled": True, "token": TOKEN}})
    async with PrefixProxy(web.base, "/talk", to="/chat") as proxy:
        await page.goto(f"{proxy.origin}{address}#token={TOKEN}")
        await page.wait_for_selector("body[data-state=connected]")
        assert page.url == f"{proxy.origin}{lands}"  # the token out of the address bar, as ever
        assert await page.evaluate("[...document.styleSheets].every((s) => s.cssRules.length > 0)")
        await type_message(page, "hello")
        reply = await page.wait_for_selector("[data-kind=reply]")
        assert (await reply.get_attribute("data-text") or "").startswith("[demo]")
        # Before it went on, the browser's look-ahead asked for the files at the root (nothing there ran).
        assert {stray.split("?")[0] for stray in proxy.strays} <= {f"GET /chat/static/{name}" for name in FILES}
        asked = {line.split("?")[0] for line in proxy.passed}
        assert {"GET /talk/static/chat.js", "GET /talk/static/chat.css", "GET /talk/api/events",
                "POST /talk/api/messages"} <= asked


async def test_another_gateway_at_the_proxys_root_is_not_the_one_the_page_talks_to(chat, page, tmp_path) -> None:
    web = await chat(platforms={"web": {"enabled": True, "token": TOKEN}})
    other = await WebChat(tmp_path / "other").start()  # no token, as a gateway on loopback needs none
    try:
        async with PrefixProxy(web.base, "/talk", to="/chat").also("", other.base) as proxy:
            await page.goto(f"{proxy.origin}/talk?chat=c1#token={TOKEN}")
            await page.wait_for_selector("body[data-state=connected]")
            await type_message(page, "hello")
            await page.wait_for_selector("[data-kind=reply]")
            assert [line for line in proxy.passed if line.startswith(("GET /chat/api/", "POST /chat/api/"))] == []
            assert {"GET /talk/api/events", "POST /talk/api/messages"} <= {line.split("?")[0] for line in proxy.passed}
    finally:
        await other.stop()


async def test_the_page_at_the_gateways_own_name_stays_where_it_was_opened(chat, page) -> None:
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    assert page.url == f"{web.base}/chat?chat=c1"
