"""The web chat page behind a reverse proxy that publishes it under a path prefix and strips it
(`tests.prefix_proxy`), in a real headless chromium: at ``/sb/chat``, with or without the trailing slash, or as
``/sb/chat/static/index.html``, it loads its files, signs in from the link, sends, shows the answer and downloads a
file, every request under ``/sb/``. Absolute paths (``/chat/static/chat.js``) went to the proxy's root: a page
without its style or scripts. Every wait is for something on the page, never for time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from platforms.messages import Outbound, OutboundFile
from tests.prefix_proxy import PrefixProxy
from tests.web_client import type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "web-token-0123456789abcdef"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


@pytest.mark.parametrize("address", ["/chat?chat=c1", "/chat/?chat=c1", "/chat/static/index.html?chat=c1"])
async def test_the_chat_works_under_a_proxys_path_prefix(chat, page, tmp_path, address) -> None:
    web = await chat(platforms={"web": {"enabled": True, "token": TOKEN}})
    async with PrefixProxy(web.base, "/sb") as proxy:
        await page.goto(f"{proxy.url}{address}#token={TOKEN}")  # waits for the page's style and scripts
        assert proxy.strays == []
        assert await page.evaluate("[...document.styleSheets].every((s) => s.cssRules.length > 0)")
        await page.wait_for_selector("body[data-state=connected]")
        assert TOKEN not in page.url and page.url.startswith(f"{proxy.url}{address.split('?')[0]}")
        await type_message(page, "hello")
        reply = await page.wait_for_selector("[data-kind=reply]")
        assert (await reply.get_attribute("data-text") or "").startswith("[demo]")
        (tmp_path / "report.csv").write_bytes(b"x" * 5000)
        file = OutboundFile(str(tmp_path / "report.csv"), "report.csv", 5000)
        await web.gateway.adapters["web"].send_file(Outbound("c1", None, "the report", idempotency_key="f1"), file)
        async with page.expect_download() as downloading:
            await page.click(".has-file .file a")
        assert Path(await (await downloading.value).path()).read_bytes() == b"x" * 5000
        assert proxy.strays == []
        asked = {line.split("?")[0] for line in proxy.passed}
        assert {"GET /sb/chat/static/chat.js", "GET /sb/chat/static/chat.css", "GET /sb/chat/api/events",
                "POST /sb/chat/api/messages"} <= asked
        assert any(line.startswith("GET /sb/chat/api/files/") for line in asked)
